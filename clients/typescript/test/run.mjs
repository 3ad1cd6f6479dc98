// `npm test`: one `hindsight serve` for every suite (its start is most of the time), shared
// through HINDSIGHT_TEST_URL; suites that kill a server start their own.
import { spawn } from "node:child_process";
import { readdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { startServer } from "./server.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const only = process.argv.slice(2);
const files = (await readdir(here))
  .filter((name) => name.endsWith(".test.mjs"))
  .filter((name) => !only.length || only.some((want) => name.includes(want)))
  .sort()
  .map((name) => `${here}${name}`);
const server = await startServer();
let code = 1;
try {
  const child = spawn(process.execPath, ["--test", "--test-concurrency=1", ...files], {
    stdio: "inherit",
    env: { ...process.env, HINDSIGHT_TEST_URL: server.url },
  });
  code = await new Promise((resolve) => child.once("exit", (c, signal) => resolve(c ?? (signal ? 1 : 0))));
} finally {
  await server.stop();
}
process.exit(code);
