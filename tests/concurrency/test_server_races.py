"""Processes racing against one ``hindsight serve`` (embedded backend, real model) on a
loopback port: duplicates, store-while-retrieve, delete-while-retrieve, erase-while-store,
all at once, from separate client processes (``server_clients.py``) released together.
Meanwhile another process building the embedded service on the same data directory (as
the CLI or ``Hindsight.embedded()`` would) is refused by the index's writer lock; that a
second ``hindsight serve`` is refused before it even loads is the server's own test.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
HINDSIGHT = Path(sys.executable).parent / "hindsight"
WORD = "orchard"
START_TIMEOUT = 120.0


@dataclass
class Server:
    url: str
    data_dir: Path
    process: subprocess.Popen[bytes]


SECOND_WRITER = """
import sys
from hindsight.bootstrap import build_embedded_service
from hindsight.core.errors import UnavailableError
from hindsight.settings import Settings

try:
    build_embedded_service(Settings(data_dir=sys.argv[1]))
except UnavailableError as exc:
    print(exc.message)
    sys.exit(3)
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(
        HINDSIGHT_REFLECTOR="rule-based",
        POWERTOOLS_METRICS_DISABLED="true",
        POWERTOOLS_LOG_LEVEL="WARNING",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    return env


def serve(data_dir: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """``hindsight serve`` on a loopback port, its output to ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(HINDSIGHT), "serve", "--port", str(port), "--data-dir", str(data_dir)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=server_env(),
            cwd=ROOT,
            start_new_session=True,  # its own process group, ended whole in teardown
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (a graceful shutdown), then SIGKILL to the process group if it lingers."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("served")
    port = free_port()
    process = serve(base / "data", port, base / "server.log")
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            pytest.fail(f"hindsight serve exited: {(base / 'server.log').read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/v1/health", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            stop(process)
            pytest.fail("hindsight serve did not answer /v1/health in time")
        time.sleep(0.2)
    try:
        yield Server(url, base / "data", process)
    finally:
        stop(process)


def client(server: Server, role: str, **arguments: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.concurrency.server_clients",
            server.url,
            role,
            json.dumps(arguments),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def run_together(clients: dict[str, subprocess.Popen[str]]) -> dict[str, Any]:
    """Release every client at once; their results by name (errors fail the test)."""
    for name, process in clients.items():
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line == "ready", (name, line, process.stderr.read() if process.stderr else "")
    for process in clients.values():
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    results: dict[str, Any] = {}
    for name, process in clients.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, (name, err[-2000:])
        answer = json.loads(out.strip().splitlines()[-1])
        assert answer["errors"] == [], (name, answer["errors"])
        results[name] = answer["result"]
    return results


def listed(http: httpx.Client, user_id: str) -> set[str]:
    found: set[str] = set()
    params: dict[str, Any] = {"limit": 50}
    while True:
        body = http.get(f"/v1/users/{user_id}/memories", params=params).json()
        found.update(m["memory_id"] for m in body["results"])
        if not body.get("next_cursor"):
            return found
        params["cursor"] = body["next_cursor"]


def findable(http: httpx.Client, user_id: str) -> set[str]:
    found: set[str] = set()
    body: dict[str, Any] = {"user_id": user_id, "query": WORD, "top_k": 20}
    while True:
        page = http.post("/v1/retrieve", json=body).json()
        found.update(r["memory_id"] for r in page["results"])
        if not page.get("next_cursor"):
            return found
        body["cursor"] = page["next_cursor"]


def test_processes_racing_on_one_server(server: Server, tmp_path: Path) -> None:
    with httpx.Client(base_url=server.url, timeout=120) as http:
        race_on(server, http, tmp_path)


def race_on(server: Server, http: httpx.Client, tmp_path: Path) -> None:
    doomed = [
        http.post("/v1/memories", json={"user_id": "p-del", "content": f"{WORD} plot {n}"}).json()[
            "memory_id"
        ]
        for n in range(10)
    ]
    before = {
        http.post("/v1/memories", json={"user_id": "p-erase", "content": f"{WORD} old {n}"}).json()[
            "memory_id"
        ]
        for n in range(3)
    }
    log = str(tmp_path / "deleted.txt")
    content = f"We planted pear trees in the {WORD}"
    clients = {
        **{f"dup{n}": client(server, "duplicate", user_id="p-dup", content=content, times=1)
           for n in range(3)},
        **{f"find{n}": client(server, "store_and_find", user_id="p-find",
                              words=[f"kiwi{n}x{m}" for m in range(3)]) for n in range(2)},
        "delete": client(server, "delete", memory_ids=doomed, log=log),
        **{f"read{n}": client(server, "read_while_deleting", user_id="p-del", log=log, rounds=5)
           for n in range(2)},
        "batch": client(server, "batch_store", user_id="p-erase",
                        contents=[f"{WORD} racing {n}" for n in range(20)]),
        "singles": client(server, "single_stores", user_id="p-erase",
                          contents=[f"{WORD} single {n}" for n in range(3)]),
        "erase": client(server, "erase", user_id="p-erase", pause=0.1),
    }  # fmt: skip
    second = subprocess.Popen(
        [sys.executable, "-c", SECOND_WRITER, str(server.data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env=server_env(),
    )
    results = run_together(clients)

    dup_ids = {i for n in range(3) for i in results[f"dup{n}"]}
    assert len(dup_ids) == 1  # 6 racing stores of one content: one memory, named by all
    assert listed(http, "p-dup") == dup_ids
    assert all(results[f"find{n}"]["missing"] == [] for n in range(2))
    assert all(results[f"read{n}"] == [] for n in range(2))  # nothing found after its delete
    assert listed(http, "p-del") == findable(http, "p-del") == set()
    erased = listed(http, "p-erase")
    assert erased == findable(http, "p-erase")  # nothing stored but unfindable, or the reverse
    assert not erased & before
    batch = set(results["batch"])
    assert batch <= erased or not batch & erased  # the racing batch landed whole or not at all

    refusal = second.communicate(timeout=120)[0]  # says who holds the directory
    assert second.returncode == 3, refusal
    assert f"the Hindsight data in {server.data_dir} is already open for writing" in refusal
    assert f"pid {server.process.pid}" in refusal, refusal
    assert server.process.poll() is None  # the first server is still serving
    assert http.get("/v1/health").status_code == 200
