// Vercel AI SDK: memory tools and the context block in the system prompt, with no model key.
// The model is the AI SDK's MockLanguageModelV3 (ai/test) playing a scripted part: in the
// first conversation it saves what the user said, in the second it looks it up and answers
// from what the tool returned. Swap in a real model (e.g. openai("gpt-4.1-mini")) and
// drop the script: the tools and the system prompt stay as they are.
//   make run; node examples/ai-sdk.mjs
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Hindsight } from "@hindsight-memory/client";
import { memorySystem, memoryTools } from "@hindsight-memory/client/ai";

const memory = new Hindsight();
const userId = `ai-example-${Date.now()}`;
const usage = { inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 0, text: 0, reasoning: 0 } };
const callTool = (toolName, input) => ({
  content: [{ type: "tool-call", toolCallId: `${toolName}-1`, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: "tool-calls", raw: undefined },
  usage,
  warnings: [],
});
// the scripted model's last step answers with the last tool result it was given
const answerFromTool = async ({ prompt }) => {
  const result = prompt.flatMap((m) => (m.role === "tool" ? m.content : [])).at(-1);
  return { content: [{ type: "text", text: `From memory: ${result.output.value}` }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
};

async function chat(sessionId, prompt, script) {
  const steps = [...script];
  const model = new MockLanguageModelV3({ doGenerate: async (options) => (typeof steps[0] === "function" ? steps.shift()(options) : steps.shift()) });
  const { text, steps: taken } = await generateText({
    model,
    system: await memorySystem("You are a helpful cook.", { client: memory, userId, sessionId, query: prompt }),
    tools: memoryTools({ client: memory, userId, sessionId }),
    stopWhen: stepCountIs(4),
    prompt,
  });
  for (const step of taken) for (const r of step.toolResults) console.log(`  ${r.toolName} -> ${r.output}`);
  console.log(`${sessionId}: ${text}`);
}

await chat("chat-1", "I'm allergic to peanuts.", [
  callTool("memory_store", { content: "The user is allergic to peanuts", category: "constraint" }),
  answerFromTool,
]);
await chat("chat-2", "What should I cook tonight?", [
  callTool("memory_retrieve", { query: "food allergies" }),
  answerFromTool,
]);
await memory.eraseUser(userId);
