"""The MemoryWriter contract for long memories: both write policies, on every backend pair.

A memory searched by chunks is added, replaced (with fewer chunks), deleted and erased in
the record store and the index together; a failed index write means what each policy says
(``CompensatingWriter`` puts the old content and every old chunk back; ``StreamRepairedWriter``
keeps the new record for the stream indexer).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.core.errors import UnavailableError
from hindsight.core.models import SearchFilter, SearchHit, StoredVector
from hindsight.core.ports import MemoryWriter, NewRecord, RecordStore
from tests.contract.builders import EMBEDDER, MODEL, episode
from tests.contract.test_chunked_search_index_contract import NEEDLE, QUERY, filler
from tests.contract.test_memory_writer_contract import BACKENDS, WRITERS, Outage


@pytest.fixture(params=BACKENDS)
def ports(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[RecordStore, Outage]]:
    if request.param == "memory":
        yield InMemoryRecordStore(), Outage(InMemorySearchIndex())
    elif request.param == "sqlite":
        records = SqliteRecordStore(tmp_path / "hindsight.db")
        index = EmbeddedSearchIndex(tmp_path / "index")
        yield records, Outage(index)
        index.close()
        records.close()
    else:
        from tests.integration.dynamodb_local import drop_table, fresh_store
        from tests.services.opensearch_local import drop, fresh_index

        store = fresh_store(inline_bytes=8 * 1024)  # the long memory: body and vectors in S3
        opensearch = fresh_index()
        yield store, Outage(opensearch)
        drop(opensearch)
        drop_table(store)


@pytest.fixture(params=list(WRITERS))
def policy(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def writer(policy: str, ports: tuple[RecordStore, Outage]) -> MemoryWriter:
    records, index = ports
    return WRITERS[policy](records, index)  # type: ignore[arg-type]


def long_record(memory_id: str, paragraphs: list[str]) -> NewRecord:
    """A memory of ``paragraphs``, one chunk (and vector row) each."""
    content = "\n\n".join(paragraphs)
    spans, start = [], 0
    for paragraph in paragraphs:
        spans.append((start, start + len(paragraph)))
        start += len(paragraph) + 2
    rows = np.asarray(EMBEDDER.embed_documents(paragraphs), dtype=np.float32)
    vector = StoredVector(model=MODEL, values=rows, spans=tuple(spans))
    return NewRecord(episode(memory_id, content), vector)


OLD = long_record("long", [filler(n) for n in range(59)] + [NEEDLE])
NEW = long_record("long", [f"Notes on gardening: tomatoes and basil, row {n}." for n in range(6)])


def hits(index: Outage, text: str) -> list[SearchHit]:
    return index.keyword_search(SearchFilter(tenant_id="t1", user_id="u1"), text, 10)  # type: ignore[no-any-return]


def same_vector(found: StoredVector | None, expected: StoredVector) -> bool:
    return (
        found is not None
        and found.spans == expected.spans
        and np.array_equal(found.values, expected.values)
    )


def test_add_indexes_every_chunk_and_replace_swaps_them_all(writer, ports) -> None:  # type: ignore[no-untyped-def]
    records, index = ports
    assert writer.add([OLD]) == ["long"]
    [top] = hits(index, QUERY)
    assert (top.memory_id, top.chunk, top.span) == ("long", 59, OLD.vector.spans[59])

    writer.replace(NEW)
    assert records.get("t1", "long").content == NEW.memory.content  # type: ignore[union-attr]
    assert same_vector(records.get_vectors("t1", ["long"]).get("long"), NEW.vector)
    assert hits(index, QUERY) == []  # the old chunks are gone
    assert [(h.memory_id, h.chunk) for h in hits(index, "tomatoes basil row 4")][:1] == [
        ("long", 4)
    ]
    assert index.count("t1") == 1


def test_delete_and_erase_remove_every_chunk_from_both(writer, ports) -> None:  # type: ignore[no-untyped-def]
    records, index = ports
    writer.add([OLD, long_record("other", [filler(n) for n in range(20)])])
    writer.delete("t1", ["long"])
    assert records.get("t1", "long") is None
    assert hits(index, QUERY) == []
    assert [h.memory_id for h in hits(index, filler(3))] == ["other"]
    assert writer.erase_user("t1", "u1") == 1
    assert hits(index, filler(3)) == []
    assert index.count("t1") == 0


def test_index_outage_on_replace(policy, writer, ports) -> None:  # type: ignore[no-untyped-def]
    records, index = ports
    writer.add([OLD])
    index.down = True
    if policy == "compensating":
        with pytest.raises(UnavailableError):
            writer.replace(NEW)
        index.down = False
        assert records.get("t1", "long").content == OLD.memory.content  # type: ignore[union-attr]
        assert same_vector(records.get_vectors("t1", ["long"]).get("long"), OLD.vector)
        assert [h.chunk for h in hits(index, QUERY)] == [59]
    else:
        writer.replace(NEW)  # acknowledged: the stream indexer will index it
        assert records.get("t1", "long").content == NEW.memory.content  # type: ignore[union-attr]
        assert same_vector(records.get_vectors("t1", ["long"]).get("long"), NEW.vector)
