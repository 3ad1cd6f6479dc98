// Copies the pinned chart library (package-lock.json) into the Python package, where
// `hindsight serve` and the ExplorerFunction serve it: run `make explorer-assets`
// (npm ci, then this script). The copied files are committed; no build runs on `make run`.
import { copyFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const target = join(here, "..", "layers", "hindsight", "hindsight", "explorer", "static");
const files = [
  ["node_modules/uplot/dist/uPlot.iife.min.js", "uPlot.iife.min.js"],
  ["node_modules/uplot/dist/uPlot.min.css", "uPlot.min.css"],
  ["node_modules/uplot/LICENSE", "uPlot.LICENSE.txt"],
];
for (const [source, name] of files) {
  copyFileSync(join(here, source), join(target, name));
  console.log(`vendored ${source} -> ${name}`);
}
