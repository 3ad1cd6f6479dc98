"""A headless Chromium for the browser tier, driven line by line through driver.mjs.

``Browser`` starts ``node driver.mjs`` (playwright-core from tests/browser/package-lock.json,
launching Debian's /usr/bin/chromium: no browser is downloaded) and sends it one JSON
command at a time; a failed command raises ``BrowserError`` with the page's message.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CHROMIUM = Path("/usr/bin/chromium")


class BrowserError(AssertionError):
    """A command the page could not carry out (no such element within the timeout...)."""


def missing_tools() -> str | None:
    """What the tier needs and this machine lacks (``make test-browser`` installs it)."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing: run `make browser-deps` (apt-get install chromium)"
    if shutil.which("node") is None:
        return "node is missing: install Node.js 18 or later"
    if not (HERE / "node_modules" / "playwright-core").is_dir():
        return "playwright-core is missing: run `make browser-deps` (npm ci in tests/browser)"
    return None


class Browser:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            ["node", str(HERE / "driver.mjs")],
            cwd=HERE,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self._read()  # "ready": Chromium is up

    def _read(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise BrowserError(f"the browser driver exited ({self.process.wait()})")
        answer = json.loads(line)
        if not answer["ok"]:
            raise BrowserError(answer["error"])
        return answer["value"]

    def send(self, op: str, **arguments: Any) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.process.stdin.flush()
        return self._read()

    # the commands the tests use
    def goto(self, url: str) -> None:
        self.send("goto", url=url)
        self.send("ready")

    def ready(self) -> None:
        self.send("ready")

    def click(self, selector: str) -> None:
        self.send("click", selector=selector)

    def fill(self, selector: str, value: str) -> None:
        self.send("fill", selector=selector, value=value)

    def select(self, selector: str, value: str) -> None:
        self.send("select", selector=selector, value=value)

    def text(self, selector: str) -> str:
        return str(self.send("text", selector=selector) or "")

    def texts(self, selector: str) -> list[str]:
        return list(self.send("texts", selector=selector))

    def attrs(self, selector: str, name: str) -> list[str | None]:
        return list(self.send("attrs", selector=selector, name=name))

    def count(self, selector: str) -> int:
        return int(self.send("count", selector=selector))

    def wait(self, selector: str, state: str = "visible") -> None:
        self.send("wait", selector=selector, state=state)

    def wait_text(self, selector: str, text: str) -> None:
        self.send("waitText", selector=selector, text=text)

    def screenshot(self, path: Path, full_page: bool = False) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.send("screenshot", path=str(path), fullPage=full_page)

    def close(self) -> None:
        try:
            self.send("close")
        finally:
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
