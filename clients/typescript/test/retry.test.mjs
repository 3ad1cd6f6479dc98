// Retries, timeouts, aborts and error mapping against a scripted loopback server: each test
// says what the server answers, attempt by attempt, and checks what the client did.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import {
  APIError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  Hindsight,
  HindsightConnectionError,
  HindsightError,
  HindsightTimeoutError,
  InvalidRequestError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  RateLimitedError,
  ServerError,
  UnavailableError,
} from "../dist/index.js";

let server;
let url;
let script = []; // one handler per attempt; the last one repeats
const seen = []; // {method, url, headers, body} of every request

before(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      const handler = script[Math.min(seen.length - 1, script.length - 1)];
      handler(req, res);
    });
  });
  server.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  url = `http://127.0.0.1:${server.address().port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

function answer(status, body, headers = {}) {
  return (_req, res) => {
    res.writeHead(status, { "Content-Type": "application/json", ...headers });
    res.end(typeof body === "string" ? body : JSON.stringify(body));
  };
}
const ok = (body = { status: "success", memory_id: "mem_1" }) => answer(200, body);
const fail = (status, message = "what to do", headers) =>
  answer(status, { status: "error", message }, headers);
const hangUp = () => (req) => req.socket.destroy(); // the request arrived; its answer is lost
const silence = () => () => {}; // never answers

function client(options = {}) {
  return new Hindsight({ baseUrl: url, apiKey: "k", backoff: 10, maxBackoff: 20, ...options });
}
function expect(...handlers) {
  script = handlers;
  seen.length = 0;
}
const PAGE = { status: "success", results: [], has_more: false, next_cursor: null, partial: false, query_time: null, unknown_names: [] };

test("503 then 200: retried, the second answer wins", async () => {
  expect(fail(503), ok());
  const result = await client().store("u1", "hello");
  assert.equal(result.memory_id, "mem_1");
  assert.equal(seen.length, 2);
});

test("every attempt of one store sends the same Idempotency-Key; another store another key", async () => {
  expect(fail(503), hangUp(), fail(429), ok());
  await client().store("u1", "hello");
  const keys = seen.map((r) => r.headers["idempotency-key"]);
  assert.equal(keys.length, 4);
  assert.match(keys[0], /^hindsight-ts-[0-9a-f]{32}$/);
  assert.equal(new Set(keys).size, 1);
  expect(ok());
  await client().store("u1", "hello");
  assert.notEqual(seen[0].headers["idempotency-key"], keys[0]);
  expect(ok());
  await client().store("u1", "hello", { idempotencyKey: "mine-1" });
  assert.equal(seen[0].headers["idempotency-key"], "mine-1");
  assert.equal(JSON.parse(seen[0].body).idempotencyKey, undefined);
});

test("Retry-After is honoured (seconds and HTTP date)", async () => {
  expect(fail(429, "slow down", { "Retry-After": "0.3" }), ok());
  let start = Date.now();
  await client().store("u1", "x");
  assert.ok(Date.now() - start >= 290, `waited ${Date.now() - start} ms`);
  const date = new Date(Date.now() + 1500).toUTCString(); // second precision: 0.5-1.5 s
  expect(fail(503, "down", { "Retry-After": date }), ok());
  start = Date.now();
  await client().health();
  assert.ok(Date.now() - start >= 400, `waited ${Date.now() - start} ms`);
});

test("gives up after maxRetries with the last error", async () => {
  expect(fail(503, "the index is down; retry in a minute"));
  await assert.rejects(client({ maxRetries: 2 }).health(), (error) => {
    assert.ok(error instanceof UnavailableError && error instanceof ServerError);
    assert.equal(error.status, 503);
    assert.equal(error.message, "the index is down; retry in a minute");
    return true;
  });
  assert.equal(seen.length, 3);
});

test("502 and lost answers: retried for calls safe to repeat, not for reflect", async () => {
  expect(fail(502), ok(PAGE));
  await client().retrieve("u1", "q");
  assert.equal(seen.length, 2);
  expect(fail(502), ok());
  await assert.rejects(client().reflect("u1"), (e) => e instanceof ServerError && e.status === 502);
  assert.equal(seen.length, 1);
  expect(hangUp(), ok());
  await assert.rejects(client().reflect("u1"), HindsightConnectionError);
  assert.equal(seen.length, 1);
  expect(hangUp(), ok());
  await client().store("u1", "x");
  assert.equal(seen.length, 2);
});

test("409 is retried only when the server says when (a store still in progress)", async () => {
  expect(fail(409, "still being processed", { "Retry-After": "0" }), ok());
  await client().store("u1", "x");
  assert.equal(seen.length, 2);
  expect(fail(409, "another embedding model"), ok());
  await assert.rejects(client().store("u1", "x"), ConflictError);
  assert.equal(seen.length, 1);
});

test("a refused connection is retried for any call, then a connection error", async () => {
  const closed = createServer();
  closed.listen(0, "127.0.0.1");
  await new Promise((resolve) => closed.once("listening", resolve));
  const port = closed.address().port;
  closed.close();
  const memory = new Hindsight({ baseUrl: `http://127.0.0.1:${port}`, backoff: 10, maxRetries: 2 });
  await assert.rejects(memory.reflect("u1"), (error) => {
    assert.ok(error instanceof HindsightConnectionError);
    assert.equal(error.status, undefined);
    assert.match(error.message, /cannot reach POST .*\/v1\/reflect \(ECONNREFUSED\)/);
    return true;
  });
});

test("a timeout on every call: each attempt is cut, then HindsightTimeoutError", async () => {
  expect(silence());
  const start = Date.now();
  await assert.rejects(client({ maxRetries: 1 }).retrieve("u1", "q", { timeout: 200 }), (error) => {
    assert.ok(error instanceof HindsightTimeoutError && error instanceof HindsightConnectionError);
    assert.match(error.message, /within 200 ms/);
    return true;
  });
  assert.equal(seen.length, 2);
  assert.ok(Date.now() - start < 2000);
  expect(silence());
  await assert.rejects(client({ timeout: 150, maxRetries: 0 }).health(), HindsightTimeoutError);
});

test("an AbortSignal cancels the call and its retries", async () => {
  expect(silence());
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  await assert.rejects(client().retrieve("u1", "q", { signal: controller.signal }), { name: "AbortError" });
  assert.equal(seen.length, 1);
  expect(fail(503));
  const waiting = new AbortController();
  const call = client({ backoff: 5_000, maxBackoff: 5_000 }).health({ signal: waiting.signal });
  setTimeout(() => waiting.abort(new Error("caller gave up")), 100);
  await assert.rejects(call, /caller gave up/); // during the backoff, not after it
  assert.equal(seen.length, 1);
  await assert.rejects(client().health({ signal: AbortSignal.abort() }), { name: "AbortError" });
});

test("every status is its error class, carrying the server's message and status", async () => {
  const classes = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: InvalidRequestError,
    429: RateLimitedError,
    500: ServerError,
    503: UnavailableError,
    418: APIError,
  };
  for (const [status, cls] of Object.entries(classes)) {
    expect(fail(Number(status), `message ${status}`));
    await assert.rejects(client({ maxRetries: 0 }).get("mem_1"), (error) => {
      assert.equal(error.constructor, cls);
      assert.ok(error instanceof HindsightError);
      assert.equal(error.status, Number(status));
      assert.equal(error.message, `message ${status}`);
      assert.equal(error.name, cls.name);
      return true;
    });
  }
  expect(answer(500, "<html>proxy error</html>"));
  await assert.rejects(client({ maxRetries: 0 }).get("mem_1"), { message: "<html>proxy error</html>" });
  expect(answer(200, "not json"));
  await assert.rejects(client().get("mem_1"), (e) => e instanceof HindsightError && /not JSON/.test(e.message));
});

test("the request: ids escaped in paths, filters in the query, the key as a Bearer token", async () => {
  expect(ok({ status: "success", memory: { memory_id: "a/b" } }));
  await client().get("a/b ?");
  assert.equal(seen[0].url, "/v1/memories/a%2Fb%20%3F");
  assert.equal(seen[0].headers.authorization, "Bearer k");
  expect(ok({ ...PAGE, results: [] }));
  const since = new Date("2026-01-02T03:04:05Z");
  await client().listMemories("u 1", { kind: "semantic", since, include_expired: true, limit: 5 });
  assert.equal(
    seen[0].url,
    "/v1/users/u%201/memories?kind=semantic&since=2026-01-02T03%3A04%3A05.000Z&include_expired=true&limit=5",
  );
  expect(ok(PAGE));
  await client().retrieve("u1", "q", { occurred_at: undefined, since, signal: undefined, timeout: 5000, top_k: 3 });
  assert.deepEqual(JSON.parse(seen[0].body), { user_id: "u1", query: "q", since: since.toISOString(), top_k: 3 });
  await assert.rejects(client().get(""), /memoryId must be a non-empty string/);
  await assert.rejects(client().storeDocument("u1", "a.md", {}), /text or its bytes/);
  assert.throws(() => new Hindsight({ baseUrl: "localhost:8080" }), /must start with http/);
});

test("iterRetrieve follows next_cursor until has_more is false, at most limit", async () => {
  const page = (ids, next) => ok({ ...PAGE, results: ids.map((memory_id) => ({ memory_id })), has_more: !!next, next_cursor: next });
  expect(page(["a", "b"], "c1"), page(["c", "d"], "c2"), page(["e"], null));
  const ids = [];
  for await (const hit of client().iterRetrieve("u1", "q", { top_k: 2 })) ids.push(hit.memory_id);
  assert.deepEqual(ids, ["a", "b", "c", "d", "e"]);
  assert.deepEqual(seen.map((r) => JSON.parse(r.body).cursor), [undefined, "c1", "c2"]);
  expect(page(["a", "b"], "c1"), page(["c", "d"], "c2"));
  const some = [];
  for await (const hit of client().iterRetrieve("u1", "q", { limit: 3 })) some.push(hit.memory_id);
  assert.deepEqual(some, ["a", "b", "c"]);
  assert.equal(seen.length, 2);
});
