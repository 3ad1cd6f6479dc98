// A retried store is stored once, even when the server was killed and restarted between the
// attempts: a proxy between client and server lets the first store through, then kills the
// server (SIGKILL) and drops the answer; the client retries with the same Idempotency-Key
// (502s from the proxy while the server is down) and, once a new server runs on the same
// data directory, gets the first answer back instead of a second memory.
import assert from "node:assert/strict";
import { createServer, request } from "node:http";
import { after, test } from "node:test";
import { Hindsight } from "../dist/index.js";
import { KEY, newUser, startServer } from "./server.mjs";

let backend;
let proxy;
after(async () => {
  proxy?.closeAllConnections();
  proxy?.close();
  await backend?.stop();
});

/** A proxy to `target()`; `onAnswer(req, res, upstream)` sees each answer first. */
function startProxy(target, onAnswer) {
  const seen = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, key: req.headers["idempotency-key"] });
      const upstream = request(
        { host: "127.0.0.1", port: target().port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          const body = [];
          answer.on("data", (c) => body.push(c));
          answer.on("end", () => {
            seen.at(-1).replayed = answer.headers["idempotent-replayed"];
            onAnswer(req, res, { status: answer.statusCode, headers: answer.headers, body: Buffer.concat(body) });
          });
        },
      );
      upstream.on("error", () => {
        res.writeHead(502, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ status: "error", message: "bad gateway: the server is down" }));
      });
      upstream.end(Buffer.concat(chunks));
    });
  });
  return { server, seen };
}

test("a store retried across a server kill and restart is stored once", async () => {
  backend = await startServer();
  const dataDir = backend.dataDir;
  let restarted;
  let killedOnce = false;
  const { server, seen } = startProxy(
    () => backend,
    (req, res, answer) => {
      if (req.url === "/v1/memories" && !killedOnce) {
        killedOnce = true;
        // the server stored it and answered; the answer never reaches the client
        restarted = backend.kill().then(async () => {
          res.socket.destroy();
          backend = await startServer({ dataDir });
        });
        return;
      }
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    },
  );
  proxy = server;
  proxy.listen(0, "127.0.0.1");
  await new Promise((resolve) => proxy.once("listening", resolve));
  const memory = new Hindsight({
    baseUrl: `http://127.0.0.1:${proxy.address().port}`,
    apiKey: KEY,
    maxRetries: 200,
    backoff: 250,
    maxBackoff: 500,
  });

  const user = newUser("restart");
  const result = await memory.store(user, "The user's passport expires in March 2031", { category: "profile" });
  await restarted;
  const stores = seen.filter((r) => r.url === "/v1/memories");
  assert.ok(stores.length >= 2, `the store was sent ${stores.length} times`);
  assert.equal(new Set(stores.map((r) => r.key)).size, 1, "one Idempotency-Key for every attempt");
  assert.equal(result.status, "success"); // the first answer, replayed
  assert.equal(stores.at(-1).replayed, "true");
  const listed = await memory.listMemories(user);
  assert.deepEqual(listed.results.map((m) => m.memory_id), [result.memory_id]);

  // the key is what made it one: the same store under a new key is a second request (the
  // dedup window then answers "skipped" with the same memory, still one memory)
  const fresh = await memory.store(user, "The user's passport expires in March 2031", { category: "profile" });
  assert.equal(fresh.status, "skipped");
  assert.equal(fresh.memory_id, result.memory_id);
  assert.equal((await memory.listMemories(user)).results.length, 1);
});
