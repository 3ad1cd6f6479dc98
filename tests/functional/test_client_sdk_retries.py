"""The client's retries, timeouts and error mapping against a scripted loopback server.

The server answers from a script (a status with headers and body, a dropped connection,
or a slow answer), records what it was sent, and lets each test check how many attempts
the client made and how long it waited.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from hindsight_client import (
    AsyncHindsight,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    Hindsight,
    HindsightConnectionError,
    HindsightError,
    HindsightTimeoutError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitedError,
    ServerError,
    UnavailableError,
)
from hindsight_client._calls import RetryPolicy, retry_after_seconds

HEALTH = {
    "status": "success",
    "embedding_model": "scripted",
    "embedding_dimension": 3,
    "reflector": "none",
    "indexed_documents": 0,
}
STORED = {"status": "success", "memory_id": "mem_1"}
PAGE = {
    "status": "success",
    "results": [],
    "has_more": False,
    "next_cursor": None,
    "partial": False,
}
UNAVAILABLE = {"status": "error", "message": "the index is unavailable; retry in a moment"}


@dataclass
class Answer:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False  # close the connection without answering
    delay: float = 0.0


class ScriptedServer:
    def __init__(self) -> None:
        self.script: list[Answer] = []
        self.requests: list[tuple[str, str, Any]] = []
        self.idempotency_keys: list[str | None] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                outer.requests.append((self.command, self.path, json.loads(raw) if raw else None))
                outer.idempotency_keys.append(self.headers.get("Idempotency-Key"))
                answer = (
                    outer.script.pop(0)
                    if outer.script
                    else Answer(500, {"status": "error", "message": "script ran out"})
                )
                time.sleep(answer.delay)
                if answer.drop:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                payload = json.dumps(answer.body).encode() if answer.body is not None else b""
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = _answer

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    running = ScriptedServer()
    yield running
    running.stop()


def client(server: ScriptedServer, **options: Any) -> Hindsight:
    options.setdefault("backoff", 0.01)
    return Hindsight(server.url, "k", **options)


def test_503_then_200_is_retried_until_it_succeeds(server: ScriptedServer) -> None:
    server.script = [Answer(503, UNAVAILABLE), Answer(503, UNAVAILABLE), Answer(200, HEALTH)]
    with client(server) as memory:
        assert memory.health().embedding_model == "scripted"
    assert len(server.requests) == 3


def test_a_store_answered_503_is_retried_because_nothing_was_written(
    server: ScriptedServer,
) -> None:
    server.script = [Answer(503, UNAVAILABLE), Answer(201, STORED)]
    with client(server) as memory:
        assert memory.store("u1", "hello", category="greeting").memory_id == "mem_1"
    assert [r[2] for r in server.requests] == [
        {"user_id": "u1", "content": "hello", "category": "greeting"}
    ] * 2


def test_retry_after_is_honoured(server: ScriptedServer) -> None:
    server.script = [
        Answer(429, {"status": "error", "message": "slow down"}, {"Retry-After": "1"}),
        Answer(200, HEALTH),
    ]
    with client(server, backoff=0.0) as memory:
        started = time.monotonic()
        memory.health()
        waited = time.monotonic() - started
    assert 1.0 <= waited < 3.0


def test_retries_give_up_with_the_last_error(server: ScriptedServer) -> None:
    server.script = [Answer(503, UNAVAILABLE)] * 3
    with client(server, max_retries=2) as memory, pytest.raises(UnavailableError) as failed:
        memory.retrieve("u1", "anything")
    assert failed.value.status == 503 and failed.value.message == UNAVAILABLE["message"]
    assert len(server.requests) == 3


def test_a_lost_answer_is_retried_with_the_same_idempotency_key(server: ScriptedServer) -> None:
    server.script = [Answer(drop=True), Answer(200, PAGE)]
    with client(server) as memory:
        assert memory.retrieve("u1", "anything").results == []
    assert len(server.requests) == 2

    server.requests.clear()
    server.idempotency_keys.clear()
    server.script = [Answer(drop=True), Answer(201, STORED)]
    with client(server) as memory:
        assert memory.store("u1", "may have been stored").memory_id == "mem_1"
    # the retry carries the first attempt's key: the server answers it with the first
    # answer instead of storing the memory twice
    assert len(server.requests) == 2
    first, again = server.idempotency_keys
    assert first and first == again
    assert server.requests[0] == server.requests[1]


def test_a_store_still_running_is_asked_again_with_its_key(server: ScriptedServer) -> None:
    still_running = {"status": "error", "message": "still being processed; retry"}
    server.script = [Answer(409, still_running, {"Retry-After": "0"}), Answer(201, STORED)]
    with client(server) as memory:
        assert memory.store("u1", "a slow first attempt").memory_id == "mem_1"
    first, again = server.idempotency_keys
    assert first and first == again


def test_a_conflict_without_retry_after_is_not_retried(server: ScriptedServer) -> None:
    conflict = {"status": "error", "message": "only semantic memories can be reviewed"}
    server.script = [Answer(409, conflict), Answer(201, STORED)]
    with client(server) as memory, pytest.raises(ConflictError) as raised:
        memory.store("u1", "x")
    assert raised.value.message == conflict["message"] and len(server.requests) == 1


def test_each_write_has_its_own_idempotency_key(server: ScriptedServer) -> None:
    batch = {"status": "success", "results": [STORED]}
    server.script = [Answer(201, STORED), Answer(201, STORED), Answer(200, batch)]
    with client(server) as memory:
        memory.store("u1", "one")
        memory.store("u1", "two")
        memory.store_many("u1", ["three"])
    keys = server.idempotency_keys
    assert len(keys) == 3 and all(keys) and len(set(keys)) == 3


def test_a_gateway_error_is_retried_for_reads_and_keyed_writes(server: ScriptedServer) -> None:
    bad_gateway = Answer(502, {"status": "error", "message": "bad gateway"})
    server.script = [bad_gateway, Answer(200, PAGE)]
    with client(server) as memory:
        memory.retrieve("u1", "anything")
    server.script = [bad_gateway, Answer(201, STORED)]
    with client(server) as memory:
        assert memory.store("u1", "x").memory_id == "mem_1"
    assert len(server.requests) == 4
    assert server.idempotency_keys[2] == server.idempotency_keys[3] is not None


def test_a_slow_answer_is_a_timeout(server: ScriptedServer) -> None:
    server.script = [Answer(201, STORED, delay=1.0)]
    options = {"timeout": 0.3, "max_retries": 0}  # a keyed store would be tried again
    with client(server, **options) as memory, pytest.raises(HindsightTimeoutError) as failed:
        memory.store("u1", "slow")
    assert failed.value.status is None and "timeout" in failed.value.message
    assert len(server.requests) == 1


def test_an_erase_waits_longer_than_the_client_timeout(server: ScriptedServer) -> None:
    """An erase rewrites the user's files on the server; it may take longer than other
    calls, so it waits at least ERASE_TIMEOUT whatever the client's timeout (sync and
    async), while another call with the same slow answer still times out."""
    erased = {"status": "success", "user_id": "u1", "deleted": 3}
    options = {"timeout": 0.3, "max_retries": 0}
    server.script = [Answer(200, erased, delay=0.8)]
    with client(server, **options) as memory:
        assert memory.erase_user("u1").deleted == 3
        server.script = [Answer(200, HEALTH, delay=0.8)]
        with pytest.raises(HindsightTimeoutError):
            memory.health()

    async def erase() -> int:
        async with AsyncHindsight(server.url, "k", **options) as memory:
            return (await memory.erase_user("u1")).deleted

    server.script = [Answer(200, erased, delay=0.8)]
    assert asyncio.run(erase()) == 3


def test_a_refused_connection_is_retried_even_for_a_store() -> None:
    with Hindsight("http://127.0.0.1:9", max_retries=2, backoff=0.01) as memory:
        started = time.monotonic()
        with pytest.raises(HindsightConnectionError):
            memory.store("u1", "never sent")
        assert time.monotonic() - started >= 0.01 / 2 + 0.02 / 2  # two waits, each ≥ half


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (409, ConflictError),
        (413, PayloadTooLargeError),
        (422, InvalidRequestError),
        (429, RateLimitedError),
        (500, ServerError),
        (503, UnavailableError),
        (418, HindsightError),
    ],
)
def test_each_error_status_is_its_exception(
    server: ScriptedServer, status: int, error: type[HindsightError]
) -> None:
    message = f"what to do about {status}"
    server.script = [Answer(status, {"status": "error", "message": message})]
    with client(server, max_retries=0) as memory, pytest.raises(error) as raised:
        memory.get("mem_1")
    assert raised.value.status == status and raised.value.message == message
    assert str(status) in str(raised.value)


def test_an_error_without_a_json_body_keeps_its_text(server: ScriptedServer) -> None:
    server.script = [Answer(404, None)]
    with client(server, max_retries=0) as memory, pytest.raises(NotFoundError) as raised:
        memory.delete("mem_1")
    assert raised.value.message  # the reason phrase when there is no body


def test_ids_in_paths_are_escaped(server: ScriptedServer) -> None:
    server.script = [
        Answer(
            200,
            {
                "status": "success",
                "memory": {"memory_id": "a/b", "kind": "episodic", "content": "x"},
            },
        )
    ]
    with client(server) as memory:
        assert memory.get("a/b").memory_id == "a/b"
    assert server.requests[0][1] == "/v1/memories/a%2Fb"


def test_the_async_client_retries_the_same_way(server: ScriptedServer) -> None:
    server.script = [
        Answer(503, UNAVAILABLE),
        Answer(429, {"status": "error", "message": "later"}, {"Retry-After": "0"}),
        Answer(200, HEALTH),
    ]

    async def health() -> str:
        async with AsyncHindsight(server.url, backoff=0.01) as memory:
            return (await memory.health()).reflector

    assert asyncio.run(health()) == "none"
    assert len(server.requests) == 3


def test_backoff_grows_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(backoff=0.5, max_backoff=4.0)
    for attempt, ceiling in enumerate([0.5, 1.0, 2.0, 4.0, 4.0]):
        delays = {policy.delay(attempt) for _ in range(50)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jittered
    assert policy.delay(0, retry_after=7.5) == 7.5
    assert policy.delay(0, retry_after=3600) == policy.max_retry_after


def test_retry_after_as_an_http_date() -> None:
    later = datetime.now(UTC) + timedelta(seconds=30)
    response = httpx.Response(503, headers={"Retry-After": format_datetime(later, usegmt=True)})
    assert 25 <= (retry_after_seconds(response) or 0) <= 31
    assert retry_after_seconds(httpx.Response(503, headers={"Retry-After": "soon"})) is None
    assert retry_after_seconds(httpx.Response(503)) is None
