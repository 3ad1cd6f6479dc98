"""Erase-user leaves nothing in a search index: not in its documents, not in what it keeps
on disk beside them (the embedded index's saved HNSW graphs hold a user's vectors and
memory ids), while other users, and the same user name in another tenant, keep theirs.

Found by the isolation properties (``tests/functional/test_isolation_properties.py``):
the embedded index left an erased user's saved graph in ``ann/``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.core.models import SearchFilter
from hindsight.core.ports import SearchIndex
from tests.contract.builders import document, text_vector

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
