"""Access tracking on every record store: record_hits adds counts, never loses them."""

from __future__ import annotations

import threading

from hindsight.core.hit_log import HitLog
from hindsight.core.models import ListQuery
from hindsight.core.ports import RecordStore
from tests.contract.builders import at, episode, fact, text_vector
from tests.fakes import FixedClock


def test_hits_add_up_and_show_in_every_read(record_store: RecordStore) -> None:
    record_store.put(episode("e1"), text_vector("the user talked about the weather"))
    record_store.put(fact("f1"))
    record_store.record_hits("t1", {"e1": 2, "f1": 1}, at(10))
    record_store.record_hits("t1", {"e1": 1}, at(20))
    got = record_store.get("t1", "e1")
    assert got is not None
    assert (got.hit_count, got.last_hit_at) == (3, at(20))
    many = {m.memory_id: m for m in record_store.get_many("t1", ["e1", "f1"])}
    assert (many["f1"].hit_count, many["f1"].last_hit_at) == (1, at(10))
    listed = {
        m.memory_id: m.hit_count for m in record_store.list("t1", "u1", ListQuery(), 10).items
    }
    assert listed == {"e1": 3, "f1": 1}
    everything = {m.memory_id: m.hit_count for m, _ in record_store.iter_all("t1")}
    assert everything == {"e1": 3, "f1": 1}


def test_a_memory_never_hit_has_no_hits(record_store: RecordStore) -> None:
    record_store.put(episode("e1"))
    got = record_store.get("t1", "e1")
    assert got is not None
    assert (got.hit_count, got.last_hit_at) == (0, None)


def test_an_update_keeps_the_stores_counts(record_store: RecordStore) -> None:
    record_store.put(fact("f1"))
    stale = record_store.get("t1", "f1")  # read before the hits
    record_store.record_hits("t1", {"f1": 4}, at(5))
    assert stale is not None
    record_store.update(stale.model_copy(update={"content": "edited", "updated_at": at(6)}))
    got = record_store.get("t1", "f1")
    assert got is not None
    assert (got.content, got.hit_count, got.last_hit_at) == ("edited", 4, at(5))


def test_hits_of_deleted_or_other_tenants_memories_change_nothing(
    record_store: RecordStore,
) -> None:
    record_store.put(episode("e1"))
    record_store.put(episode("e2"))
    record_store.delete("t1", "e2")
    record_store.record_hits("t1", {"e1": 1, "e2": 5, "missing": 1}, at(1))
    record_store.record_hits("t2", {"e1": 7}, at(2))
    assert record_store.get("t1", "e2") is None
    assert record_store.get("t2", "e1") is None
    got = record_store.get("t1", "e1")
    assert got is not None
    assert got.hit_count == 1


def test_an_imported_memory_keeps_its_counts(record_store: RecordStore) -> None:
    record_store.put(episode("e1", hit_count=9, last_hit_at=at(3)))
    got = record_store.get("t1", "e1")
    assert got is not None
    assert (got.hit_count, got.last_hit_at) == (9, at(3))


def test_concurrent_flushes_lose_no_count(record_store: RecordStore) -> None:
    record_store.put(episode("e1"))
    writers = 4
    rounds = 5

    def flush_many() -> None:
        for _ in range(rounds):
            record_store.record_hits("t1", {"e1": 1}, at(1))

    threads = [threading.Thread(target=flush_many) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    got = record_store.get("t1", "e1")
    assert got is not None
    assert got.hit_count == writers * rounds


def test_the_hit_log_batches_notes_into_one_write_per_memory(record_store: RecordStore) -> None:
    record_store.put(episode("e1"))
    record_store.put(episode("e2"))
    clock = FixedClock(at(30))
    log = HitLog(record_store, clock)
    log.note("t1", ["e1", "e2"])
    log.note("t1", ["e1"])
    assert log.pending() == 2
    assert record_store.get("t1", "e1").hit_count == 0  # type: ignore[union-attr]
    assert log.flush() == 2
    assert log.pending() == 0
    e1 = record_store.get("t1", "e1")
    assert e1 is not None
    assert (e1.hit_count, e1.last_hit_at) == (2, at(30))
