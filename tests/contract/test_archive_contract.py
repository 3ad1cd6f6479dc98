"""Forgetting by use and the archive on every record store, with a fake clock."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hindsight.adapters.memory import InMemorySearchIndex
from hindsight.core.errors import ForbiddenError
from hindsight.core.indexing import index_document
from hindsight.core.models import FactStatus, ListQuery, Principal, SearchFilter
from hindsight.core.policy import Policy
from hindsight.core.ports import RecordStore
from hindsight.core.usecases.archive import ArchiveMemories
from tests.contract.builders import T0, episode, fact, text_vector
from tests.fakes import FixedClock

OWNER = Principal(tenant_id="t1")


class World:
    def __init__(self, records: RecordStore) -> None:
        self.records = records
        self.index = InMemorySearchIndex()
        self.clock = FixedClock(T0)
        self.archive = ArchiveMemories(self.records, self.index, self.clock, Policy())

    def put(self, memory) -> None:  # type: ignore[no-untyped-def]
        vector = text_vector(memory.content)
        self.records.put(memory, vector)
        self.index.upsert([index_document(memory, vector)])

    def indexed(self) -> set[str]:
        found = self.index.keyword_search(SearchFilter(tenant_id="t1", user_id="u1"), "talk", 50)
        return {hit.memory_id for hit in found}

    def listed(self, status: FactStatus | None = None) -> set[str]:
        statuses = None if status is None else frozenset({status})
        page = self.records.list("t1", "u1", ListQuery(statuses=statuses), 50)
        return {m.memory_id for m in page.items}


@pytest.fixture
def world(record_store: RecordStore) -> World:
    w = World(record_store)
    w.put(episode("plain", "we talk about the weather"))
    w.put(episode("pinned", "we talk about my passport number", pinned=True))
    w.put(episode("source", "we talk about peanuts, I am allergic"))
    w.put(episode("used", "we talk about the hiking trip"))
    w.put(episode("pending-source", "we talk about jazz"))
    w.records.put(fact("f-ok", source_memory_ids=["source"], status=FactStatus.APPROVED))
    w.records.put(fact("f-pending", source_memory_ids=["pending-source"]))
    return w


def test_nothing_is_archived_before_the_threshold(world: World) -> None:
    world.clock.advance(days=89)
    assert world.archive.archive_pass()["archived"] == 0
    assert world.listed(FactStatus.ARCHIVED) == set()


def test_unused_episodes_are_archived_after_90_days_with_exemptions(world: World) -> None:
    world.clock.advance(days=60)
    world.records.record_hits("t1", {"used": 1}, world.clock.now())  # a hit restarts it
    world.clock.advance(days=31)
    counts = world.archive.archive_pass()
    assert counts == {"users": 1, "episodes": 5, "archived": 2}
    assert world.listed(FactStatus.ARCHIVED) == {"plain", "pending-source"}
    # archived memories are kept (listed, readable) but out of the hot index
    assert world.listed() >= {"plain", "pending-source", "f-ok", "f-pending"}
    assert world.indexed() == {"pinned", "source", "used"}
    plain = world.records.get("t1", "plain")
    assert plain is not None
    assert plain.archived_at == world.clock.now()
    assert world.archive.archive_pass()["archived"] == 0  # idempotent


def test_a_restored_memory_is_searchable_and_not_archived_again_at_once(world: World) -> None:
    world.clock.advance(days=91)
    world.archive.archive_pass()
    answer = world.archive.restore(OWNER, "plain")
    assert answer["restored"] is True
    assert answer["memory"]["archived_at"] is None
    assert "plain" in world.indexed()
    assert "plain" not in world.listed(FactStatus.ARCHIVED)
    world.clock.advance(days=1)
    world.archive.archive_pass()
    assert "plain" in world.indexed()  # the restore counted as a use
    assert world.archive.restore(OWNER, "pinned")["restored"] is False


def test_restore_needs_write_access_to_the_scope(world: World) -> None:
    world.clock.advance(days=91)
    world.archive.archive_pass()
    reader = Principal(tenant_id="t1", write_scopes=frozenset({"other"}))
    with pytest.raises(ForbiddenError):
        world.archive.restore(reader, "plain")


def test_erase_user_erases_archived_memories_too(world: World) -> None:
    world.clock.advance(days=91)
    world.archive.archive_pass()
    world.records.erase_user("t1", "u1")
    assert world.records.get("t1", "plain") is None
    assert world.listed(FactStatus.ARCHIVED) == set()


def test_maintain_archives_then_compacts_what_has_files(world: World) -> None:
    world.clock.advance(days=91)
    counts = world.archive.maintain()
    assert counts["archived"] == 3  # "used" was not hit in this one
    compacted = any(name.startswith("records_") for name in counts)
    assert compacted == hasattr(world.records, "compact")


def test_a_stale_episode_weighs_less_in_ranking() -> None:
    from hindsight.core.lifecycle import use_weight

    policy = Policy()
    stale = episode("e", created_at=T0)
    assert use_weight(stale, T0 + timedelta(days=29), policy) == 1.0
    assert use_weight(stale, T0 + timedelta(days=30), policy) == policy.unused_weight
    hit = stale.model_copy(update={"last_hit_at": T0 + timedelta(days=20)})
    assert use_weight(hit, T0 + timedelta(days=30), policy) == 1.0
    pinned = stale.model_copy(update={"pinned": True})
    assert use_weight(pinned, T0 + timedelta(days=300), policy) == 1.0
    assert use_weight(fact("f"), T0 + timedelta(days=300), policy) == 1.0


def test_include_archived_searches_the_archive_from_the_store(world: World) -> None:
    from hindsight.core.commands import RetrieveCommand
    from hindsight.core.usecases.retrieve import RetrieveMemories
    from tests.contract.builders import EMBEDDER

    world.clock.advance(days=91)
    world.archive.archive_pass()
    retrieve = RetrieveMemories(world.records, world.index, EMBEDDER, world.clock, Policy())
    command = RetrieveCommand(user_id="u1", query="we talk about the weather")
    assert "plain" not in [r.memory_id for r in retrieve(OWNER, command).results]
    wide = retrieve(OWNER, command.model_copy(update={"include_archived": True})).results
    marked = {r.memory_id: r.archived for r in wide}
    assert marked["plain"] is True
    assert marked["source"] is False
