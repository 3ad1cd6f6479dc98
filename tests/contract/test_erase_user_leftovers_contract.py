"""Erase-user leaves nothing in a search index: not in its documents, not in what it keeps
on disk beside them (the embedded index's saved HNSW graphs hold a user's vectors and
memory ids), while other users, and the same user name in another tenant, keep theirs.

Found by the isolation properties (``tests/functional/test_isolation_properties.py``):
the embedded index left an erased user's saved graph in ``ann/``, and both SQLite files
kept the user's content in freed pages and old write-ahead-log frames.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from random import Random

from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.core.models import SearchFilter
from hindsight.core.ports import SearchIndex
from tests.contract.builders import document, episode, text_vector

OWNERS = [("t1", "u1"), ("t1", "u2"), ("t2", "u1")]


def _fill(index: SearchIndex) -> None:
    index.upsert(
        [
            document(f"{tenant}-{user}-{n}", f"note {n} about music", tenant, user)
            for tenant, user in OWNERS
            for n in range(4)
        ]
    )


def _found(index: SearchIndex, tenant: str, user: str) -> set[str]:
    hits = index.vector_search(
        SearchFilter(tenant_id=tenant, user_id=user), text_vector("note about music"), 10
    )
    return {hit.memory_id for hit in hits}


def _saved_owners(index: SearchIndex) -> set[tuple[str, str]]:
    """Whose saved HNSW graphs the embedded index keeps on disk (none elsewhere)."""
    if not isinstance(index, EmbeddedSearchIndex):
        return set()
    metas = sorted(Path(index.path, "ann").glob("*.json"))
    return {(m["tenant_id"], m["user_id"]) for m in (json.loads(p.read_text()) for p in metas)}


def test_delete_user_leaves_no_document_and_no_saved_graph(
    search_index_factory: Callable[..., SearchIndex],
) -> None:
    index = search_index_factory(ann_threshold=1)  # every search builds (and saves) a graph
    _fill(index)
    for owner in OWNERS:
        assert len(_found(index, *owner)) == 4
    if isinstance(index, EmbeddedSearchIndex):
        assert _saved_owners(index) == set(OWNERS)

    index.delete_user("t1", "u1")

    assert _found(index, "t1", "u1") == set()
    assert _found(index, "t1", "u2") == {f"t1-u2-{n}" for n in range(4)}
    assert _found(index, "t2", "u1") == {f"t2-u1-{n}" for n in range(4)}
    assert index.count("t1") == 4
    assert ("t1", "u1") not in _saved_owners(index)
    if isinstance(index, EmbeddedSearchIndex):
        assert _saved_owners(index) == {("t1", "u2"), ("t2", "u1")}
        index.compact()  # saving the graphs again must not bring it back
        assert _saved_owners(index) == {("t1", "u2"), ("t2", "u1")}


def test_a_reopened_embedded_index_holds_nothing_of_an_erased_user(tmp_path: Path) -> None:
    index = EmbeddedSearchIndex(tmp_path / "index", ann_threshold=1)
    _fill(index)
    assert _found(index, "t1", "u1")
    index.close()  # saves every graph
    index = EmbeddedSearchIndex(tmp_path / "index", ann_threshold=1)
    index.delete_user("t1", "u1")
    index.close()

    reopened = EmbeddedSearchIndex(tmp_path / "index", ann_threshold=1)
    try:
        assert _found(reopened, "t1", "u1") == set()
        assert ("t1", "u1") not in _saved_owners(reopened)
        assert _found(reopened, "t2", "u1") == {f"t2-u1-{n}" for n in range(4)}
    finally:
        reopened.close()


def test_deleting_a_users_last_memory_removes_its_saved_graph(tmp_path: Path) -> None:
    index = EmbeddedSearchIndex(tmp_path / "index", ann_threshold=1)
    try:
        _fill(index)
        for owner in OWNERS:
            _found(index, *owner)
        index.delete("t1", [f"t1-u1-{n}" for n in range(4)])
        assert _saved_owners(index) == {("t1", "u2"), ("t2", "u1")}
    finally:
        index.close()


def _bytes_holding(directory: Path, marker: bytes) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if p.is_file() and marker in p.read_bytes())


def test_sqlite_files_keep_no_bytes_of_an_erased_user(tmp_path: Path) -> None:
    """Not in a live row, nor in a freed page, nor in an old frame of the write-ahead log
    (both files: records and index), even once their pages were checkpointed."""
    records = SqliteRecordStore(tmp_path / "records" / "hindsight.db")
    index = EmbeddedSearchIndex(tmp_path / "index", ann_threshold=1)
    try:
        for round_ in range(2):  # the first round's pages reach the file at the checkpoint
            for n in range(4):
                for user in ("u1", "u2"):
                    memory = episode(
                        f"{user}-{round_}-{n}", f"{user} secret zq{n}{round_}", user_id=user
                    )
                    records.put(memory, text_vector(memory.content), dedup_key=memory.content)
                    index.upsert([document(memory.memory_id, memory.content, user_id=user)])
            if round_ == 0:
                records.compact()
                index.compact()
        assert _bytes_holding(tmp_path, b"u1 secret")

        assert records.erase_user("t1", "u1") == 8
        index.delete_user("t1", "u1")

        assert _bytes_holding(tmp_path, b"u1 secret") == []
        assert _bytes_holding(tmp_path, b"u2 secret")  # the other user keeps everything
        assert len(records.get_many("t1", [f"u2-{r}-{n}" for r in range(2) for n in range(4)])) == 8
    finally:
        index.close()
        records.close()


def test_no_bytes_of_an_erased_user_survive_page_rebuilds(tmp_path: Path) -> None:
    """``secure_delete`` zeroes a deleted row's cell, not the copies a page rebuild leaves
    behind: when SQLite packs a page (rows of other sizes replaced, forgotten, moved by a
    split), the old copy of a row that stays live sits in the page's unallocated gap, and
    erasing that row later zeroes only its new cell. Found by the isolation properties
    after ~50 examples (a deleted fact's text in keyword.db); the erase now rebuilds the
    files. Deterministic churn: rows of varied sizes stored, replaced, forgotten."""
    random = Random(3)
    records = SqliteRecordStore(tmp_path / "records" / "hindsight.db")
    index = EmbeddedSearchIndex(tmp_path / "index", ann_threshold=10_000)
    users = [f"u{n}" for n in range(5)]
    held: dict[str, list[str]] = {user: [] for user in users}
    try:
        for step in range(600):
            user = random.choice(users)
            draw = random.random()
            if draw < 0.6 or not held[user]:
                memory_id = f"{user}-{step}"
                memory = episode(
                    memory_id,
                    f"{user} secret zq{step:04d} " + "words " * random.randint(2, 150),
                    user_id=user,
                )
                records.put(memory, text_vector(memory.content), dedup_key=memory.content)
                index.upsert([document(memory_id, memory.content, user_id=user)])
                held[user].append(memory_id)
            elif draw < 0.85:  # the same memory again, longer or shorter (a replace)
                memory_id = random.choice(held[user])
                memory = episode(
                    memory_id,
                    f"{user} secret zq{step:04d} " + "again " * random.randint(2, 150),
                    user_id=user,
                )
                records.update(memory, text_vector(memory.content))
                index.upsert([document(memory_id, memory.content, user_id=user)])
            else:
                memory_id = held[user].pop(random.randrange(len(held[user])))
                records.delete("t1", memory_id)
                index.delete("t1", [memory_id])
            if step % 150 == 149:
                records.compact()
                index.compact()

        records.erase_user("t1", "u1")
        index.delete_user("t1", "u1")

        assert _bytes_holding(tmp_path, b"u1 secret") == []
        assert _bytes_holding(tmp_path, b"u2 secret")
        kept = records.get_many("t1", held["u2"])
        assert len(kept) == len(held["u2"])
    finally:
        index.close()
        records.close()
