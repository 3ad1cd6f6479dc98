"""Contract fixtures: every RecordStore and SearchIndex implementation, one param each.

A new adapter (e.g. DynamoDB, OpenSearch) adds one param id and one branch below; the
suites in this folder then run against it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.core.ports import RecordStore, SearchIndex

RECORD_STORES = ["memory", "sqlite", "dynamodb"]
SEARCH_INDEXES = ["memory", "sqlite", "opensearch"]


def _close(resource: Any) -> None:
    close = getattr(resource, "close", None)
    if close is not None:
        close()


@pytest.fixture(params=RECORD_STORES)
def record_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RecordStore]:
    store: RecordStore
    if request.param == "memory":
        store = InMemoryRecordStore()
    elif request.param == "dynamodb":
        from tests.integration.dynamodb_local import drop_table, fresh_store

        dynamodb_store = fresh_store()  # fails with "start the local engines: make services"
        yield dynamodb_store
        drop_table(dynamodb_store)
        return
    else:
        store = SqliteRecordStore(tmp_path / "records" / "hindsight.db")
    yield store
    _close(store)


@pytest.fixture(params=SEARCH_INDEXES)
def search_index_factory(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., SearchIndex]]:
    """Builds indexes of one implementation; options such as ``ann_threshold`` apply
    where the implementation has them."""
    made: list[SearchIndex] = []
    dropped: list[Any] = []

    def make(ann_threshold: int = 20_000) -> SearchIndex:
        index: SearchIndex
        if request.param == "memory":
            index = InMemorySearchIndex()
        elif request.param == "opensearch":
            from tests.services.opensearch_local import fresh_index

            opensearch_index = fresh_index()  # fails with "start the local engines: make services"
            dropped.append(opensearch_index)
            return opensearch_index
        else:
            index = EmbeddedSearchIndex(tmp_path / f"index{len(made)}", ann_threshold)
        made.append(index)
        return index

    yield make
    for index in made:
        _close(index)
    if dropped:
        from tests.services.opensearch_local import drop

        for opensearch_index in dropped:
            drop(opensearch_index)


@pytest.fixture
def search_index(search_index_factory: Callable[..., SearchIndex]) -> SearchIndex:
    return search_index_factory()
