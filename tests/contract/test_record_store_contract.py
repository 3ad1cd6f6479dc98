"""The RecordStore contract: every implementation behaves exactly like this."""

from __future__ import annotations

import base64
import threading

import numpy as np
import pytest

from hindsight.core.errors import (
    ConflictError,
    DuplicateMemoryError,
    InvalidRequestError,
    NotFoundError,
)
from hindsight.core.models import FactStatus, ListQuery, MemoryKind
from hindsight.core.ports import RecordStore
from tests.contract.builders import at, episode, fact, rich_episode, text_vector

WINDOW = 3_600.0


def ids_of(page_items: list) -> list[str]:
    return [m.memory_id for m in page_items]


def list_all(store: RecordStore, query: ListQuery | None = None, user: str = "u1") -> list[str]:
    return ids_of(store.list("t1", user, query or ListQuery(), limit=1_000).items)


# --- basic reads and writes -------------------------------------------------------------
def test_put_then_get_round_trips_every_field(record_store: RecordStore) -> None:
    memory = rich_episode()
    semantic = fact(
        "f1",
        status=FactStatus.APPROVED,
        source_memory_ids=["m-rich"],
        topic="allergy",
        confidence="high",
    )
    record_store.put(memory, text_vector(memory.content))
    record_store.put(semantic)

    assert record_store.get("t1", "m-rich") == memory
    assert record_store.get("t1", "f1") == semantic
    assert record_store.get("t1", "absent") is None


def test_returned_memories_are_copies(record_store: RecordStore) -> None:
    record_store.put(episode("m1", metadata={"a": 1}))
    loaded = record_store.get("t1", "m1")
    assert loaded is not None
    loaded.metadata["a"] = 2
    assert record_store.get("t1", "m1").metadata == {"a": 1}  # type: ignore[union-attr]


def test_put_of_an_existing_id_conflicts(record_store: RecordStore) -> None:
    record_store.put(episode("m1", "first"))
    with pytest.raises(ConflictError):
        record_store.put(episode("m1", "second"))
    assert record_store.get("t1", "m1").content == "first"  # type: ignore[union-attr]


def test_get_many_keeps_the_order_given_and_skips_unknown(record_store: RecordStore) -> None:
    for memory_id in ("a", "b", "c"):
        record_store.put(episode(memory_id))
    record_store.put(episode("x", tenant_id="t2"))

    found = record_store.get_many("t1", ["c", "missing", "a", "x"])
    assert ids_of(found) == ["c", "a"]


def test_get_vectors_returns_model_and_values(record_store: RecordStore) -> None:
    vector = text_vector("peanuts")
    record_store.put(episode("m1"), vector)
    record_store.put(episode("m2"))

    found = record_store.get_vectors("t1", ["m1", "m2", "nope"])
    assert set(found) == {"m1"}
    assert found["m1"].model == vector.model
    assert found["m1"].values.dtype == np.float32
    np.testing.assert_array_equal(found["m1"].values, vector.values)
    assert record_store.get_vectors("t2", ["m1"]) == {}


def test_update_replaces_and_requires_existence(record_store: RecordStore) -> None:
    original = fact("f1", status=FactStatus.PENDING)
    record_store.put(original, text_vector(original.content))
    approved = original.model_copy(update={"status": FactStatus.APPROVED, "updated_at": at(5)})
    record_store.update(approved)

    assert record_store.get("t1", "f1") == approved
    assert set(record_store.get_vectors("t1", ["f1"])) == {"f1"}  # vector kept
    assert list_all(record_store, ListQuery(statuses=frozenset({FactStatus.APPROVED}))) == ["f1"]
    with pytest.raises(NotFoundError):
        record_store.update(fact("never-stored"))
    with pytest.raises(NotFoundError):
        record_store.update(original.model_copy(update={"tenant_id": "t2"}))


def test_update_with_a_vector_replaces_the_vector(record_store: RecordStore) -> None:
    original = fact("f1")
    record_store.put(original, text_vector(original.content))
    replacement = text_vector("something else entirely", model="other-model")
    record_store.update(original, replacement)

    stored = record_store.get_vectors("t1", ["f1"])["f1"]
    assert stored.model == "other-model"
    np.testing.assert_array_equal(stored.values, replacement.values)
    assert record_store.get("t1", "f1") == original


# --- tenant isolation -----------------------------------------------------------------
def test_another_tenants_ids_are_invisible(record_store: RecordStore) -> None:
    record_store.put(episode("m1", tenant_id="t1"), text_vector("x"))

    assert record_store.get("t2", "m1") is None
    assert record_store.get_many("t2", ["m1"]) == []
    assert record_store.list("t2", "u1", ListQuery(), limit=10).items == []
    assert record_store.delete("t2", "m1") is False
    assert record_store.erase_user("t2", "u1") == 0
    assert record_store.get("t1", "m1") is not None


def test_same_memory_id_in_two_tenants_are_two_memories(record_store: RecordStore) -> None:
    record_store.put(episode("m1", "one", tenant_id="t1"))
    record_store.put(episode("m1", "two", tenant_id="t2"))
    assert record_store.get("t1", "m1").content == "one"  # type: ignore[union-attr]
    assert record_store.get("t2", "m1").content == "two"  # type: ignore[union-attr]
    assert record_store.delete("t2", "m1") is True
    assert record_store.get("t1", "m1") is not None


# --- delete -------------------------------------------------------------------------------
def test_delete_removes_memory_and_vector(record_store: RecordStore) -> None:
    record_store.put(episode("m1"), text_vector("x"))
    assert record_store.delete("t1", "m1") is True
    assert record_store.get("t1", "m1") is None
    assert record_store.get_vectors("t1", ["m1"]) == {}
    assert record_store.delete("t1", "m1") is False
    assert record_store.iter_all() == []


# --- dedup ----------------------------------------------------------------------------
def test_duplicate_within_window_is_refused_with_the_existing_id(
    record_store: RecordStore,
) -> None:
    record_store.put(episode("m1", occurred_at=at(0)), None, "k", WINDOW)
    with pytest.raises(DuplicateMemoryError) as caught:
        record_store.put(episode("m2", occurred_at=at(59)), text_vector("y"), "k", WINDOW)

    assert caught.value.existing_memory_id == "m1"
    assert record_store.get("t1", "m2") is None
    assert record_store.get_vectors("t1", ["m2"]) == {}
    assert list_all(record_store) == ["m1"]


def test_duplicate_window_looks_both_ways_in_time(record_store: RecordStore) -> None:
    record_store.put(episode("m1", occurred_at=at(60)), None, "k", WINDOW)
    with pytest.raises(DuplicateMemoryError):
        record_store.put(episode("m2", occurred_at=at(30)), None, "k", WINDOW)


def test_same_key_outside_the_window_is_stored(record_store: RecordStore) -> None:
    record_store.put(episode("m1", occurred_at=at(0)), None, "k", WINDOW)
    record_store.put(episode("m2", occurred_at=at(61)), None, "k", WINDOW)
    # the marker now points at m2: a third copy close to m2 is its duplicate
    with pytest.raises(DuplicateMemoryError) as caught:
        record_store.put(episode("m3", occurred_at=at(70)), None, "k", WINDOW)
    assert caught.value.existing_memory_id == "m2"
    assert sorted(list_all(record_store)) == ["m1", "m2"]


def test_after_the_first_is_deleted_the_same_content_is_stored_again(
    record_store: RecordStore,
) -> None:
    record_store.put(episode("m1"), None, "k", WINDOW)
    record_store.delete("t1", "m1")
    record_store.put(episode("m2", occurred_at=at(1)), None, "k", WINDOW)
    assert list_all(record_store) == ["m2"]


def test_an_expired_original_does_not_block_a_new_copy(record_store: RecordStore) -> None:
    record_store.put(episode("m1", expires_at=at(5)), None, "k", WINDOW)
    record_store.put(episode("m2", occurred_at=at(10)), None, "k", WINDOW)
    assert record_store.get("t1", "m2") is not None


def test_dedup_keys_are_per_user_and_per_tenant(record_store: RecordStore) -> None:
    record_store.put(episode("m1", user_id="u1"), None, "k", WINDOW)
    record_store.put(episode("m2", user_id="u2"), None, "k", WINDOW)
    record_store.put(episode("m3", tenant_id="t2"), None, "k", WINDOW)
    assert record_store.get("t1", "m2") is not None
    assert record_store.get("t2", "m3") is not None


def test_without_a_key_nothing_is_deduplicated(record_store: RecordStore) -> None:
    record_store.put(episode("m1"))
    record_store.put(episode("m2"))
    assert sorted(list_all(record_store)) == ["m1", "m2"]


def test_racing_puts_of_one_key_create_exactly_one_memory(record_store: RecordStore) -> None:
    start = threading.Barrier(8)
    outcomes: list[str] = []
    lock = threading.Lock()

    def racer(number: int) -> None:
        memory = episode(f"m{number}", occurred_at=at(number / 60))
        start.wait()
        try:
            record_store.put(memory, text_vector(memory.memory_id), "same", WINDOW)
            result = f"stored:{memory.memory_id}"
        except DuplicateMemoryError as exc:
            result = f"duplicate:{exc.existing_memory_id}"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=racer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    stored = [o.split(":")[1] for o in outcomes if o.startswith("stored")]
    assert len(stored) == 1
    assert sorted(outcomes) == sorted([f"stored:{stored[0]}"] + [f"duplicate:{stored[0]}"] * 7)
    assert list_all(record_store) == stored


# --- expiry -------------------------------------------------------------------------------
def test_expired_memories_are_not_listed_but_can_be_read(record_store: RecordStore) -> None:
    record_store.put(episode("old", expires_at=at(10)))
    record_store.put(episode("edge", expires_at=at(20), occurred_at=at(1)))
    record_store.put(episode("live", expires_at=at(60 * 24), occurred_at=at(2)))
    record_store.put(episode("forever", occurred_at=at(3)))

    now = at(20)  # "edge" expires exactly now: expired
    assert list_all(record_store, ListQuery(now=now)) == ["forever", "live"]
    with_expired = ListQuery(now=now, include_expired=True)
    assert list_all(record_store, with_expired) == ["forever", "live", "edge", "old"]
    assert record_store.get("t1", "old") is not None
    assert len(list_all(record_store, ListQuery())) == 4  # no "now": nothing is judged


# --- paging -------------------------------------------------------------------------------
@pytest.mark.parametrize("oldest_first", [False, True])
def test_pages_cover_everything_once_in_order(
    record_store: RecordStore, oldest_first: bool
) -> None:
    # 23 memories, several sharing one occurred_at, so the keyset must break ties by id
    for n in range(23):
        record_store.put(episode(f"m{n:02d}", occurred_at=at(n // 3)))
    record_store.put(episode("other-user", user_id="u2"))

    query = ListQuery(oldest_first=oldest_first)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = record_store.list("t1", "u1", query, limit=5, cursor=cursor)
        assert len(page.items) <= 5
        seen.extend(ids_of(page.items))
        pages += 1
        if not page.has_more:
            break
        cursor = page.next_cursor
    expected = sorted(
        (f"m{n:02d}" for n in range(23)),
        key=lambda mid: (int(mid[1:]) // 3, mid),
        reverse=not oldest_first,
    )
    assert seen == expected
    assert pages == 5


def test_a_full_last_page_has_no_next_cursor(record_store: RecordStore) -> None:
    for n in range(4):
        record_store.put(episode(f"m{n}", occurred_at=at(n)))
    page = record_store.list("t1", "u1", ListQuery(), limit=4)
    assert len(page.items) == 4
    assert page.next_cursor is None


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage!!",
        base64.urlsafe_b64encode(b"[1, 2]").decode(),
        base64.urlsafe_b64encode(b'{"a": 1}').decode(),
        "",
    ],
)
def test_invalid_cursors_are_refused(record_store: RecordStore, cursor: str) -> None:
    record_store.put(episode("m1"))
    with pytest.raises(InvalidRequestError, match="next_cursor exactly as returned"):
        record_store.list("t1", "u1", ListQuery(), limit=5, cursor=cursor)


def test_a_cursor_of_the_other_direction_is_refused(record_store: RecordStore) -> None:
    for n in range(3):
        record_store.put(episode(f"m{n}", occurred_at=at(n)))
    cursor = record_store.list("t1", "u1", ListQuery(), limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(InvalidRequestError):
        record_store.list("t1", "u1", ListQuery(oldest_first=True), limit=1, cursor=cursor)


# --- list filters -------------------------------------------------------------------------
@pytest.fixture
def varied(record_store: RecordStore) -> RecordStore:
    record_store.put(
        episode("e1", scope="work", category="travel", session_id="s1", occurred_at=at(0))
    )
    record_store.put(
        episode(
            "e2",
            scope="global",
            category="food",
            session_id="s2",
            occurred_at=at(10),
            created_at=at(100),
        )
    )
    record_store.put(fact("f1", status=FactStatus.APPROVED, category="food", occurred_at=at(20)))
    record_store.put(fact("f2", status=FactStatus.PENDING, scope="work", occurred_at=at(30)))
    record_store.put(episode("u2", user_id="u2", occurred_at=at(5)))
    return record_store


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (ListQuery(), ["f2", "f1", "e2", "e1"]),
        (ListQuery(kinds=frozenset({MemoryKind.EPISODIC})), ["e2", "e1"]),
        (ListQuery(kinds=frozenset({MemoryKind.SEMANTIC})), ["f2", "f1"]),
        (ListQuery(statuses=frozenset({FactStatus.PENDING})), ["f2"]),
        (ListQuery(statuses=frozenset({FactStatus.APPROVED, FactStatus.PENDING})), ["f2", "f1"]),
        (ListQuery(categories=frozenset({"food"})), ["f1", "e2"]),
        (ListQuery(scopes=frozenset({"work"})), ["f2", "e1"]),
        (ListQuery(scopes=frozenset()), []),
        (ListQuery(session_id="s1"), ["e1"]),
        (ListQuery(since=at(10)), ["f2", "f1", "e2"]),
        (ListQuery(until=at(10)), ["e1"]),
        (ListQuery(since=at(10), until=at(30)), ["f1", "e2"]),
        (ListQuery(created_after=at(20)), ["f2", "e2"]),
        (ListQuery(oldest_first=True), ["e1", "e2", "f1", "f2"]),
        (
            ListQuery(kinds=frozenset({MemoryKind.EPISODIC}), scopes=frozenset({"global"})),
            ["e2"],
        ),
    ],
)
def test_list_filters(varied: RecordStore, query: ListQuery, expected: list[str]) -> None:
    assert list_all(varied, query) == expected
    assert list(varied.list_ids("t1", "u1", query, limit=1_000)) == expected
    assert list(varied.list_ids("t1", "u1", query, limit=2)) == expected[:2]


def test_list_ids_are_the_first_pages_ids(record_store: RecordStore) -> None:
    # ties on occurred_at broken by id; expired ones left out; ids that need escaping
    for n in range(7):
        record_store.put(episode(f"m#{n}%", occurred_at=at(n // 2), expires_at=at(60)))
    record_store.put(episode("gone", occurred_at=at(9), expires_at=at(10)))
    record_store.put(episode("other-user", user_id="u2", occurred_at=at(9)))
    record_store.put(episode("other-tenant", tenant_id="t2", occurred_at=at(9)))
    for query in (ListQuery(now=at(20)), ListQuery(now=at(20), oldest_first=True), ListQuery()):
        for limit in (1, 3, 8, 100):
            page = record_store.list("t1", "u1", query, limit=limit)
            assert list(record_store.list_ids("t1", "u1", query, limit)) == ids_of(page.items)
    assert list(record_store.list_ids("t1", "u1", ListQuery(now=at(20)), 2)) == ["m#6%", "m#5%"]
    assert list(record_store.list_ids("t1", "nobody", ListQuery(), 5)) == []


# --- erase_user and cursors ---------------------------------------------------------------
def test_erase_user_removes_only_that_user(record_store: RecordStore) -> None:
    for n in range(3):
        record_store.put(episode(f"a{n}", user_id="alice"), text_vector(f"a{n}"), f"k{n}", WINDOW)
    record_store.put(episode("b0", user_id="bob"), text_vector("b0"), "k0", WINDOW)
    record_store.put(episode("a-other-tenant", user_id="alice", tenant_id="t2"))
    record_store.set_cursor("t1", "alice", "reflection", at(1))
    record_store.set_cursor("t1", "bob", "reflection", at(2))

    assert record_store.erase_user("t1", "alice") == 3

    assert list_all(record_store, user="alice") == []
    assert record_store.get_vectors("t1", ["a0", "a1", "a2"]) == {}
    assert record_store.get_cursor("t1", "alice", "reflection") is None
    assert list_all(record_store, user="bob") == ["b0"]
    assert record_store.get_cursor("t1", "bob", "reflection") == at(2)
    assert record_store.get("t2", "a-other-tenant") is not None
    # alice's dedup markers are gone with her memories
    record_store.put(episode("a-again", user_id="alice"), None, "k0", WINDOW)
    assert record_store.erase_user("t1", "nobody") == 0


def test_cursors_are_per_tenant_user_and_name(record_store: RecordStore) -> None:
    assert record_store.get_cursor("t1", "u1", "reflection") is None
    record_store.set_cursor("t1", "u1", "reflection", at(1))
    record_store.set_cursor("t1", "u1", "reflection", at(2, seconds=0.000123))
    record_store.set_cursor("t1", "u1", "other", at(3))
    assert record_store.get_cursor("t1", "u1", "reflection") == at(2, seconds=0.000123)
    assert record_store.get_cursor("t1", "u1", "other") == at(3)
    assert record_store.get_cursor("t2", "u1", "reflection") is None
    assert record_store.get_cursor("t1", "u2", "reflection") is None


# --- iter_all and users_with_episodes_since -------------------------------------------------
def test_iter_all_yields_every_memory_with_its_vector(record_store: RecordStore) -> None:
    record_store.put(episode("m1"), text_vector("one"))
    record_store.put(fact("f1"))
    record_store.put(episode("m2", tenant_id="t2"), text_vector("two"))

    everything = {(m.tenant_id, m.memory_id): v for m, v in record_store.iter_all()}
    assert set(everything) == {("t1", "m1"), ("t1", "f1"), ("t2", "m2")}
    assert everything[("t1", "f1")] is None
    np.testing.assert_array_equal(everything[("t1", "m1")].values, text_vector("one").values)
    assert [m.memory_id for m, _ in record_store.iter_all("t2")] == ["m2"]


def test_users_with_episodes_since(record_store: RecordStore) -> None:
    record_store.put(episode("old", user_id="u1", created_at=at(0)))
    record_store.put(episode("new", user_id="u2", created_at=at(60)))
    record_store.put(episode("new2", user_id="u2", created_at=at(61)))
    record_store.put(episode("other", user_id="u3", tenant_id="t2", created_at=at(90)))
    record_store.put(fact("fact-only", user_id="u4", created_at=at(90)))
    record_store.put(episode("edge", user_id="u5", created_at=at(30)))

    assert record_store.users_with_episodes_since(at(30)) == [("t1", "u2"), ("t2", "u3")]
    assert record_store.users_with_episodes_since(at(200)) == []
