// The client against a local server: store, retrieve, reflect, review, context, forget.
//   make run                      # in the repository: hindsight serve on 127.0.0.1:8080
//   node examples/basic.mjs       # HINDSIGHT_URL / HINDSIGHT_API_KEY if not the defaults
import { Hindsight, NotFoundError } from "@hindsight-memory/client";

const memory = new Hindsight();
const user = `example-${Date.now()}`;

await memory.store(user, "I am allergic to peanuts", { session_id: "chat-1", category: "constraint" });
await memory.storeMany(user, ["I live in Porto", "My sister Mia visits in May"], {
  onProgress: ({ done, total }) => console.log(`stored ${done}/${total}`),
});

const page = await memory.retrieve(user, "what can I not eat?", { top_k: 3 });
for (const hit of page.results) console.log(`${hit.score.toFixed(3)} ${hit.content}`);

const { pending } = await memory.reflect(user); // the rule-based reflector needs no model
for (const fact of pending) await memory.approve(fact.memory_id);
console.log(`facts approved: ${pending.map((f) => f.content).join(" | ")}`);

const { context } = await memory.context(user, "chat-1", "dinner ideas");
console.log(`context block:\n${context}`);

await memory.eraseUser(user);
try {
  await memory.get(page.results[0].memory_id);
} catch (error) {
  if (error instanceof NotFoundError) console.log(`erased: ${error.status} ${error.message}`);
}
