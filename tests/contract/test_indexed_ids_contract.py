"""The SearchIndex contract for ``indexed_ids``: which memories an index holds, on every index.

Consistency checks (``hindsight check-index``) compare these ids with the record store's, so
every implementation must list each memory once (however many chunks it has), follow
deletes and user erasure at once, and scope the list by tenant and user exactly.
"""

from __future__ import annotations

import pytest

from hindsight.core.errors import InvalidRequestError
from hindsight.core.ports import SearchIndex
from tests.contract.builders import document
from tests.contract.test_chunked_search_index_contract import long_doc


@pytest.fixture
def filled(search_index: SearchIndex) -> SearchIndex:
    search_index.upsert(
        [
            document("a1", "the user likes green tea", tenant_id="t1", user_id="u1"),
            document("a2", "the user flies to Lisbon", tenant_id="t1", user_id="u1"),
            document("b1", "the user keeps bees", tenant_id="t1", user_id="u2"),
            document("c1", "the user plays chess", tenant_id="t2", user_id="u1"),
            long_doc("long", chunks=12, tenant_id="t1", user_id="u2"),
        ]
    )
    return search_index


def test_an_empty_index_lists_nothing(search_index: SearchIndex) -> None:
    assert search_index.indexed_ids() == set()
    assert search_index.indexed_ids("t1", "u1") == set()


def test_lists_every_memory_once_whatever_its_chunks(filled: SearchIndex) -> None:
    assert filled.indexed_ids() == {
        ("t1", "a1"),
        ("t1", "a2"),
        ("t1", "b1"),
        ("t1", "long"),
        ("t2", "c1"),
    }
    assert len(filled.indexed_ids()) == filled.count()


def test_scoped_by_tenant_and_by_user(filled: SearchIndex) -> None:
    assert filled.indexed_ids("t1") == {("t1", "a1"), ("t1", "a2"), ("t1", "b1"), ("t1", "long")}
    assert filled.indexed_ids("t1", "u2") == {("t1", "b1"), ("t1", "long")}
    assert filled.indexed_ids("t2", "u1") == {("t2", "c1")}
    assert filled.indexed_ids("t2", "u2") == set()
    assert filled.indexed_ids("nobody") == set()


def test_follows_deletes_rewrites_and_erasure(filled: SearchIndex) -> None:
    filled.delete("t1", ["a2", "unknown"])
    filled.upsert([document("a1", "the user now prefers coffee", tenant_id="t1", user_id="u1")])
    filled.upsert([document("long", "short again", tenant_id="t1", user_id="u2")])
    assert filled.indexed_ids("t1") == {("t1", "a1"), ("t1", "b1"), ("t1", "long")}
    filled.delete_user("t1", "u2")
    assert filled.indexed_ids() == {("t1", "a1"), ("t2", "c1")}


def test_a_user_without_a_tenant_is_refused(filled: SearchIndex) -> None:
    with pytest.raises(InvalidRequestError, match="tenant"):
        filled.indexed_ids(user_id="u1")


def test_lists_past_a_page_of_ids(filled: SearchIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenSearch pages the ids (``search_after``); a page of 2 makes three pages of five."""
    from hindsight.adapters.aws.opensearch_index import index as opensearch_index

    monkeypatch.setattr(opensearch_index, "_ID_PAGE", 2)
    assert len(filled.indexed_ids()) == 5
    assert filled.indexed_ids("t1", "u2") == {("t1", "b1"), ("t1", "long")}
