"""Idempotency-Key over real HTTP on both local servers (embedded store, records in
``<data dir>/idempotency.db``): a retried store gets the first answer and stores nothing."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.conftest import E2E_KEY, SERVERS, Server, own_server

HEADERS = {"Authorization": f"Bearer {E2E_KEY}"}


@pytest.fixture(scope="module", params=SERVERS)
def running(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    kind = str(request.param)
    with own_server(kind, tmp_path_factory.mktemp(f"hindsight-idempotent-{kind}")) as server:
        yield server


def test_a_retried_store_is_answered_once(running: Server) -> None:
    body = {"user_id": "idem", "content": "the boiler was serviced on Monday"}
    headers = {**HEADERS, "Idempotency-Key": "e2e-retry-1"}
    with httpx.Client(base_url=running.url, timeout=120) as http:
        first = http.post("/v1/memories", json=body, headers=headers)
        again = http.post("/v1/memories", json=body, headers=headers)
        other = http.post(
            "/v1/memories", json={**body, "content": "another thing"}, headers=headers
        )
        listed = http.get("/v1/users/idem/memories", headers=HEADERS)
    assert first.status_code == again.status_code == 201, first.text
    assert again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert other.status_code == 422 and "Idempotency-Key" in other.json()["message"]
    assert [m["memory_id"] for m in listed.json()["results"]] == [first.json()["memory_id"]]
