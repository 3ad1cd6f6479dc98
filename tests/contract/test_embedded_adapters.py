"""What only the embedded (file-backed) adapters promise: persistence, rebuilds, errors."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.core.errors import (
    DuplicateMemoryError,
    EmbeddingModelMismatchError,
    UnavailableError,
)
from hindsight.core.models import ListQuery, SearchFilter, StoredVector
from tests.contract.builders import (
    at,
    document,
    episode,
    fact,
    random_vectors,
    rich_episode,
    text_vector,
    unit_vector,
)

EVERYONE = SearchFilter(tenant_id="t1", user_id="u1")


def test_record_store_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "hindsight.db"
    store = SqliteRecordStore(path)
    store.put(rich_episode(), text_vector("trip"), "key", 3_600)
    store.set_cursor("t1", "u1", "reflection", at(3))
    store.close()

    reopened = SqliteRecordStore(path)
    assert reopened.get("t1", "m-rich") == rich_episode()
    assert set(reopened.get_vectors("t1", ["m-rich"])) == {"m-rich"}
    assert reopened.get_cursor("t1", "u1", "reflection") == at(3)
    with pytest.raises(DuplicateMemoryError):
        reopened.put(episode("m2", occurred_at=rich_episode().occurred_at), None, "key", 3_600)
    reopened.close()


def test_record_store_serves_many_threads(tmp_path: Path) -> None:
    store = SqliteRecordStore(tmp_path / "hindsight.db")
    errors: list[BaseException] = []

    def worker(number: int) -> None:
        try:
            for n in range(25):
                store.put(episode(f"w{number}-{n:02d}", occurred_at=at(n)))
                store.list("t1", "u1", ListQuery(), limit=5)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(store.list("t1", "u1", ListQuery(), limit=1_000).items) == 100
    store.close()


def test_unusable_paths_raise_unavailable_with_advice(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(UnavailableError, match="HINDSIGHT_DATA_DIR"):
        SqliteRecordStore(blocker / "hindsight.db")
    with pytest.raises(UnavailableError, match="HINDSIGHT_DATA_DIR"):
        EmbeddedSearchIndex(blocker / "index")


def test_a_damaged_database_file_raises_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "hindsight.db"
    path.write_bytes(b"this is not sqlite" * 512)
    with pytest.raises(UnavailableError, match="damaged"):
        SqliteRecordStore(path)


def test_search_index_survives_a_restart(tmp_path: Path) -> None:
    index = EmbeddedSearchIndex(tmp_path / "index")
    index.upsert([document("m1", "用户对花生过敏"), document("m2", "the user likes green tea")])
    index.close()

    reopened = EmbeddedSearchIndex(tmp_path / "index")
    assert reopened.count() == 2
    assert [h.memory_id for h in reopened.keyword_search(EVERYONE, "花生", 5)] == ["m1"]
    hits = reopened.vector_search(EVERYONE, text_vector("the user likes green tea"), 1)
    assert [h.memory_id for h in hits] == ["m2"]
    other = StoredVector("other-model", np.ones(8, np.float32) / 8**0.5)
    with pytest.raises(EmbeddingModelMismatchError):
        reopened.vector_search(EVERYONE, other, 1)
    reopened.close()


def test_hnsw_graphs_are_saved_on_close_and_restored_on_open(tmp_path: Path) -> None:
    data = random_vectors(200, seed=21)
    index = EmbeddedSearchIndex(tmp_path / "index", ann_threshold=50)
    index.upsert([document(f"m{n}", "x", vector=unit_vector(v)) for n, v in enumerate(data)])
    index.vector_search(EVERYONE, unit_vector(data[0]), 3)
    index.delete("t1", ["m5"])
    index.close()

    reopened = EmbeddedSearchIndex(tmp_path / "index", ann_threshold=50)
    assert reopened.vectors.has_graph("t1", "u1")  # restored, not rebuilt
    assert reopened.vector_search(EVERYONE, unit_vector(data[42]), 1)[0].memory_id == "m42"
    assert "m5" not in [
        h.memory_id for h in reopened.vector_search(EVERYONE, unit_vector(data[5]), 5)
    ]
    reopened.close()


def test_rebuild_from_the_record_store(tmp_path: Path) -> None:
    store = SqliteRecordStore(tmp_path / "hindsight.db")
    store.put(episode("e1", "the user is allergic to peanuts"), text_vector("peanuts"))
    store.put(episode("e2", "用户对花生过敏", tenant_id="t2"), text_vector("花生"))
    store.put(fact("f1", "the user prefers tea"), text_vector("tea"))
    store.put(episode("no-vector", "not embedded yet"))
    index = EmbeddedSearchIndex(tmp_path / "index")

    assert index.rebuild_from(store) == 3
    assert index.count() == 3
    # rebuilt documents are searchable by what the agent did, like freshly stored ones
    store.put(
        episode("e4", "asked about lunch", agent_action="booked a sushi table"),
        text_vector("lunch"),
    )
    assert index.rebuild_from(store) == 1
    assert [h.memory_id for h in index.keyword_search(EVERYONE, "sushi", 5)] == ["e4"]
    store.delete("t1", "e4")
    assert index.rebuild_from(store) == 0
    assert [h.memory_id for h in index.keyword_search(EVERYONE, "peanuts", 5)] == ["e1"]
    t2 = SearchFilter(tenant_id="t2", user_id="u1")
    assert [h.memory_id for h in index.keyword_search(t2, "花生", 5)] == ["e2"]
    assert index.rebuild_from(store) == 0  # already in line
    assert index.count() == 3

    store.delete("t1", "e1")
    store.put(episode("e3", "the user plays chess"), text_vector("chess"))
    assert index.rebuild_from(store) == 1
    assert index.keyword_search(EVERYONE, "peanuts", 5) == []
    assert [h.memory_id for h in index.keyword_search(EVERYONE, "chess", 5)] == ["e3"]
    assert index.count() == 3
    assert index.rebuild_from(store, force=True) == 3
    assert index.count() == 3
    index.close()
    store.close()
