// Writes kept as jobs (`Prefer: respond-async`, `GET /v1/jobs/{job_id}`) against a real
// `hindsight serve`: a job followed to its result with its progress, a job that fails with
// the server's reason, an unknown job, aborting and timing out a wait, long content sent as
// a job by default, a 202 the caller did not ask for, and a server that keeps no jobs.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  ASYNC_CHARS,
  HindsightTimeoutError,
  Hindsight,
  InvalidRequestError,
  Job,
  JobFailedError,
  NotFoundError,
} from "../dist/index.js";
import { KEY, OTHER_KEY, STRICT_KEY, newUser, sharedServer } from "./server.mjs";

let server;
let memory;
before(async () => {
  server = await sharedServer();
  memory = new Hindsight({ baseUrl: server.url, apiKey: KEY });
});
after(() => server.stop());

/** About `chars` characters of distinct sentences (each chunk a text of its own to embed). */
function longText(chars, topic = "garden") {
  const parts = [];
  let length = 0;
  for (let i = 0; length < chars; i++) {
    const sentence = `Entry ${i} of the ${topic} log: row ${i % 37} got water and ${i % 11} seedlings were moved. `;
    parts.push(sentence);
    length += sentence.length;
  }
  return parts.join("");
}

/** A client whose requests are recorded: method, path, Prefer header and answer status. */
function recorded(options = {}) {
  const seen = [];
  const client = new Hindsight({
    baseUrl: server.url,
    apiKey: KEY,
    ...options,
    fetch: async (input, init) => {
      const headers = new Headers(init?.headers);
      const response = await fetch(input, init);
      seen.push({
        method: init?.method ?? "GET",
        path: new URL(String(input)).pathname,
        prefer: headers.get("Prefer"),
        status: response.status,
      });
      return response;
    },
  });
  return { client, seen };
}

test("store { wait: false }: a Job at once, followed to the stored memory with its progress", async () => {
  const user = newUser("job");
  const content = longText(6_000);
  const job = await memory.store(user, content, { wait: false, category: "event" });
  assert.ok(job instanceof Job);
  assert.match(job.jobId, /^job_/);
  const status = await memory.jobStatus(job.jobId);
  assert.equal(status.kind, "store_memory");
  assert.ok(["pending", "running", "succeeded"].includes(status.state), status.state);

  const progress = [];
  const result = await job.wait({ pollIntervalMs: 50, onProgress: (p) => progress.push(p) });
  assert.equal(result.status, "success");
  assert.match(result.memory_id, /^mem_/);
  const last = progress.at(-1);
  assert.equal(last.state, "succeeded");
  assert.ok(last.total >= 5, `a 6,000-character memory is several chunks, got ${last.total}`);
  assert.equal(last.done, last.total);
  // every event is a change, and the count never goes back
  for (let i = 1; i < progress.length; i++) {
    const [a, b] = [progress[i - 1], progress[i]];
    assert.ok(a.done !== b.done || a.total !== b.total || a.state !== b.state, "an unchanged reading was told");
    assert.ok(b.done >= a.done, "progress went back");
  }
  assert.ok(
    progress.some((p) => p.state === "running" && p.total > 0 && p.done < p.total),
    `the job was seen part-way: ${JSON.stringify(progress.map((p) => [p.done, p.total, p.state]))}`,
  );
  assert.equal(last.job.result_status, 201);
  assert.equal(job.finished, true);
  assert.equal((await job.status()).state, "succeeded"); // no request once finished
  assert.deepEqual(await job.wait(), result);

  const stored = await memory.get(result.memory_id);
  assert.equal(stored.content, content);
  assert.equal(stored.category, "event");
  const found = await memory.retrieve(user, "which row got water in the garden log", { top_k: 3 });
  assert.ok(found.results.some((r) => r.memory_id === result.memory_id), "searchable once succeeded");
});

test("a job that fails: JobFailedError with the server's reason, nothing stored", async () => {
  const strict = new Hindsight({ baseUrl: server.url, apiKey: STRICT_KEY });
  const user = newUser("fail");
  const secret = "my deploy key is AKIAIOSFODNN7EXAMPLE, keep it";
  // the secrets check runs in the job: the write is accepted, then fails
  const job = await strict.store(user, secret, { wait: false });
  assert.match(job.jobId, /^job_/);
  const error = await job.wait({ pollIntervalMs: 50 }).then(
    () => assert.fail("the job should have failed"),
    (e) => e,
  );
  assert.ok(error instanceof JobFailedError, String(error));
  assert.equal(error.name, "JobFailedError");
  assert.equal(error.status, undefined);
  assert.equal(error.jobId, job.jobId);
  assert.equal(error.job.state, "failed");
  assert.match(error.message, /secret/);
  assert.equal(error.message, error.job.error);
  assert.equal((await strict.listMemories(user)).results.length, 0);
  // a store that waits (the default) follows a job the server made of it to the same end
  const asking = new Hindsight({ baseUrl: server.url, apiKey: STRICT_KEY, headers: { Prefer: "respond-async" } });
  await assert.rejects(asking.store(user, secret), (e) => e instanceof JobFailedError && /secret/.test(e.message));
  // sent without a job, the same store is refused at once
  await assert.rejects(strict.store(user, secret), (e) => e instanceof InvalidRequestError && /secret/.test(e.message));
});

test("jobStatus: an unknown id, another tenant's job and a malformed id are typed errors", async () => {
  await assert.rejects(memory.jobStatus("job_00000000000000000000000000"), (e) => {
    assert.ok(e instanceof NotFoundError);
    assert.equal(e.status, 404);
    assert.match(e.message, /no job/);
    return true;
  });
  const job = await memory.store(newUser("mine"), "a short note about tea", { wait: false });
  const other = new Hindsight({ baseUrl: server.url, apiKey: OTHER_KEY });
  await assert.rejects(other.jobStatus(job.jobId), NotFoundError);
  await assert.rejects(memory.jobStatus("bad id!"), InvalidRequestError);
  await assert.rejects(memory.jobStatus(""), /jobId must be a non-empty string/);
  await job.wait({ pollIntervalMs: 50 });
});

test("abort and timeout stop the wait, not the job; an aborted wait is resumed", async () => {
  const user = newUser("abort");
  const job = await memory.store(user, longText(6_000, "kitchen"), { wait: false });

  const controller = new AbortController();
  const told = [];
  const aborted = job.wait({
    pollIntervalMs: 50,
    signal: controller.signal,
    onProgress: (p) => {
      told.push(p);
      controller.abort();
    },
  });
  await assert.rejects(aborted, (e) => e.name === "AbortError");
  assert.equal(told.length, 1, "nothing is told after the abort");

  const reason = new Error("the user closed the tab");
  await assert.rejects(job.wait({ signal: AbortSignal.abort(reason) }), (e) => e === reason);
  if (!job.finished) {
    await assert.rejects(job.wait({ timeoutMs: 0, pollIntervalMs: 50 }), (e) => {
      assert.ok(e instanceof HindsightTimeoutError);
      assert.match(e.message, new RegExp(`job ${job.jobId} is still (pending|running)`));
      return true;
    });
  }
  await assert.rejects(job.wait({ pollIntervalMs: -1 }), /pollIntervalMs must be/);

  const result = await job.wait({ pollIntervalMs: 50 });
  assert.equal(result.status, "success");
  assert.equal((await memory.get(result.memory_id)).user_id, user);
});

test("content over 20,000 characters is sent as a job and waited for by default", async () => {
  const { client, seen } = recorded();
  const user = newUser("long");
  const content = longText(ASYNC_CHARS + 500, "library");
  const progress = [];
  const result = await client.store(user, content, { pollIntervalMs: 100, onProgress: (p) => progress.push(p) });
  assert.equal(result.status, "success");
  assert.match(result.memory_id, /^mem_/);
  const [write, ...polls] = seen;
  assert.deepEqual([write.method, write.path, write.prefer, write.status], ["POST", "/v1/memories", "respond-async", 202]);
  assert.ok(polls.length >= 1 && polls.every((p) => p.method === "GET" && p.path.startsWith("/v1/jobs/job_")));
  assert.ok(progress.at(-1).total >= 20 && progress.at(-1).done === progress.at(-1).total);
  assert.equal((await client.get(result.memory_id)).content.length, content.length);

  // the same length with wait: true is one request answered when done; short content too
  seen.length = 0;
  await client.store(newUser("short"), "a short note about the library", { onProgress: () => assert.fail("not a job") });
  assert.deepEqual(seen.map((s) => [s.path, s.prefer, s.status]), [["/v1/memories", null, 201]]);
});

test("a 202 the caller did not ask for is followed: the store still resolves to its result", async () => {
  // a client whose every request prefers respond-async (a proxy or a shared header set)
  const { client, seen } = recorded({ headers: { Prefer: "respond-async" } });
  const user = newUser("asked");
  const result = await client.store(user, "the user prefers window seats");
  assert.equal(result.status, "success");
  assert.equal(seen[0].status, 202);
  assert.ok(seen.slice(1).every((s) => s.path.startsWith("/v1/jobs/")));
  const results = await client.storeMany(user, ["first of two", "second of two"], { wait: true });
  assert.deepEqual(results.map((r) => r.status), ["success", "success"]);
  const again = await client.store(user, "the user prefers window seats", { wait: true });
  assert.equal(again.status, "skipped"); // the job's answer: a duplicate
  assert.equal(again.memory_id, result.memory_id);
});

test("one Idempotency-Key, one job: a retried job-store gets the same job", async () => {
  const user = newUser("idem");
  const idempotencyKey = `ts-jobs-${Date.now()}`;
  const first = await memory.store(user, "the user's train leaves at nine", { wait: false, idempotencyKey });
  const second = await memory.store(user, "the user's train leaves at nine", { wait: false, idempotencyKey });
  assert.equal(second.jobId, first.jobId);
  assert.deepEqual(await second.wait({ pollIntervalMs: 50 }), await first.wait({ pollIntervalMs: 50 }));
  assert.equal((await memory.listMemories(user)).results.length, 1);
});

test("storeMany and storeDocument as jobs", async () => {
  const user = newUser("many");
  const items = Array.from({ length: 7 }, (_, i) => `batch note ${i} about the orchard`);
  const jobs = await memory.storeMany(user, items, { wait: false, batchSize: 3 });
  assert.equal(jobs.length, 3);
  assert.ok(jobs.every((j) => j instanceof Job && /^job_/.test(j.jobId)));
  assert.equal((await memory.jobStatus(jobs[0].jobId)).kind, "store_batch");
  const batches = [];
  for (const job of jobs) batches.push(await job.wait({ pollIntervalMs: 50 }));
  assert.deepEqual(batches.map((b) => b.length), [3, 3, 1]);
  assert.ok(batches.flat().every((r) => r.status === "success"));
  assert.equal((await memory.listMemories(user, { limit: 50 })).results.length, 7);

  const text = `# Orchard plan\n\n${longText(3_000, "orchard")}`;
  const progress = [];
  const doc = await memory.storeDocument(user, "orchard.md", { text, pollIntervalMs: 50, onProgress: (p) => progress.push(p) });
  assert.equal(doc.status, "success");
  assert.equal(doc.file_name, "orchard.md");
  assert.equal(progress.at(-1).state, "succeeded");
  assert.equal(progress.at(-1).job.kind, "store_document");
  assert.equal(progress.at(-1).done, doc.chunks);

  const job = await memory.storeDocument(user, "orchard-2.md", { text: "# Second\n\nApples in row four.", wait: false });
  assert.ok(job instanceof Job);
  assert.equal((await job.wait({ pollIntervalMs: 50 })).document_id, "orchard-2.md");
  const direct = await memory.storeDocument(user, "orchard-3.md", { text: "# Third\n\nPears.", wait: true });
  assert.equal(direct.document_id, "orchard-3.md");
});

test("a server that keeps no jobs: the write's answer, in a handle finished from the start", async () => {
  // what the AWS deployment does with the header: ignores it and answers when done
  const ignoring = new Hindsight({
    baseUrl: server.url,
    apiKey: KEY,
    fetch: (input, init) => {
      const headers = new Headers(init?.headers);
      headers.delete("Prefer");
      return fetch(input, { ...init, headers });
    },
  });
  const user = newUser("nojobs");
  const job = await ignoring.store(user, "the user waters the ferns on Sundays", { wait: false });
  assert.equal(job.jobId, null);
  assert.equal(job.finished, true);
  const result = await job.wait({ onProgress: () => assert.fail("nothing was followed") });
  assert.equal(result.status, "success");
  await assert.rejects(job.status(), /answered when done/);
  const [batch] = await ignoring.storeMany(user, ["ferns", "cacti"], { wait: false });
  assert.deepEqual((await batch.wait()).map((r) => r.status), ["success", "success"]);
});
