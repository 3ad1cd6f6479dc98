"""What only the embedded (file-backed) adapters promise: persistence, rebuilds, errors."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.adapters.paging import epoch_us
from hindsight.core.errors import (
    DuplicateMemoryError,
    EmbeddingModelMismatchError,
    UnavailableError,
)
from hindsight.core.models import IndexDocument, ListQuery, MemoryKind, SearchFilter, StoredVector
from hindsight.core.text import tokenize
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


# The index file as written before the terms moved into ``docs``: an FTS5 table held them.
_FTS_ERA_SCHEMA = """
CREATE TABLE docs (
    tenant_id TEXT NOT NULL, memory_id TEXT NOT NULL, user_id TEXT NOT NULL,
    kind TEXT NOT NULL, scope TEXT NOT NULL, category TEXT, emotion TEXT, status TEXT,
    session_id TEXT, occurred_at INTEGER NOT NULL, created_at INTEGER NOT NULL,
    expires_at INTEGER, event_start INTEGER, event_end INTEGER, text TEXT NOT NULL,
    model TEXT NOT NULL, vector BLOB NOT NULL, UNIQUE (tenant_id, memory_id)
);
CREATE INDEX docs_by_owner ON docs (tenant_id, user_id);
CREATE VIRTUAL TABLE docs_fts USING fts5(
    owner, terms, tokenize = "unicode61 remove_diacritics 0"
);
"""


def _write_fts_era_index(path: Path, documents: list[IndexDocument]) -> None:
    path.mkdir(parents=True)
    with sqlite3.connect(path / "keyword.db") as conn:
        conn.executescript(_FTS_ERA_SCHEMA)
        for doc in documents:
            rowid = conn.execute(
                "INSERT INTO docs VALUES (?, ?, ?, ?, ?, NULL, NULL, ?, NULL, ?, ?, NULL, NULL,"
                " NULL, ?, ?, ?)",
                (
                    doc.tenant_id,
                    doc.memory_id,
                    doc.user_id,
                    doc.kind.value,
                    doc.scope,
                    None if doc.status is None else doc.status.value,
                    epoch_us(doc.occurred_at),
                    epoch_us(doc.created_at),
                    doc.text,
                    doc.vector.model,
                    np.asarray(doc.vector.values, dtype="<f4").tobytes(),
                ),
            ).lastrowid
            conn.execute(
                "INSERT INTO docs_fts (rowid, owner, terms) VALUES (?, ?, ?)",
                (rowid, f"o-{doc.tenant_id}-{doc.user_id}", " ".join(tokenize(doc.text))),
            )
    conn.close()


def test_an_index_written_with_the_fts5_table_is_migrated_on_open(tmp_path: Path) -> None:
    documents = [
        document("m1", "用户对花生过敏"),
        document("m2", "the user likes green tea"),
        document("f1", "the user plays chess", kind=MemoryKind.SEMANTIC),
        document("t2", "the user likes green tea", tenant_id="t2"),
    ]
    _write_fts_era_index(tmp_path / "index", documents)

    index = EmbeddedSearchIndex(tmp_path / "index")
    assert index.count() == 4
    assert [h.memory_id for h in index.keyword_search(EVERYONE, "花生", 5)] == ["m1"]
    assert [h.memory_id for h in index.keyword_search(EVERYONE, "green tea", 5)] == ["m2"]
    assert [h.memory_id for h in index.keyword_search(EVERYONE, "chess", 5)] == ["f1"]
    hits = index.vector_search(EVERYONE, text_vector("the user likes green tea"), 1)
    assert [h.memory_id for h in hits] == ["m2"]
    t2 = SearchFilter(tenant_id="t2", user_id="u1")
    assert [h.memory_id for h in index.keyword_search(t2, "tea", 5)] == ["t2"]
    index.upsert([document("m1", "the user is allergic to peanuts")])  # rewrite, new schema
    index.close()

    with sqlite3.connect(tmp_path / "index" / "keyword.db") as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "docs_fts" not in tables
    reopened = EmbeddedSearchIndex(tmp_path / "index")
    assert reopened.count() == 4
    assert reopened.keyword_search(EVERYONE, "花生", 5) == []
    assert [h.memory_id for h in reopened.keyword_search(EVERYONE, "peanuts", 5)] == ["m1"]
    assert [h.memory_id for h in reopened.keyword_search(EVERYONE, "chess", 5)] == ["f1"]
    reopened.close()
