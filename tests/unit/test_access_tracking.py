"""Retrieve (and context) count a hit for every memory they return, written behind."""

from __future__ import annotations

from hindsight.adapters.aws.dynamodb_record_store.hits import only_hits_changed
from hindsight.core.commands import (
    ContextCommand,
    ListMemoriesCommand,
    ReflectCommand,
    RetrieveCommand,
    StoreMemoryCommand,
)


def store(service, principal, content):
    return service.store(principal, StoreMemoryCommand(user_id="u1", content=content)).memory_id


def test_retrieved_memories_count_hits_after_the_flush(service, principal, clock):
    peanuts = store(service, principal, "I am allergic to peanuts")
    weather = store(service, principal, "the weather was fine on the hike")
    result = service.retrieve(principal, RetrieveCommand(user_id="u1", query="peanuts", top_k=1))
    assert [r.memory_id for r in result.results] == [peanuts]
    # nothing written on the retrieve path: the counts wait for the flush
    assert service.get_memory(principal, peanuts)["memory"]["hit_count"] == 0
    clock.advance(minutes=1)
    service.retrieve(principal, RetrieveCommand(user_id="u1", query="peanuts", top_k=1))
    assert service.flush_hits() == 1
    shown = service.get_memory(principal, peanuts)["memory"]
    assert shown["hit_count"] == 2
    assert shown["last_hit_at"] == clock.now().isoformat().replace("+00:00", "Z")
    listed = service.list_memories(principal, ListMemoriesCommand(user_id="u1")).results
    assert {m["memory_id"]: m["hit_count"] for m in listed} == {peanuts: 2, weather: 0}


def test_context_counts_the_turns_and_facts_it_shows(service, principal, reflector):
    command = StoreMemoryCommand(user_id="u1", content="I am allergic to peanuts", session_id="s1")
    turn = service.store(principal, command).memory_id
    reflector.when("peanuts", "The user is allergic to peanuts", "constraint", "high")
    [fact] = service.reflect(principal, ReflectCommand(user_id="u1")).created
    service.approve(principal, fact["memory_id"])
    service.context(principal, ContextCommand(user_id="u1", session_id="s1"))
    service.flush_hits()
    assert service.get_memory(principal, turn)["memory"]["hit_count"] == 1
    assert service.get_memory(principal, fact["memory_id"])["memory"]["hit_count"] == 1


def test_the_stream_indexer_skips_a_change_of_counts_only():
    old = {"pk": "p", "body": "{}", "hit_count": 1}
    assert only_hits_changed(old, {**old, "hit_count": 2, "last_hit_us": 5})
    assert not only_hits_changed(old, {**old, "body": '{"x": 1}'})
    assert not only_hits_changed({}, old)  # an INSERT-like image: index it


def test_a_failed_flush_keeps_its_counts_for_the_next(clock):
    from hindsight.adapters.memory import InMemoryRecordStore
    from hindsight.core.errors import UnavailableError
    from hindsight.core.hit_log import HitLog
    from tests.contract.builders import episode

    class FlakyStore(InMemoryRecordStore):
        down = True

        def record_hits(self, tenant_id, hits, at):
            if self.down:
                raise UnavailableError("the store is down")
            super().record_hits(tenant_id, hits, at)

    records = FlakyStore()
    records.put(episode("e1"))
    log = HitLog(records, clock)
    log.note("t1", ["e1", "e1"])
    assert log.flush() == 0
    assert log.pending() == 1
    log.note("t1", ["e1"])
    records.down = False
    assert log.flush() == 1
    assert records.get("t1", "e1").hit_count == 3


def test_the_background_thread_flushes_and_stop_flushes_the_rest(clock):
    import threading

    from hindsight.adapters.memory import InMemoryRecordStore
    from hindsight.core.hit_log import HitLog
    from tests.contract.builders import episode

    records = InMemoryRecordStore()
    records.put(episode("e1"))
    log = HitLog(records, clock, flush_seconds=0.01).start()
    log.note("t1", ["e1"])
    for _ in range(200):
        if records.get("t1", "e1").hit_count == 1:
            break
        threading.Event().wait(0.01)
    assert records.get("t1", "e1").hit_count == 1
    log.note("t1", ["e1"])
    log.stop()
    assert records.get("t1", "e1").hit_count == 2
