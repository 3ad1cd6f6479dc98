"""The MemoryWriter contract: both write policies, on every backend pair they serve.

What every writer does (write and index together, dedup, update, delete, erase) is
checked for both; what a failed index write means is each policy's own:
``CompensatingWriter`` undoes the records and raises, ``StreamRepairedWriter`` keeps
them, answers, and leaves the index to the stream indexer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.adapters.writers import CompensatingWriter, StreamRepairedWriter
from hindsight.core.errors import UnavailableError
from hindsight.core.models import FactStatus, IndexDocument, SearchFilter
from hindsight.core.ports import MemoryWriter, NewRecord, RecordStore, SearchIndex
from tests.contract.builders import at, episode, fact, text_vector

WRITERS = {"compensating": CompensatingWriter, "stream": StreamRepairedWriter}
BACKENDS = ["memory", "sqlite", "aws"]


class Outage:
    """An index whose writes fail as an unreachable engine's do; reads still work."""

    def __init__(self, inner: SearchIndex) -> None:
        self.inner = inner
        self.down = False

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        self._check()
        self.inner.upsert(documents)

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        self._check()
        self.inner.delete(tenant_id, memory_ids)

    def delete_user(self, tenant_id: str, user_id: str) -> None:
        self._check()
        self.inner.delete_user(tenant_id, user_id)

    def _check(self) -> None:
        if self.down:
            raise UnavailableError("the search index is down (test outage)")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


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

        store = fresh_store()  # fails with "start the local engines: make services"
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


def found(index: SearchIndex, text: str) -> list[str]:
    hits = index.keyword_search(SearchFilter(tenant_id="t1", user_id="u1"), text, 10)
    return [hit.memory_id for hit in hits]


def new(memory_id: str, content: str, dedup_key: str | None = None) -> NewRecord:
    memory = episode(memory_id, content)
    return NewRecord(memory, text_vector(content), dedup_key)


# --- what every write policy does ------------------------------------------------------
def test_add_writes_records_and_indexes_them(writer, ports) -> None:  # type: ignore[no-untyped-def]
    records, index = ports
    ids = writer.add([new("m1", "peanut allergy"), new("m2", "likes tea")])
    assert ids == ["m1", "m2"]
    assert records.get("t1", "m1") is not None
    assert set(records.get_vectors("t1", ["m1", "m2"])) == {"m1", "m2"}
    assert found(index, "peanut") == ["m1"]


def test_add_answers_the_existing_id_for_a_duplicate(writer, ports) -> None:  # type: ignore[no-untyped-def]
    records, _ = ports
    writer.add([new("m1", "same words", "u1|global|h")], 3_600.0)
    ids = writer.add([new("m2", "same words", "u1|global|h"), new("m3", "other")], 3_600.0)
    assert ids == ["m1", "m3"]
    assert records.get("t1", "m2") is None


def test_update_replaces_the_record_and_reindexes_it(writer, ports) -> None:  # type: ignore[no-untyped-def]
    records, index = ports
    pending = fact("f1", "the user is vegetarian", status=FactStatus.PENDING)
    writer.add([NewRecord(pending, text_vector(pending.content))])
    approved = pending.model_copy(update={"status": FactStatus.APPROVED, "updated_at": at(5)})
    writer.update("t1", [approved])
    assert records.get("t1", "f1").status == FactStatus.APPROVED  # type: ignore[union-attr]
    only_approved = SearchFilter(
        tenant_id="t1", user_id="u1", statuses=frozenset({FactStatus.APPROVED})
    )
    assert [h.memory_id for h in index.keyword_search(only_approved, "vegetarian", 5)] == ["f1"]


def test_delete_and_erase_remove_from_both(writer, ports) -> None:  # type: ignore[no-untyped-def]
    records, index = ports
    writer.add([new("m1", "peanut allergy"), new("m2", "peanut butter")])
    writer.delete("t1", ["m1"])
    assert records.get("t1", "m1") is None
    assert found(index, "peanut") == ["m2"]
    assert writer.erase_user("t1", "u1") == 1
    assert records.get("t1", "m2") is None
    assert found(index, "peanut") == []


# --- what a failed index write means: each policy's own -------------------------------
def test_index_outage_on_add(policy, writer, ports) -> None:  # type: ignore[no-untyped-def]
    records, index = ports
    index.down = True
    if policy == "compensating":
        with pytest.raises(UnavailableError):
            writer.add([new("m1", "peanut allergy", "k1"), new("m2", "likes tea", "k2")], 60.0)
        assert records.get("t1", "m1") is None and records.get("t1", "m2") is None
        index.down = False
        # the dedup markers went with the records: the same content can be written again
        assert writer.add([new("m3", "peanut allergy", "k1")], 60.0) == ["m3"]
    else:
        ids = writer.add([new("m1", "peanut allergy", "k1"), new("m2", "likes tea", "k2")], 60.0)
        assert ids == ["m1", "m2"]  # acknowledged: the stream indexer will index them
        assert records.get("t1", "m1") is not None and records.get("t1", "m2") is not None


def test_index_outage_on_update(policy, writer, ports) -> None:  # type: ignore[no-untyped-def]
    records, index = ports
    pending = fact("f1", "the user is vegetarian", status=FactStatus.PENDING)
    writer.add([NewRecord(pending, text_vector(pending.content))])
    approved = pending.model_copy(update={"status": FactStatus.APPROVED, "updated_at": at(5)})
    index.down = True
    if policy == "compensating":
        with pytest.raises(UnavailableError):
            writer.update("t1", [approved])
        assert records.get("t1", "f1").status == FactStatus.PENDING  # type: ignore[union-attr]
    else:
        writer.update("t1", [approved])
        assert records.get("t1", "f1").status == FactStatus.APPROVED  # type: ignore[union-attr]


def test_index_outage_on_delete(policy, writer, ports) -> None:  # type: ignore[no-untyped-def]
    records, index = ports
    writer.add([new("m1", "peanut allergy")])
    index.down = True
    if policy == "compensating":
        with pytest.raises(UnavailableError):
            writer.delete("t1", ["m1"])
        assert records.get("t1", "m1") is not None  # nothing changed
        index.down = False
        assert found(index, "peanut") == ["m1"]
    else:
        writer.delete("t1", ["m1"])
        assert records.get("t1", "m1") is None  # deleted; the stream removes the document
