// `npm test`: one `hindsight serve` for every suite (its start is most of the time), shared
// through HINDSIGHT_TEST_URL. The suites that start servers of their own (restart.test.mjs
// kills and restarts one) run alongside, their report printed after the others'.
import { spawn } from "node:child_process";
import { readdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { startServer } from "./server.mjs";

const OWN_SERVERS = ["restart.test.mjs"];
const here = fileURLToPath(new URL(".", import.meta.url));
const only = process.argv.slice(2);
const files = (await readdir(here))
  .filter((name) => name.endsWith(".test.mjs"))
  .filter((name) => !only.length || only.some((want) => name.includes(want)))
  .sort();

/** `node --test` over `names`; its report on our stdout, or kept until `report()`. */
function suites(names, env, { hold = false } = {}) {
  if (!names.length) return { done: Promise.resolve(0), report: () => {} };
  const child = spawn(process.execPath, ["--test", "--test-concurrency=1", ...names.map((n) => `${here}${n}`)], {
    stdio: ["ignore", hold ? "pipe" : "inherit", "inherit"],
    env: { ...process.env, ...env },
  });
  const held = [];
  child.stdout?.on("data", (chunk) => held.push(chunk));
  const done = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0))));
  return { done, report: () => process.stdout.write(Buffer.concat(held)) };
}

const own = suites(files.filter((n) => OWN_SERVERS.includes(n)), {}, { hold: true });
const shared = files.filter((n) => !OWN_SERVERS.includes(n));
let code = 1;
if (shared.length) {
  const server = await startServer();
  try {
    code = await suites(shared, { HINDSIGHT_TEST_URL: server.url }).done;
  } finally {
    await server.stop();
  }
} else {
  code = 0;
}
const ownCode = await own.done;
own.report();
process.exit(code || ownCode);
