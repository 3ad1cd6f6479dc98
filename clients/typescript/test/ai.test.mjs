// The Vercel AI SDK tools and system-prompt helper, driven by the SDK's own generateText with
// a scripted model (ai/test's MockLanguageModelV3: one answer per step) against a real server.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Hindsight } from "../dist/index.js";
import { contextBlock, memorySystem, memoryTools } from "../dist/ai.js";
import { KEY, newUser, sharedServer } from "./server.mjs";

let server;
let memory;
before(async () => {
  server = await sharedServer();
  memory = new Hindsight({ baseUrl: server.url, apiKey: KEY });
});
after(() => server.stop());

const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } };
const call = (toolName, input, id = toolName) => ({
  content: [{ type: "tool-call", toolCallId: id, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: "tool-calls", raw: "tool_calls" },
  usage,
  warnings: [],
});
const say = (text) => ({ content: [{ type: "text", text }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] });

function toolResults(result) {
  return result.steps.flatMap((step) => step.toolResults.map((r) => [r.toolName, r.output]));
}

test("a scripted agent stores, retrieves and forgets through the tools, as its user only", async () => {
  const user = newUser("ai");
  const other = newUser("ai-other");
  const theirs = await memory.store(other, "Bob's bank PIN is 4711");
  const model = new MockLanguageModelV3({
    doGenerate: [
      call("memory_store", { content: "The user is allergic to peanuts", category: "constraint" }),
      call("memory_retrieve", { query: "food allergies", top_k: 3 }),
      call("memory_forget", { memory_id: theirs.memory_id }),
      call("memory_store", { content: "something", category: "@@@" }),
      say("Noted: no peanuts."),
    ],
  });
  const result = await generateText({
    model,
    tools: memoryTools({ client: memory, userId: user, sessionId: "chat-1" }),
    stopWhen: stepCountIs(6),
    prompt: "I'm allergic to peanuts, remember that.",
  });
  assert.equal(result.text, "Noted: no peanuts.");
  const [stored, retrieved, forgot, refused] = toolResults(result);
  assert.match(stored[1], /^Remembered \(memory mem_\w+\)\.$/);
  const memoryId = /mem_\w+/.exec(stored[1])[0];
  assert.match(retrieved[1], new RegExp(`^1\\. \\[${memoryId}\\] \\(event, constraint, \\d{4}-\\d\\d-\\d\\d\\) The user is allergic to peanuts`));
  assert.match(forgot[1], /^Hindsight: no memory mem_\w+ for this user/);
  assert.match(refused[1], /^Hindsight refused the arguments: .*category/);
  // what the model saw of the tools: names, descriptions, parameter help
  const offered = model.doGenerateCalls[0].tools.map((t) => t.name).sort();
  assert.deepEqual(offered, ["memory_forget", "memory_retrieve", "memory_store"]);
  const storeTool = model.doGenerateCalls[0].tools.find((t) => t.name === "memory_store");
  assert.match(storeTool.inputSchema.properties.content.description, /self-contained/);

  const kept = await memory.get(memoryId);
  assert.equal(kept.user_id, user);
  assert.equal(kept.session_id, "chat-1");
  assert.equal(kept.category, "constraint");
  assert.equal((await memory.get(theirs.memory_id)).content, "Bob's bank PIN is 4711"); // not forgotten
});

test("memory_forget forgets the user's own memory", async () => {
  const user = newUser("ai");
  const { memory_id } = await memory.store(user, "The user's gym is closed on Sundays");
  const result = await generateText({
    model: new MockLanguageModelV3({ doGenerate: [call("memory_forget", { memory_id }), say("Forgotten.")] }),
    tools: memoryTools({ client: memory, userId: user }),
    stopWhen: stepCountIs(3),
    prompt: "Forget the gym thing.",
  });
  assert.deepEqual(toolResults(result), [["memory_forget", `Forgot memory ${memory_id}.`]]);
  await assert.rejects(memory.get(memory_id), { status: 404 });
});

test("memorySystem puts the user's approved facts into the system prompt the model gets", async () => {
  const user = newUser("ai");
  await memory.store(user, "I am allergic to peanuts", { session_id: "chat-2" });
  const { pending } = await memory.reflect(user);
  await memory.approve(pending[0].memory_id);
  const block = await contextBlock({ client: memory, userId: user, sessionId: "chat-2", query: "dinner ideas" });
  assert.ok(block.includes(pending[0].content), block);
  const model = new MockLanguageModelV3({ doGenerate: [say("Try a peanut-free curry.")] });
  const system = await memorySystem("You are a helpful cook.", { client: memory, userId: user, sessionId: "chat-2", query: "dinner ideas" });
  assert.ok(system.startsWith("You are a helpful cook.\n\n"));
  await generateText({ model, system, prompt: "dinner ideas?" });
  const sent = model.doGenerateCalls[0].prompt.find((m) => m.role === "system");
  assert.ok(sent.content.includes(pending[0].content), sent.content);
  // a user with no memories: the prompt alone
  assert.equal(await memorySystem("Be brief.", { client: memory, userId: newUser("empty"), sessionId: "s" }), "Be brief.");
  assert.throws(() => memoryTools({ client: memory, userId: "" }), /pass userId/);
});
