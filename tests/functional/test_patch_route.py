"""PATCH /v1/memories/{memory_id} through the Lambda handler: pin, unpin, what is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from hindsight.bootstrap import build_memory_service, configure, rewire
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import FixedClock, HashingEmbedder
from tests.functional.conftest import GLOBEX_KEY, KEYS, _reflector, assert_error, call


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))


@pytest.fixture
def aging(clock: FixedClock) -> Iterator[MemoryService]:
    settings = Settings(backend="memory", api_keys=json.dumps(KEYS))
    built = build_memory_service(settings, embedder=HashingEmbedder(), reflector=_reflector())
    service = rewire(built, clock=clock)
    configure(settings, service)
    yield service
    configure()


def store(content: str, **fields: object) -> str:
    reply = call("POST", "/v1/memories", body={"user_id": "u1", "content": content, **fields})
    assert reply.status == 201, reply.body
    return str(reply.body["memory_id"])


def patch(memory_id: str, body: object, **kwargs: object):  # type: ignore[no-untyped-def]
    return call(
        "PATCH",
        "/v1/memories/{memory_id}",
        "forget",
        path_params={"memory_id": memory_id},
        body=body,
        **kwargs,
    )


def test_a_memory_pinned_by_patch_is_never_archived(
    aging: MemoryService, clock: FixedClock
) -> None:
    kept = store("the Lisbon passport office number")
    dropped = store("the hotel in Lisbon had a blue door")
    reply = patch(kept, {"pinned": True})
    assert reply.status == 200, reply.body
    assert reply.body["changed"] is True
    assert reply.body["memory"]["pinned"] is True
    assert patch(kept, {"pinned": True}).body["changed"] is False
    got = call("GET", "/v1/memories/{memory_id}", path_params={"memory_id": kept})
    assert got.body["memory"]["pinned"] is True

    clock.advance(days=91)
    assert aging.maintain()["archived"] == 1
    archived = call("GET", "/v1/memories/{memory_id}", path_params={"memory_id": dropped})
    assert archived.body["memory"]["archived_at"] is not None
    still = call("GET", "/v1/memories/{memory_id}", path_params={"memory_id": kept})
    assert still.body["memory"]["archived_at"] is None


def test_unpinning_lets_the_archive_take_it(aging: MemoryService, clock: FixedClock) -> None:
    memory_id = store("the passport office number", pinned=True)
    reply = patch(memory_id, {"pinned": False})
    assert reply.status == 200, reply.body
    assert reply.body["memory"]["pinned"] is False
    clock.advance(days=91)
    assert aging.maintain()["archived"] == 1


def test_what_the_patch_refuses(aging: MemoryService) -> None:
    memory_id = store("the passport office number")
    unknown = patch(memory_id, {"pinned": True, "content": "changed", "colour": "red"})
    assert_error(unknown, 422)
    assert "content" in unknown.body["message"] and "colour" in unknown.body["message"]
    assert_error(patch(memory_id, {}), 422)  # pinned is required
    assert_error(patch(memory_id, {"pinned": "maybe"}), 422)
    assert_error(patch(memory_id, {"pinned": True}, key=GLOBEX_KEY), 404)  # another tenant
    assert_error(patch("mem_nothing_here", {"pinned": True}), 404)
    got = call("GET", "/v1/memories/{memory_id}", path_params={"memory_id": memory_id})
    assert got.body["memory"]["pinned"] is False
    assert got.body["memory"]["content"] == "the passport office number"


def test_hindsight_serve_answers_the_same_route(aging: MemoryService) -> None:
    """The ASGI application of ``hindsight serve`` calls the same route function."""
    from starlette.testclient import TestClient

    from hindsight.server.app import create_app
    from tests.functional.conftest import ADMIN_KEY, READONLY_KEY

    memory_id = store("the passport office number")
    with TestClient(create_app()) as client:
        url = f"/v1/memories/{memory_id}"
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        reply = client.patch(url, json={"pinned": True}, headers=admin)
        assert reply.status_code == 200, reply.text
        assert reply.json()["memory"]["pinned"] is True
        reply = client.patch(url, json={"pinned": True, "scope": "x"}, headers=admin)
        assert reply.status_code == 422 and "scope" in reply.json()["message"]
        readonly = {"Authorization": f"Bearer {READONLY_KEY}"}
        assert client.patch(url, json={"pinned": False}, headers=readonly).status_code == 403
        other = {"Authorization": f"Bearer {GLOBEX_KEY}"}
        assert client.patch(url, json={"pinned": False}, headers=other).status_code == 404
