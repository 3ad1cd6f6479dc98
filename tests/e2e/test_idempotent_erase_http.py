"""Erasing a user over real HTTP also forgets the answers kept for their retried stores:
the Idempotency-Key records (``<data dir>/idempotency.db``) hold the first answer (the
memory id, the time expressions found in the content), so after DELETE
/v1/users/{user_id} none of them names the user or their memory, and a retry stores again."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import E2E_KEY, SERVERS, Server, own_server

HEADERS = {"Authorization": f"Bearer {E2E_KEY}"}


@pytest.fixture(scope="module", params=SERVERS)
def running(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, Path]]:
    kind = str(request.param)
    data_dir = tmp_path_factory.mktemp(f"hindsight-idempotent-erase-{kind}")
    with own_server(kind, data_dir) as server:
        yield server, data_dir


def kept_answers(data_dir: Path, text: str) -> list[str]:
    conn = sqlite3.connect(f"file:{data_dir / 'idempotency.db'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT data FROM idempotency").fetchall()
    finally:
        conn.close()
    return [data for (data,) in rows if text in (data or "")]


def test_erasing_a_user_forgets_their_kept_answers(running: tuple[Server, Path]) -> None:
    server, data_dir = running
    mine = {"user_id": "erased-one", "content": "my dentist appointment is next Friday"}
    theirs = {"user_id": "kept-one", "content": "the boiler was serviced on Monday"}
    with httpx.Client(base_url=server.url, timeout=120) as http:
        first = http.post("/v1/memories", json=mine, headers={**HEADERS, "Idempotency-Key": "e-1"})
        kept = http.post("/v1/memories", json=theirs, headers={**HEADERS, "Idempotency-Key": "k-1"})
        assert first.status_code == kept.status_code == 201, first.text
        memory_id = first.json()["memory_id"]
        assert kept_answers(data_dir, memory_id)  # the answer names the memory
        assert kept_answers(data_dir, "next Friday")  # and what it found in the content

        erased = http.delete("/v1/users/erased-one", headers=HEADERS)
        assert erased.status_code == 200, erased.text
        for text in (memory_id, "next Friday", "erased-one"):
            assert kept_answers(data_dir, text) == [], text
        assert kept_answers(data_dir, kept.json()["memory_id"])

        # the erased user's retry stores again; the other user's is still replayed
        again = http.post("/v1/memories", json=mine, headers={**HEADERS, "Idempotency-Key": "e-1"})
        replay = http.post(
            "/v1/memories", json=theirs, headers={**HEADERS, "Idempotency-Key": "k-1"}
        )
    assert again.status_code == 201 and "idempotent-replayed" not in again.headers
    assert again.json()["memory_id"] != memory_id
    assert replay.headers["idempotent-replayed"] == "true"
    assert replay.json() == kept.json()
