// The examples run as a user runs them (`node examples/x.mjs`, HINDSIGHT_URL and
// HINDSIGHT_API_KEY in the environment) against the server, with no model key.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import { KEY, sharedServer } from "./server.mjs";

const run = promisify(execFile);
const PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));
let server;
before(async () => (server = await sharedServer()));
after(() => server.stop());

async function example(name) {
  const env = { ...process.env, HINDSIGHT_URL: server.url, HINDSIGHT_API_KEY: KEY };
  for (const key of Object.keys(env)) if (/OPENAI|ANTHROPIC|AI_GATEWAY/.test(key)) delete env[key];
  const { stdout } = await run(process.execPath, [`examples/${name}`], { cwd: PACKAGE_DIR, env });
  return stdout;
}

test("examples/basic.mjs", async () => {
  const out = await example("basic.mjs");
  assert.match(out, /stored 2\/2/);
  assert.match(out, /^\d\.\d{3} I am allergic to peanuts$/m);
  assert.match(out, /facts approved: .*peanuts/);
  assert.match(out, /erased: 404 /);
});

test("examples/ai-sdk.mjs", async () => {
  const out = await example("ai-sdk.mjs");
  assert.match(out, /memory_store -> Remembered \(memory mem_\w+\)\./);
  assert.match(out, /chat-2: From memory: 1\. \[mem_\w+\] \(event, constraint, [\d-]+\) The user is allergic to peanuts/);
});

test("examples/langgraph.mjs", async () => {
  const out = await example("langgraph.mjs");
  assert.match(out, /recalled in a new thread: .*I moved to Porto last year/);
});
