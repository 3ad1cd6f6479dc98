"""Contract fixtures: every RecordStore and SearchIndex implementation, one param each.

A new adapter (e.g. DynamoDB, OpenSearch) adds one param id and one branch below; the
suites in this folder then run against it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.adapters.writers import StreamRepairedWriter
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.policy import Policy
from hindsight.core.ports import Embedder, Ports, RecordStore, Reflector, SearchIndex
from hindsight.core.service import MemoryService

RECORD_STORES = ["memory", "sqlite", "dynamodb"]
SEARCH_INDEXES = ["memory", "sqlite", "opensearch"]
SERVICE_BACKENDS = ["memory", "sqlite", "aws"]


@contextmanager
def service_on(
    backend: str, tmp_path: Path, embedder: Embedder, reflector: Reflector, policy: Policy
) -> Iterator[MemoryService]:
    """A whole MemoryService on one backend of ``SERVICE_BACKENDS`` (the AWS one: DynamoDB
    and OpenSearch on the local engines, writes repaired as the stream indexer would)."""
    if backend == "memory":
        yield assemble(
            local_ports(InMemoryRecordStore(), InMemorySearchIndex(), embedder, reflector), policy
        )
    elif backend == "sqlite":
        records = SqliteRecordStore(tmp_path / "hindsight.db")
        index = EmbeddedSearchIndex(tmp_path / "index")
        yield assemble(local_ports(records, index, embedder, reflector), policy)
        index.close()
        records.close()
    else:
        from tests.integration.dynamodb_local import drop_table, fresh_store
        from tests.services.opensearch_local import drop, fresh_index

        store = fresh_store()  # fails with "start the local engines: make services"
        opensearch = fresh_index()
        base = local_ports(store, opensearch, embedder, reflector)
        ports = Ports(
            records=store,
            index=opensearch,
            embedder=embedder,
            reflector=reflector,
            clock=base.clock,
            ids=base.ids,
            writer=StreamRepairedWriter(store, opensearch),
        )
        yield assemble(ports, policy)
        drop(opensearch)
        drop_table(store)


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
