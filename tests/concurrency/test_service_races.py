"""Thread races over the service facade, on the embedded and the in-memory backend.

Each test lets real threads race through ``MemoryService`` (store, batch, retrieve,
delete, reflect, erase) and then checks what must hold whatever the interleaving: the
record store and the search index agree, a duplicate is stored once, what was
acknowledged is found and what was deleted or erased is not.
"""

from __future__ import annotations

import contextlib
import random
import string
import threading
import time
from typing import Any

from hindsight.core.commands import (
    BatchItem,
    ReflectCommand,
    RetrieveCommand,
    StoreBatchCommand,
)
from hindsight.core.errors import NotFoundError
from hindsight.core.models import MemoryKind
from hindsight.core.service import MemoryService
from tests.concurrency.conftest import PRINCIPAL, index_ids, race, record_ids, store

WORD = "orchard"  # in every memory these tests store, so one query reaches them all


def words(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct made-up words: each one finds exactly the memory that holds it."""
    made: set[str] = set()
    while len(made) < count:
        made.add("".join(rng.choice(string.ascii_lowercase) for _ in range(9)))
    return sorted(made)


def batch(service: MemoryService, user_id: str, contents: list[str]) -> list[Any]:
    items = [BatchItem(content=content) for content in contents]
    return service.store_batch(PRINCIPAL, StoreBatchCommand(user_id=user_id, items=items))


def retrieve(service: MemoryService, user_id: str, query: str, top_k: int = 10) -> list[str]:
    result = service.retrieve(PRINCIPAL, RetrieveCommand(user_id=user_id, query=query, top_k=top_k))
    return [r.memory_id for r in result.results]


def reflect(service: MemoryService, user_id: str) -> Any:
    return service.reflect(PRINCIPAL, ReflectCommand(user_id=user_id))


def assert_in_step(service: MemoryService, user_id: str) -> set[str]:
    """The user's memories in the record store are exactly the documents in the index:
    nothing stored but unfindable, nothing findable that is not stored."""
    stored = record_ids(service, user_id)
    assert index_ids(service, user_id) == stored
    return stored


def test_racing_duplicates_make_exactly_one_memory(service: MemoryService) -> None:
    for round_number in range(4):
        content = f"We planted apple trees in the {WORD}, row {round_number}"

        def alone(content: str = content) -> str:
            return store(service, "dup", content).memory_id

        def in_a_batch(n: int, content: str = content, round_number: int = round_number) -> str:
            outcomes = batch(service, "dup", [content, f"{WORD} note {round_number}-{n}"])
            return outcomes[0].memory_id

        ids = race(*[alone] * 6, *[lambda n=n: in_a_batch(n) for n in range(3)])
        assert len(set(ids)) == 1, ids  # every request names the one memory
        stored = assert_in_step(service, "dup")
        assert ids[0] in stored
    memories = service.ports.records.get_many(PRINCIPAL.tenant_id, sorted(stored))
    contents = [m.content for m in memories if "apple" in m.content]
    assert len(contents) == len(set(contents)) == 4


def test_a_store_acknowledged_before_a_retrieve_is_found_by_it(
    service: MemoryService, rng: random.Random
) -> None:
    unique = words(rng, 48)
    acknowledged: list[tuple[str, str]] = []
    guard = threading.Lock()

    def writer(chunk: list[str]) -> None:
        for word in chunk:
            outcome = store(service, "rw", f"{WORD} diary entry about {word}")
            with guard:
                acknowledged.append((word, outcome.memory_id))

    def batch_writer(chunk: list[str]) -> None:
        for start in range(0, len(chunk), 4):
            part = chunk[start : start + 4]
            outcomes = batch(service, "rw", [f"{WORD} batch entry about {w}" for w in part])
            with guard:
                acknowledged.extend(zip(part, [o.memory_id for o in outcomes], strict=True))

    def reader(seed: int) -> int:
        local = random.Random(seed)
        checked = 0
        deadline = time.monotonic() + 10
        while checked < 25 and time.monotonic() < deadline:
            with guard:
                known = list(acknowledged)
            if not known:
                time.sleep(0.001)
                continue
            word, memory_id = local.choice(known)
            assert memory_id in retrieve(service, "rw", word, top_k=5), (word, memory_id)
            checked += 1
        return checked

    results = race(
        lambda: writer(unique[:16]),
        lambda: writer(unique[16:32]),
        lambda: batch_writer(unique[32:]),
        lambda: reader(1),
        lambda: reader(2),
    )
    assert results[3] > 0 and results[4] > 0
    assert assert_in_step(service, "rw") == {memory_id for _, memory_id in acknowledged}


def test_a_deleted_memory_is_never_returned_after_its_delete(
    service: MemoryService, rng: random.Random
) -> None:
    ids = [store(service, "dw", f"{WORD} plot {word}").memory_id for word in words(rng, 40)]
    doomed = rng.sample(ids, 30)
    deleted: set[str] = set()
    guard = threading.Lock()

    def deleter(part: list[str]) -> None:
        for memory_id in part:
            service.delete_memory(PRINCIPAL, memory_id)
            with guard:
                deleted.add(memory_id)

    def reader() -> None:
        for _ in range(30):
            with guard:
                gone = set(deleted)
            returned = set(retrieve(service, "dw", WORD, top_k=20))
            assert not returned & gone, returned & gone

    race(lambda: deleter(doomed[:15]), lambda: deleter(doomed[15:]), reader, reader)
    assert assert_in_step(service, "dw") == set(ids) - set(doomed)


def test_erase_while_store_leaves_nothing_of_the_user_or_the_whole_store(
    service: MemoryService, rng: random.Random
) -> None:
    for round_number in range(8):
        user = f"erased-{round_number}"
        before = {store(service, user, f"{WORD} before {n}").memory_id for n in range(3)}
        pause = rng.uniform(0.0, 0.015)

        def batch_store(user: str = user) -> set[str]:
            outcomes = batch(service, user, [f"{WORD} racing {n}" for n in range(40)])
            return {o.memory_id for o in outcomes}

        def single_stores(user: str = user) -> list[str]:
            return [store(service, user, f"{WORD} single {n}").memory_id for n in range(6)]

        def erase(user: str = user, pause: float = pause) -> None:
            time.sleep(pause)
            service.erase_user(PRINCIPAL, user)

        batched, singles, _ = race(batch_store, single_stores, erase)
        stored = assert_in_step(service, user)
        assert not stored & before  # acknowledged before the erase began: gone
        assert batched <= stored or not batched & stored  # the batch landed whole or not at all
        assert stored <= batched | set(singles)


def test_concurrent_reflections_of_one_user_never_make_a_fact_twice(
    service: MemoryService,
) -> None:
    for round_number in range(3):
        store(service, "refl", f"I have a peanut allergy, note {round_number}")
        results = race(*[lambda: reflect(service, "refl")] * 4)
        facts = record_ids(service, "refl", MemoryKind.SEMANTIC)
        assert len(facts) == 1, facts
        created = sum(len(result.created) for result in results)
        assert created == (1 if round_number == 0 else 0)
    assert_in_step(service, "refl")


def test_a_reflection_racing_an_erase_leaves_nothing_of_the_user(
    service: MemoryService, rng: random.Random
) -> None:
    for round_number in range(4):
        user = f"forgotten-{round_number}"
        store(service, user, "I am allergic to peanut butter")
        pause = rng.uniform(0.0, 0.08)  # the reflector takes 0.05 s

        def reflection(user: str = user) -> None:
            with contextlib.suppress(NotFoundError):  # its facts were erased meanwhile
                reflect(service, user)

        def erase(user: str = user, pause: float = pause) -> None:
            time.sleep(pause)
            service.erase_user(PRINCIPAL, user)

        race(reflection, erase)
        assert assert_in_step(service, user) == set()


def test_users_racing_each_other_stay_in_step(service: MemoryService, rng: random.Random) -> None:
    users = ["ann", "bob", "cai", "dee"]
    seeds = [rng.randrange(1 << 30) for _ in users]

    def life(user: str, seed: int) -> None:
        local = random.Random(seed)
        mine: list[str] = []
        for step in range(30):
            action = local.choice(["store", "store", "batch", "retrieve", "delete", "reflect"])
            if action == "store":
                mine.append(store(service, user, f"{WORD} peanut day {step}").memory_id)
            elif action == "batch":
                contents = [f"{WORD} walk {step}-{n}" for n in range(local.randint(2, 12))]
                mine.extend(o.memory_id for o in batch(service, user, contents))
            elif action == "retrieve":
                retrieve(service, user, f"{WORD} walk")
            elif action == "delete" and mine:
                service.delete_memory(PRINCIPAL, mine.pop(local.randrange(len(mine))))
            elif action == "reflect":
                reflect(service, user)

    race(*[lambda u=u, s=s: life(u, s) for u, s in zip(users, seeds, strict=True)])
    for user in users:
        assert_in_step(service, user)
        facts = service.ports.records.get_many(
            PRINCIPAL.tenant_id, sorted(record_ids(service, user, MemoryKind.SEMANTIC))
        )
        assert len({f.content for f in facts}) == len(facts)  # no fact twice
