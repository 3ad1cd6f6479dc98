// The package as a user gets it: `npm pack`, installed into an empty project (no build step
// there), imported from Node ESM, and a TypeScript file type-checked against its declarations
// (a wrong field must fail the check). The subpath exports load once their optional peers
// are installed beside it.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import { KEY, sharedServer } from "./server.mjs";

const run = promisify(execFile);
const PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));
const TSC = join(PACKAGE_DIR, "node_modules", "typescript", "bin", "tsc");
const NPM = process.platform === "win32" ? "npm.cmd" : "npm";
const QUIET = ["--no-audit", "--no-fund", "--loglevel=error"];

let server;
let work;
let tarball;
let app; // an empty project with the tarball installed in it
before(async () => {
  server = await sharedServer();
  work = await mkdtemp(join(tmpdir(), "hindsight-ts-pack-"));
  // `npm test` has just built dist/ (prepack builds it for a publisher: the same `tsc`)
  const { stdout } = await run(NPM, ["pack", "--json", "--ignore-scripts", "--pack-destination", work], { cwd: PACKAGE_DIR });
  const [packed] = JSON.parse(stdout);
  tarball = { path: join(work, packed.filename), files: packed.files.map((f) => f.path), unpacked: packed.unpackedSize };
  app = await project("app");
});
after(async () => {
  await server.stop();
  await rm(work, { recursive: true, force: true });
});

async function project(name) {
  const dir = join(work, name);
  await run("mkdir", ["-p", dir]);
  await writeFile(join(dir, "package.json"), JSON.stringify({ name, private: true, type: "module" }));
  await run(NPM, ["install", ...QUIET, "--prefer-offline", tarball.path], { cwd: dir });
  return dir;
}

test("the tarball holds the built ESM and its declarations, nothing else", async (t) => {
  const bytes = (await stat(tarball.path)).size;
  t.diagnostic(`${tarball.path.split("/").at(-1)}: ${bytes} bytes packed, ${tarball.unpacked} unpacked, ${tarball.files.length} files`);
  assert.ok(tarball.files.includes("dist/index.js") && tarball.files.includes("dist/index.d.ts"));
  assert.ok(tarball.files.includes("dist/ai.js") && tarball.files.includes("dist/langgraph.d.ts"));
  assert.deepEqual(tarball.files.filter((f) => !/^(dist\/|package\.json$|README\.md$|LICENSE$)/.test(f)), []);
  assert.ok(bytes < 100_000, `${bytes} bytes`);
});

test("installed into an empty project: imported from Node ESM and type-checked", async () => {
  const dir = app;
  const manifest = JSON.parse(await readFile(join(dir, "package-lock.json"), "utf8"));
  assert.deepEqual(Object.keys(manifest.packages).filter((p) => p), ["node_modules/@hindsight-memory/client"]);
  await writeFile(
    join(dir, "use.mjs"),
    `import { Hindsight, NotFoundError } from "@hindsight-memory/client";
const memory = new Hindsight({ baseUrl: process.argv[2], apiKey: process.argv[3] });
const stored = await memory.store("pack-user", "installed from the tarball");
try { await memory.get("mem_missing"); } catch (e) { console.log(e instanceof NotFoundError, e.status); }
console.log(stored.status, (await memory.health()).status);
`,
  );
  const { stdout } = await run(process.execPath, ["use.mjs", server.url, KEY], { cwd: dir });
  assert.equal(stdout.trim(), "true 404\nsuccess success");

  const tsconfig = { compilerOptions: { module: "nodenext", moduleResolution: "nodenext", target: "es2022", lib: ["es2022", "dom"], types: [], strict: true, noEmit: true } };
  await writeFile(
    join(dir, "use.ts"),
    `import { Hindsight, HindsightError, JobFailedError, type DocumentResult, type Job, type Memory, type RetrievePage, type StoreResult } from "@hindsight-memory/client";
const memory = new Hindsight({ timeout: 5_000 });
export async function jobs(signal: AbortSignal, wait: boolean): Promise<string> {
  const job: Job<StoreResult> = await memory.store("u1", "long text", { wait: false, category: "event" });
  const stored: StoreResult = await job.wait({ signal, pollIntervalMs: 100, timeoutMs: 60_000, onProgress: (p) => console.log(p.done, p.total, p.state) });
  const either: StoreResult | Job<StoreResult> = await memory.store("u1", "text", { wait });
  const batches: Job<StoreResult[]>[] = await memory.storeMany("u1", ["a", "b"], { wait: false });
  const doc: Job<DocumentResult> = await memory.storeDocument("u1", "a.md", { text: "# A", wait: false });
  const done: DocumentResult = await memory.storeDocument("u1", "b.md", { text: "# B" });
  try { await batches[0].wait(); } catch (e) { if (e instanceof JobFailedError) return e.job.state + e.jobId; }
  return stored.memory_id + String(either) + doc.jobId + done.chunks + (await memory.jobStatus("job_1")).progress.total;
}
export async function main(signal: AbortSignal): Promise<string> {
  await memory.store("u1", "text", { category: "constraint", occurred_at: new Date(), signal });
  const page: RetrievePage = await memory.retrieve("u1", "q", { top_k: 5, scopes: ["global"] });
  const first: Memory = await memory.get(page.results[0].memory_id);
  for await (const m of memory.iterMemories("u1", { kind: "semantic", limit: 3 })) console.log(m.status);
  try { await memory.reflect("u1"); } catch (e) { if (e instanceof HindsightError) return String(e.status); }
  return first.content;
}
`,
  );
  // the declarations say what a field takes: a misspelt one fails the check, and so does
  // taking the Job of a `wait: false` store for its result (one tsc run over both files: the
  // errors are all in wrong.ts, one for each of its two wrong lines)
  await writeFile(
    join(dir, "wrong.ts"),
    `import { Hindsight, type StoreResult } from "@hindsight-memory/client";
await new Hindsight().store("u1", "text", { categroy: "constraint" });
export const result: StoreResult = await new Hindsight().store("u1", "text", { wait: false });
`,
  );
  await writeFile(join(dir, "tsconfig.json"), JSON.stringify({ ...tsconfig, include: ["use.ts", "wrong.ts"] }));
  await assert.rejects(run(process.execPath, [TSC, "-p", "tsconfig.json"], { cwd: dir }), (error) => {
    const errors = error.stdout.split("\n").filter((line) => /error TS/.test(line));
    assert.equal(errors.length, 2, error.stdout);
    // store's overloads (a Job with wait: false) make tsc open with "No overload matches"
    // and name the misspelt field in the lines under it
    assert.match(errors[0], /^wrong\.ts\(2,/);
    assert.match(error.stdout, /'categroy' does not exist/);
    assert.match(errors[1], /^wrong\.ts\(3,.*Type 'Job<.*is missing the following properties/);
    return true;
  });
});

test("the subpath exports load and type-check with their peers installed beside the package", async () => {
  // the peers are this package's own dev copies (linked, not downloaded again: the same
  // versions a user installs from the registry)
  const dir = app;
  for (const peer of ["ai", "zod", "@langchain"]) {
    await symlink(join(PACKAGE_DIR, "node_modules", peer), join(dir, "node_modules", peer));
  }
  const { stdout } = await run(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `const ai = await import("@hindsight-memory/client/ai");
const lg = await import("@hindsight-memory/client/langgraph");
const { BaseStore } = await import("@langchain/langgraph-checkpoint");
console.log(typeof ai.memoryTools, new lg.HindsightStore({ client: {} }) instanceof BaseStore);`,
    ],
    { cwd: dir },
  );
  assert.equal(stdout.trim(), "function true");
  await writeFile(
    join(dir, "frameworks.ts"),
    `import { generateText, stepCountIs, type LanguageModel } from "ai";
import { Hindsight } from "@hindsight-memory/client";
import { memorySystem, memoryTools } from "@hindsight-memory/client/ai";
import { HindsightStore } from "@hindsight-memory/client/langgraph";
import type { BaseStore } from "@langchain/langgraph-checkpoint";
const client = new Hindsight();
export async function answer(model: LanguageModel, prompt: string): Promise<string> {
  const who = { client, userId: "alice", sessionId: "chat-1" };
  const system = await memorySystem("Be brief.", { ...who, query: prompt });
  const { text } = await generateText({ model, system, tools: memoryTools(who), stopWhen: stepCountIs(3), prompt });
  return text;
}
export const store: BaseStore = new HindsightStore({ client, prefix: ["memories"] });
`,
  );
  const tsconfig = { compilerOptions: { module: "nodenext", moduleResolution: "nodenext", target: "es2022", lib: ["es2022", "dom"], types: [], strict: true, noEmit: true, skipLibCheck: true } };
  await writeFile(join(dir, "tsconfig.json"), JSON.stringify({ ...tsconfig, include: ["frameworks.ts"] }));
  await run(process.execPath, [TSC, "-p", "tsconfig.json"], { cwd: dir }).catch((error) => {
    assert.fail(`tsc: ${error.stdout}`);
  });
});
