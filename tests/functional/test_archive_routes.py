"""The archive through the Lambda handlers: pinned on store, status=archived, restore."""

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


def listed(**query: str) -> list[str]:
    reply = call("GET", "/v1/users/{user_id}/memories", path_params={"user_id": "u1"}, query=query)
    assert reply.status == 200, reply.body
    return [m["memory_id"] for m in reply.body["results"]]


def found(query: str) -> list[str]:
    reply = call("POST", "/v1/retrieve", body={"user_id": "u1", "query": query})
    assert reply.status == 200, reply.body
    return [r["memory_id"] for r in reply.body["results"]]


def restore(memory_id: str, **kwargs: object):  # type: ignore[no-untyped-def]
    return call(
        "POST",
        "/v1/memories/{memory_id}/restore",
        "forget",
        path_params={"memory_id": memory_id},
        **kwargs,
    )


def test_archive_list_restore_and_erase(aging: MemoryService, clock: FixedClock) -> None:
    old = store("the hotel in Lisbon had a blue door")
    pinned = store("the Lisbon passport office number", pinned=True)
    got = call("GET", "/v1/memories/{memory_id}", path_params={"memory_id": pinned})
    assert got.body["memory"]["pinned"] is True
    clock.advance(days=91)
    counts = aging.maintain()
    assert counts["archived"] == 1
    assert listed(status="archived") == [old]
    assert set(found("Lisbon")) == {pinned}  # out of the hot index
    shown = call("GET", "/v1/memories/{memory_id}", path_params={"memory_id": old}).body
    assert shown["memory"]["archived_at"] is not None

    slow = call(
        "POST",
        "/v1/retrieve",
        body={"user_id": "u1", "query": "Lisbon blue door hotel", "include_archived": True},
    ).body["results"]
    marks = {r["memory_id"]: r["archived"] for r in slow}
    assert marks[old] is True and marks[pinned] is False  # found on request, and marked

    assert_error(restore(old, key=GLOBEX_KEY), 404)
    reply = restore(old)
    assert reply.status == 200, reply.body
    assert reply.body["restored"] is True
    assert reply.body["memory"]["archived_at"] is None
    assert set(found("Lisbon")) == {old, pinned}
    assert restore(old).body["restored"] is False
    assert listed(status="archived") == []

    clock.advance(days=1)
    aging.maintain()  # the restore counted as a use: not archived again at once
    assert listed(status="archived") == []
    clock.advance(days=91)
    aging.maintain()
    assert listed(status="archived") == [old]
    erased = call("DELETE", "/v1/users/{user_id}", path_params={"user_id": "u1"})
    assert erased.body["deleted"] == 2
    assert_error(restore(old), 404)
