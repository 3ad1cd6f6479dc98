// LangGraph.js: a graph whose store is Hindsight. The node saves what the user says under
// ["memories", user_id] and recalls by meaning, across threads (no model needed: the node
// is plain code; an agent's model node would read config.store the same way).
//   make run; node examples/langgraph.mjs
import { Annotation, StateGraph } from "@langchain/langgraph";
import { Hindsight } from "@hindsight-memory/client";
import { HindsightStore } from "@hindsight-memory/client/langgraph";

const client = new Hindsight();
const store = new HindsightStore({ client, prefix: ["memories"] });
const State = Annotation.Root({ message: Annotation(), recalled: Annotation() });

const graph = new StateGraph(State)
  .addNode("remember", async (state, config) => {
    const namespace = ["memories", config.configurable.user_id];
    const recalled = await config.store.search(namespace, { query: state.message, limit: 2 });
    if (!state.message.endsWith("?")) {
      await config.store.put(namespace, `said-${Date.now()}`, { content: state.message });
    }
    return { recalled: recalled.map((item) => item.value.content) };
  })
  .addEdge("__start__", "remember")
  .compile({ store });

const userId = `lg-example-${Date.now()}`;
await graph.invoke({ message: "I moved to Porto last year" }, { configurable: { user_id: userId, thread_id: "t1" } });
await graph.invoke({ message: "My favourite food is bacalhau" }, { configurable: { user_id: userId, thread_id: "t2" } });
const { recalled } = await graph.invoke(
  { message: "Where do I live?" },
  { configurable: { user_id: userId, thread_id: "t3" } },
);
console.log(`recalled in a new thread: ${recalled.join(" | ")}`);
console.log(await store.listNamespaces({ prefix: ["memories", userId] }));
await client.eraseUser(userId);
