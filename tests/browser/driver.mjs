// A headless Chromium (Debian's /usr/bin/chromium, never a downloaded one) driven by
// playwright-core, one command a line: pytest (tests/browser/browser.py) writes a JSON
// command on stdin, this answers one JSON line on stdout: {"ok": true, "value": ...} or
// {"ok": false, "error": "..."}. Playwright waits for each element to be there and usable.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const profile = mkdtempSync(join(tmpdir(), "hindsight-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
  viewport: { width: 1280, height: 800 },
  timeout: 60_000,
});
const page = context.pages()[0] || (await context.newPage());
page.setDefaultTimeout(Number(process.env.BROWSER_TIMEOUT_MS || 20_000));
const consoleErrors = [];
page.on("console", (message) => {
  if (message.type() === "error") consoleErrors.push(message.text());
});
page.on("pageerror", (error) => consoleErrors.push(String(error)));
page.on("dialog", (dialog) => dialog.dismiss()); // native dialogs are never expected

const COMMANDS = {
  goto: ({ url }) => page.goto(url, { waitUntil: "load" }).then(() => page.url()),
  url: () => page.url(),
  ready: () => page.waitForSelector("main section[data-ready='true']", { state: "attached" }).then(() => true),
  click: ({ selector }) => page.click(selector).then(() => true),
  fill: ({ selector, value }) => page.fill(selector, value).then(() => true),
  select: ({ selector, value }) => page.selectOption(selector, value).then(() => true),
  check: ({ selector }) => page.check(selector).then(() => true),
  press: ({ selector, key }) => page.press(selector, key).then(() => true),
  text: ({ selector }) => page.textContent(selector),
  texts: ({ selector }) => page.locator(selector).allTextContents(),
  attrs: ({ selector, name }) =>
    page.locator(selector).evaluateAll((els, attr) => els.map((e) => e.getAttribute(attr)), name),
  count: ({ selector }) => page.locator(selector).count(),
  wait: ({ selector, state }) => page.waitForSelector(selector, { state: state || "visible" }).then(() => true),
  waitText: ({ selector, text }) =>
    page.locator(selector).filter({ hasText: text }).first().waitFor().then(() => true),
  focused: () => page.evaluate(() => document.activeElement && (document.activeElement.id || document.activeElement.tagName)),
  keyboard: ({ key }) => page.keyboard.press(key).then(() => true),
  viewport: ({ width, height }) => page.setViewportSize({ width, height }).then(() => true),
  overflow: () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
  screenshot: ({ path, fullPage }) => page.screenshot({ path, fullPage: Boolean(fullPage) }).then(() => path),
  storage: ({ name }) => page.evaluate((key) => sessionStorage.getItem(key), name),
  consoleErrors: () => consoleErrors.splice(0),
  close: async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
    return true;
  },
};

function reply(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

reply({ ok: true, value: "ready" });
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  let command;
  try {
    command = JSON.parse(line);
    const run = COMMANDS[command.op];
    if (!run) throw new Error(`unknown command ${command.op}`);
    const value = await run(command);
    reply({ ok: true, value: value ?? null });
  } catch (error) {
    reply({ ok: false, error: String(error && error.message ? error.message : error).slice(0, 2000) });
  }
  if (command && command.op === "close") break;
}
process.exit(0);
