"""The compensating write policy under concurrency: an undo never takes another request's
write with it.

``CompensatingWriter`` undoes its record writes when the index write fails. Racing
requests must not see (and build on) what is about to be undone, and the undo must not
overwrite what another request wrote meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from hindsight.bootstrap import rewire
from hindsight.core.errors import UnavailableError
from hindsight.core.models import EpisodicMemory, IndexDocument, SearchFilter, StoredVector
from hindsight.core.ports import NewRecord, SearchIndex
from hindsight.core.service import MemoryService
from tests.concurrency.conftest import PRINCIPAL, index_ids, race, record_ids, store

POISON = "poison"


class FailingOnceIndex:
    """A search index whose first upsert of a document mentioning POISON is slow and then
    fails, as an index that times out would; everything else reaches the real index."""

    def __init__(self, inner: SearchIndex, delay: float = 0.3) -> None:
        self.inner = inner
        self.delay = delay
        self.tripped = threading.Event()

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        if not self.tripped.is_set() and any(POISON in d.text for d in documents):
            self.tripped.set()
            time.sleep(self.delay)
            raise UnavailableError("the search index timed out (test)")
        self.inner.upsert(documents)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def flaky(service: MemoryService) -> tuple[MemoryService, FailingOnceIndex]:
    index = FailingOnceIndex(service.ports.index)
    return rewire(service, index=index), index


def test_a_duplicate_never_points_at_a_memory_whose_store_is_being_undone(
    service: MemoryService,
) -> None:
    racing, index = flaky(service)
    content = f"the {POISON} ivy grows by the fence"

    def failing() -> Any:
        try:
            return store(racing, "undo", content)
        except UnavailableError as exc:
            return exc

    def duplicate() -> Any:
        index.tripped.wait(5)  # the first store is now between its record and index writes
        return store(racing, "undo", content)

    first, second = race(failing, duplicate)
    assert isinstance(first, UnavailableError)  # the caller was told; nothing of it stayed
    assert second.status == "success"  # not "skipped" as a duplicate of the undone memory
    assert record_ids(service, "undo") == index_ids(service, "undo") == {second.memory_id}


def test_an_undone_update_does_not_overwrite_an_update_made_meanwhile(
    service: MemoryService,
) -> None:
    racing, index = flaky(service)
    memory_id = store(service, "upd", "the garden gate is green").memory_id
    original = service.ports.records.get(PRINCIPAL.tenant_id, memory_id)
    assert isinstance(original, EpisodicMemory)
    writer = racing.ports.writer

    def failing_update() -> Any:
        changed = original.model_copy(update={"content": f"the {POISON} gate"})
        try:
            writer.update(PRINCIPAL.tenant_id, [changed])
        except UnavailableError as exc:
            return exc
        return None

    def other_update() -> None:
        index.tripped.wait(5)  # the failing update has written its record, not the index
        writer.update(PRINCIPAL.tenant_id, [original.model_copy(update={"category": "kept"})])

    failed, _ = race(failing_update, other_update)
    assert isinstance(failed, UnavailableError)
    stored = service.ports.records.get(PRINCIPAL.tenant_id, memory_id)
    assert stored is not None
    assert (stored.content, stored.category) == ("the garden gate is green", "kept")
    assert record_ids(service, "upd") == index_ids(service, "upd") == {memory_id}


def test_an_undone_replace_does_not_overwrite_a_replace_made_meanwhile(
    service: MemoryService,
) -> None:
    racing, index = flaky(service)
    memory_id = store(service, "rep", "draft one of the report").memory_id
    original = service.ports.records.get(PRINCIPAL.tenant_id, memory_id)
    assert original is not None
    writer = racing.ports.writer
    embedder = service.ports.embedder

    def replaced(content: str) -> NewRecord:
        memory = original.model_copy(update={"content": content})
        vector = embedder.embed_documents([content])[0]
        return NewRecord(memory, StoredVector(embedder.model_name, vector))

    def failing_replace() -> Any:
        try:
            writer.replace(replaced(f"{POISON} draft"))
        except UnavailableError as exc:
            return exc
        return None

    def other_replace() -> None:
        index.tripped.wait(5)
        writer.replace(replaced("draft two of the report"))

    failed, _ = race(failing_replace, other_replace)
    assert isinstance(failed, UnavailableError)
    stored = service.ports.records.get(PRINCIPAL.tenant_id, memory_id)
    assert stored is not None and stored.content == "draft two of the report"
    mine = SearchFilter(tenant_id=PRINCIPAL.tenant_id, user_id="rep")
    assert [h.memory_id for h in service.ports.index.keyword_search(mine, "two", 5)] == [memory_id]
    assert service.ports.index.keyword_search(mine, POISON, 5) == []
    assert record_ids(service, "rep") == index_ids(service, "rep") == {memory_id}
