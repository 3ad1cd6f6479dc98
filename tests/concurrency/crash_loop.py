"""Kill -9 ``hindsight serve`` in the middle of stores, restart it, and check what survived.

Shared by ``test_crash_safety.py`` (a few kills) and ``bench/crash.py`` (many). Client
threads store single memories and batches of unique texts over HTTP while the server is
killed with SIGKILL at a random moment; every answer a client got is written down in a
``Ledger``. After a restart on the same data directory, ``verify`` checks the three promises
of issue #15:

(a) every write that got a 2xx answer is there: listed, read back by id with its content,
    and found by a retrieve of its exact text;
(b) no batch is half-applied: of every batch sent (answered or not), all items or none
    are stored (the texts are unique, so each is traced to its batch);
(c) the search index agrees with the record store: as many documents indexed as memories
    stored (``/v1/health``), and at the end ``hindsight check-index`` compares the ids.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import signal
import socket
import string
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
HINDSIGHT = Path(sys.executable).parent / "hindsight"
USERS = ("crash-a", "crash-b")
BATCH_SIZES = (1, 1, 2, 5, 10, 20)  # 1: a single store (POST /v1/memories) half the time
START_TIMEOUT = 120.0
CLIENT_TIMEOUT = 60.0


class CrashLoopError(RuntimeError):
    """The server could not be started or answered what no client should ever get."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_env() -> dict[str, str]:
    """The environment of the concurrency tier's servers: default (bundled) embedding
    model, rule-based reflector, no network."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(
        HINDSIGHT_REFLECTOR="rule-based",
        POWERTOOLS_METRICS_DISABLED="true",
        POWERTOOLS_LOG_LEVEL="WARNING",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    return env


class CrashableServer:
    """``hindsight serve`` on one data directory, started again on a new port each time."""

    def __init__(self, data_dir: Path, log: Path) -> None:
        self.data_dir = data_dir
        self.log = log
        self.url = ""
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.starts += 1
        with self.log.open("ab") as out:
            out.write(f"\n--- start {self.starts} on port {port}\n".encode())
            out.flush()
            self.process = subprocess.Popen(
                [str(HINDSIGHT), "serve", "--port", str(port), "--data-dir", str(self.data_dir)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=server_env(),
                cwd=ROOT,
                start_new_session=True,  # its own process group: killed whole
            )

    def wait_ready(self, timeout: float = START_TIMEOUT) -> float:
        """Seconds until ``/v1/health`` answered 200."""
        assert self.process is not None
        began = time.monotonic()
        while time.monotonic() - began < timeout:
            if self.process.poll() is not None:
                raise CrashLoopError(f"hindsight serve exited on start:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=5).status_code == 200:
                    return time.monotonic() - began
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise CrashLoopError(f"hindsight serve not ready in {timeout} s:\n{self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL to the whole process group: no handler, no atexit, no flush."""
        process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)

    def stop(self) -> None:
        """A graceful stop (SIGTERM), SIGKILL if it lingers."""
        process = self.process
        if process is None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
            self.process = None
        except subprocess.TimeoutExpired:
            self.kill()

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


@dataclass
class Ledger:
    """What the clients sent and what they were told."""

    acked: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (user, content)
    batches: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # every send
    fresh: list[str] = field(default_factory=list)  # acknowledged since the last check
    unexpected: list[str] = field(default_factory=list)  # answers no client should get
    numbers: Iterator[int] = field(default_factory=itertools.count)  # of texts, never reused
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sent(self, user: str, contents: list[str]) -> None:
        with self.lock:
            self.batches.append((user, tuple(contents)))

    def answered(self, user: str, contents: list[str], ids: list[str]) -> None:
        with self.lock:
            for content, memory_id in zip(contents, ids, strict=True):
                self.acked[memory_id] = (user, content)
                self.fresh.append(memory_id)


def unique_text(rng: random.Random, number: int) -> str:
    word = "".join(rng.choices(string.ascii_lowercase, k=10))
    return f"{word} crash note {number} about {rng.choice(['kites', 'pears', 'trains'])}"


def _store(http: httpx.Client, user: str, contents: list[str], single: bool) -> httpx.Response:
    if single:
        return http.post("/v1/memories", json={"user_id": user, "content": contents[0]})
    items = [{"content": content} for content in contents]
    return http.post("/v1/memories/batch", json={"user_id": user, "items": items})


def _ids_of(body: dict[str, Any], single: bool) -> list[str]:
    if single:
        return [str(body["memory_id"])]
    return [str(result["memory_id"]) for result in body["results"]]


def write_until_killed(url: str, ledger: Ledger, seed: int) -> None:
    """Store singles and batches until the server stops answering."""
    rng = random.Random(seed)
    with httpx.Client(base_url=url, timeout=CLIENT_TIMEOUT) as http:
        while True:
            user = rng.choice(USERS)
            size = rng.choice(BATCH_SIZES)
            single = size == 1 and rng.random() < 0.5
            contents = [unique_text(rng, next(ledger.numbers)) for _ in range(size)]
            ledger.sent(user, contents)
            try:
                reply = _store(http, user, contents, single)
            except httpx.HTTPError:
                return  # killed: this write's fate is unknown, and so allowed either way
            if reply.status_code // 100 != 2:
                with ledger.lock:
                    ledger.unexpected.append(f"{reply.status_code} {reply.text[:200]}")
                continue
            ledger.answered(user, contents, _ids_of(reply.json(), single))


def kill_mid_writes(
    server: CrashableServer,
    ledger: Ledger,
    rng: random.Random,
    writers: int = 3,
    window: tuple[float, float] = (0.3, 1.5),
) -> float:
    """Writers storing while the server is killed at a random moment (once the first of
    their writes has been answered); the moment, in seconds after that answer."""
    threads = [
        threading.Thread(
            target=write_until_killed,
            args=(server.url, ledger, rng.randrange(1 << 30)),
            daemon=True,
        )
        for _ in range(writers)
    ]
    for thread in threads:
        thread.start()
    _wait_for_an_answer(ledger, len(ledger.acked))  # warm: the model loads on first use
    moment = rng.uniform(*window)
    time.sleep(moment)
    server.kill()
    for thread in threads:
        thread.join(CLIENT_TIMEOUT)
        if thread.is_alive():
            raise CrashLoopError("a writer still waits for a killed server")
    return moment


def _wait_for_an_answer(ledger: Ledger, before: int, timeout: float = CLIENT_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while len(ledger.acked) == before:
        if time.monotonic() > deadline:
            raise CrashLoopError(f"no write was answered in {timeout} s: {ledger.unexpected[-3:]}")
        time.sleep(0.02)


@dataclass
class Findings:
    """What a check after a restart found (empty lists: every promise kept)."""

    acknowledged: int
    stored: int
    indexed: int
    lost: list[str] = field(default_factory=list)  # acknowledged, but gone or changed
    unfindable: list[str] = field(default_factory=list)  # not found by their exact text
    half_applied: list[str] = field(default_factory=list)  # "user: k of n" per batch
    retrieved: int = 0  # acknowledged writes checked by a retrieve

    @property
    def index_disagrees(self) -> bool:
        return self.stored != self.indexed

    @property
    def ok(self) -> bool:
        return not (self.lost or self.unfindable or self.half_applied or self.index_disagrees)


def listed(http: httpx.Client, user: str) -> dict[str, str]:
    """content -> memory id of every memory of the user (expired ones too)."""
    found: dict[str, str] = {}
    params: dict[str, Any] = {"limit": 50, "include_expired": "true"}
    while True:
        reply = http.get(f"/v1/users/{user}/memories", params=params)
        reply.raise_for_status()
        body = reply.json()
        found.update({m["content"]: m["memory_id"] for m in body["results"]})
        if not body.get("next_cursor"):
            return found
        params["cursor"] = body["next_cursor"]


def verify(
    server: CrashableServer, ledger: Ledger, rng: random.Random, retrieve_sample: int | None
) -> Findings:
    """Check (a), (b) and the index count against a restarted server.

    Every acknowledged write is looked for in the listing; those acknowledged since the
    last check are also read by id, and (``retrieve_sample`` of them, None: all) retrieved
    by their exact text.
    """
    with httpx.Client(base_url=server.url, timeout=CLIENT_TIMEOUT) as http:
        contents = {user: listed(http, user) for user in USERS}
        ids = {memory_id for by_content in contents.values() for memory_id in by_content.values()}
        health = http.get("/v1/health").json()
        findings = Findings(
            acknowledged=len(ledger.acked),
            stored=len(ids),
            indexed=int(health["indexed_documents"]),
        )
        findings.lost = sorted(set(ledger.acked) - ids)
        for user, batch in ledger.batches:
            present = sum(1 for content in batch if content in contents[user])
            if 0 < present < len(batch):
                findings.half_applied.append(f"{user}: {present} of {len(batch)}")
        fresh, ledger.fresh = ledger.fresh, []
        for memory_id in fresh:
            reply = http.get(f"/v1/memories/{memory_id}")
            read = reply.json().get("memory") or {} if reply.status_code == 200 else {}
            if read.get("content") != ledger.acked[memory_id][1]:
                findings.lost.append(memory_id)
        sample = fresh
        if retrieve_sample is not None:
            sample = rng.sample(fresh, min(len(fresh), retrieve_sample))
        for memory_id in sample:
            user, content = ledger.acked[memory_id]
            body = {"user_id": user, "query": content, "top_k": 5}
            results = http.post("/v1/retrieve", json=body).json().get("results", [])
            if memory_id not in {r["memory_id"] for r in results}:
                findings.unfindable.append(memory_id)
        findings.retrieved = len(sample)
        findings.lost = sorted(set(findings.lost))
    return findings


def check_index(data_dir: Path) -> tuple[int, dict[str, Any]]:
    """``hindsight check-index`` on the data directory (no server may hold it)."""
    done = subprocess.run(
        [str(HINDSIGHT), "--data-dir", str(data_dir), "check-index"],
        capture_output=True,
        text=True,
        env=server_env(),
        cwd=ROOT,
        timeout=START_TIMEOUT,
    )
    try:
        return done.returncode, json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise CrashLoopError(f"check-index said: {done.stdout}{done.stderr}") from exc
