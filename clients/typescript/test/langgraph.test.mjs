// HindsightStore as a LangGraph.js store: the BaseStore calls against a real server, the
// namespace mapping (users and scopes), and a compiled graph whose node reads and writes it.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Annotation, StateGraph } from "@langchain/langgraph";
import { BaseStore, InvalidNamespaceError } from "@langchain/langgraph-checkpoint";
import { Hindsight } from "../dist/index.js";
import { HindsightStore, itemText, keySession, matchesFilter } from "../dist/langgraph.js";
import { KEY, newUser, sharedServer } from "./server.mjs";

let server;
let memory;
let store;
before(async () => {
  server = await sharedServer();
  memory = new Hindsight({ baseUrl: server.url, apiKey: KEY });
  store = new HindsightStore({ client: memory, prefix: ["memories"] });
});
after(() => server.stop());

test("put, get, replace, search (by meaning, by filter), delete", async () => {
  const user = newUser("lg");
  const ns = ["memories", user];
  assert.ok(store instanceof BaseStore);
  await store.put(ns, "diet", { content: "The user is vegetarian", category: "preference", since: 2019 });
  const item = await store.get(ns, "diet");
  assert.deepEqual(item.value, { content: "The user is vegetarian", category: "preference", since: 2019 });
  assert.deepEqual(item.namespace, ns);
  assert.equal(item.key, "diet");
  assert.ok(item.createdAt instanceof Date);

  await store.put(ns, "diet", { content: "The user is vegan", category: "preference", since: 2023 });
  const replaced = await store.get(ns, "diet");
  assert.equal(replaced.value.content, "The user is vegan");
  assert.equal(replaced.createdAt.getTime(), item.createdAt.getTime()); // first put's time kept
  const listed = (await memory.listMemories(user)).results;
  assert.equal(listed.length, 1, "the replaced memory is gone");
  assert.equal(listed[0].category, "preference");

  await store.put(ns, "trip", { text: "Flying to Lisbon on May 3rd", days: 5 });
  await store.put([...ns, "work"], "desk", { content: "Works from the Berlin office on Tuesdays" });
  const hits = await store.search(["memories", user], { query: "what does the user eat?", limit: 2 });
  assert.equal(hits[0].key, "diet");
  assert.equal(typeof hits[0].score, "number");
  const work = await store.search(["memories", user, "work"], { query: "office", limit: 5 });
  assert.deepEqual(work.map((h) => [h.key, h.namespace.at(-1)]), [["desk", "work"]]);
  const long = await store.search(ns, { filter: { days: { $gte: 3 } } });
  assert.deepEqual(long.map((h) => h.key), ["trip"]);
  assert.deepEqual((await store.search(ns, { filter: { since: 2023 } })).map((h) => h.key), ["diet"]);

  const spaces = await store.listNamespaces({ prefix: ["memories", user] });
  assert.deepEqual(spaces, [["memories", user], ["memories", user, "work"]]);

  await store.delete(ns, "trip");
  assert.equal(await store.get(ns, "trip"), null);
  assert.equal(await store.get(ns, "never-put"), null);
});

test("memories the store did not write are items too: read and deleted by memory id", async () => {
  const user = newUser("lg");
  const { memory_id } = await memory.store(user, "The user's sister is called Mia", { category: "profile" });
  const ns = ["memories", user];
  const hits = await store.search(ns, { query: "sister" });
  assert.equal(hits[0].key, memory_id);
  assert.equal(hits[0].value.content, "The user's sister is called Mia");
  assert.equal(hits[0].value.kind, "episodic");
  assert.equal((await store.get(ns, memory_id)).value.category, "profile");
  assert.equal(await store.get(["memories", newUser("lg")], memory_id), null); // another user's
  await store.delete(ns, memory_id);
  await assert.rejects(memory.get(memory_id), { status: 404 });
});

test("namespaces that name no user, or too much, are refused with what to give", async () => {
  await assert.rejects(store.get(["memories"], "k"), (e) => e instanceof InvalidNamespaceError && /names no user/.test(e.message));
  await assert.rejects(store.get(["other", "u"], "k"), /must start with this store's prefix/);
  await assert.rejects(store.get(["memories", "u", "s", "deep"], "k"), /too deep/);
  await assert.rejects(store.listNamespaces({}), /one user at a time/);
});

test("the helpers: the Python store's session digest, item text, filter operators", async () => {
  // the same digests as hindsight_client.langgraph.key_session, so both languages share items
  assert.equal(await keySession(["memories", "用户-1", "travel"], "prefs 🎒"), "kv-376764bcfe05a6003c5453f11bc3e5617f4b4406");
  assert.equal(await keySession(["u1"], "k"), "kv-2f7fc09b6c20d7f7f9da69ce4092676a6b767eaa");
  assert.equal(itemText({ a: { b: "deep text" }, content: "x" }, ["a.b"]), "deep text");
  assert.equal(itemText({ memory: "m" }), "m");
  assert.equal(itemText({ n: 1 }), '{"n":1}');
  assert.ok(matchesFilter({ n: 5, tags: ["a"] }, { n: { $gt: 4, $lte: 5 }, tags: ["a"] }));
  assert.ok(!matchesFilter({ n: 5 }, { n: { $ne: 5 } }));
  assert.ok(!matchesFilter({ n: "x" }, { n: { $gt: 1 } }));
  assert.throws(() => matchesFilter({ n: 1 }, { n: { $in: [1] } }), /unsupported filter operator/);
});

test("a compiled LangGraph graph remembers across threads through the store", async () => {
  const user = newUser("lg");
  const State = Annotation.Root({ said: Annotation(), recalled: Annotation() });
  const graph = new StateGraph(State)
    .addNode("remember", async (state, config) => {
      const ns = ["memories", config.configurable.user_id];
      if (state.said) await config.store.put(ns, `note-${config.configurable.thread_id}`, { content: state.said });
      const hits = await config.store.search(ns, { query: "where does the user live?", limit: 1 });
      return { recalled: hits[0]?.value.content ?? null };
    })
    .addEdge("__start__", "remember")
    .compile({ store });
  await graph.invoke({ said: "I moved to Porto last year" }, { configurable: { user_id: user, thread_id: "t1" } });
  const later = await graph.invoke({ said: null }, { configurable: { user_id: user, thread_id: "t2" } });
  assert.equal(later.recalled, "I moved to Porto last year");
});
