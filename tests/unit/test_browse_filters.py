"""Listing filters the explorer uses (emotion, text, stored time, expiry, order) and the
reflection status, on the in-memory and the SQLite record stores: pages follow on from
each other through ``next_cursor`` without losing or repeating a memory."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.commands import ListMemoriesCommand, ReflectCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.service import MemoryService
from hindsight.core.usecases import browse
from tests.fakes import FixedClock, HashingEmbedder, ScriptedReflector, SequentialIds

ACME = Principal(tenant_id="acme")
EMOTIONS = ["happy", "calm", "happy", "sad", "happy", "calm", "happy", "happy", "sad", "happy"]


@pytest.fixture(params=["memory", "sqlite"])
def service(request: pytest.FixtureRequest, tmp_path: Path, clock: FixedClock) -> MemoryService:
    records = (
        InMemoryRecordStore() if request.param == "memory" else SqliteRecordStore(tmp_path / "r.db")
    )
    ports = local_ports(
        records,
        InMemorySearchIndex(),
        HashingEmbedder(),
        ScriptedReflector(),
        clock=clock,
        ids=SequentialIds(),
    )
    return assemble(ports, Policy())


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


def _seed(service: MemoryService, clock: FixedClock) -> list[str]:
    ids = []
    for number, emotion in enumerate(EMOTIONS):
        content = f"note {number} 花生" if number % 3 == 0 else f"Note {number} about tea"
        ttl = 3600 * (number + 1) if number in (2, 7) else None
        command = StoreMemoryCommand(
            user_id="u1",
            content=content,
            emotion=emotion,
            occurred_at=clock.now() - timedelta(days=30 - number),
            ttl_seconds=ttl,
        )
        ids.append(service.store(ACME, command).memory_id)
        clock.advance(minutes=1)
    return ids


def _pages(service: MemoryService, cursor: str | None = None, **filters: object) -> list[list[str]]:
    pages: list[list[str]] = []
    while True:
        command = ListMemoriesCommand(user_id="u1", cursor=cursor, **filters)
        page = service.list_memories(ACME, command)
        pages.append([m["memory_id"] for m in page.results])
        if not page.has_more:
            return pages
        cursor = page.next_cursor


def test_emotion_pages_follow_on_without_gaps(service: MemoryService, clock: FixedClock) -> None:
    ids = _seed(service, clock)
    happy = [i for i, e in zip(ids, EMOTIONS, strict=True) if e == "happy"]
    pages = _pages(service, emotion="happy", limit=2)
    assert [len(p) for p in pages[:-1]] == [2] * (len(pages) - 1)
    assert [i for p in pages for i in p] == list(reversed(happy))  # newest first
    oldest = _pages(service, emotion="happy", limit=4, order="oldest")
    assert [i for p in oldest for i in p] == happy


def test_text_is_case_insensitive_and_reads_chinese(
    service: MemoryService, clock: FixedClock
) -> None:
    ids = _seed(service, clock)
    assert _pages(service, text="花生", limit=50) == [[ids[9], ids[6], ids[3], ids[0]]]
    assert len(_pages(service, text="NOTE 1", limit=50)[0]) == 1


def test_stored_time_and_expiry(service: MemoryService, clock: FixedClock) -> None:
    start = clock.now()
    ids = _seed(service, clock)
    stored = _pages(
        service,
        stored_since=start + timedelta(minutes=2),
        stored_until=start + timedelta(minutes=5),
        order="oldest",
    )
    assert stored == [ids[2:5]]
    expiring = _pages(service, expires_before=clock.now() + timedelta(hours=4))
    assert expiring == [[ids[2]]]  # 3 h; the 8 h one (ids[7]) expires later
    clock.advance(hours=5)
    assert ids[2] not in _pages(service, limit=50)[0]  # expired: hidden
    assert ids[2] in _pages(service, limit=50, include_expired=True)[0]


def test_a_sparse_filter_stops_reading_at_the_scan_limit(
    service: MemoryService, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _seed(service, clock)
    monkeypatch.setattr(browse, "SCAN_LIMIT", 4)
    monkeypatch.setattr(browse, "SCAN_PAGE", 2)
    first = service.list_memories(ACME, ListMemoriesCommand(user_id="u1", emotion="sad"))
    assert [m["memory_id"] for m in first.results] == [ids[8]]  # read 4 newest: one sad
    assert first.has_more
    rest = _pages(service, emotion="sad", cursor=first.next_cursor)
    assert [i for p in rest for i in p] == [ids[3]]


def test_bad_filters_are_refused() -> None:
    with pytest.raises(ValueError, match="order"):
        ListMemoriesCommand(user_id="u1", order="sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="text"):
        ListMemoriesCommand(user_id="u1", text="")


def test_reflection_status_counts_the_waiting_episodes(
    service: MemoryService, clock: FixedClock
) -> None:
    before = service.reflection_status(ACME, "u1")
    assert before.cursor is None and before.episodes_waiting == 0
    _seed(service, clock)
    waiting = service.reflection_status(ACME, "u1")
    assert (waiting.cursor, waiting.episodes_waiting, waiting.episodes_waiting_more) == (
        None,
        len(EMOTIONS),
        False,
    )
    dry = service.reflect(ACME, ReflectCommand(user_id="u1", dry_run=True))
    assert service.reflection_status(ACME, "u1") == waiting  # a dry run moves nothing
    assert dry.dry_run
    done = service.reflect(ACME, ReflectCommand(user_id="u1"))
    after = service.reflection_status(ACME, "u1")
    assert after.cursor == done.cursor and after.cursor is not None
    assert after.episodes_waiting == 0
    assert service.reflection_status(Principal(tenant_id="globex"), "u1").cursor is None
