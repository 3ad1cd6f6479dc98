"""The two write policies (``hindsight.core.ports.MemoryWriter``), one per kind of backend.

Every write goes to the record store (the source of truth) first and then to the search
index (derived, rebuildable). They differ only in what a failed index write means:

* ``CompensatingWriter`` (embedded, in-memory): nothing else will ever repair the index,
  so the record writes are undone — new records deleted, updated ones put back as they
  were — and the error reaches the caller. Nothing is left stored but unfindable.
* ``StreamRepairedWriter`` (AWS): the DynamoDB stream indexer applies every record change
  to OpenSearch as well, so the record writes stand, the caller is answered, and the
  failure is logged for the stream to repair.

Both pass ``tests/contract/test_memory_writer_contract.py``.

Concurrency. A change is two writes (record, then index), so requests that race on one
user could interleave them: a store's index write landing after an erase had emptied both
(a document left for a user who no longer exists), or an undo putting back a memory over
another request's update. ``CompensatingWriter`` therefore makes each change of a user one
critical section (``UserLocks``: one lock per tenant and user, so users never wait for each
other): a racing duplicate sees the first store whole or undone, never in between, and an
undo restores only what nobody else has written since. ``StreamRepairedWriter`` needs no
such lock for the index: the stream applies every record change to OpenSearch in order, so
an index write that lost a race is overwritten by the stream's later one.
(``tests/concurrency/test_writer_races.py`` and ``test_service_races.py``.)
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from hindsight.core.errors import (
    DuplicateMemoryError,
    HindsightError,
    NotFoundError,
    UnavailableError,
)
from hindsight.core.indexing import index_document
from hindsight.core.models import IndexDocument, Memory, StoredVector
from hindsight.core.ports import NewRecord, RecordStore, SearchIndex

logger = logging.getLogger(__name__)

Owner = tuple[str, str]  # (tenant_id, user_id)


class UserLocks:
    """One reentrant lock per (tenant, user), made when first wanted and dropped when no
    thread holds or waits for it, so the table stays as small as the users being written."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[Owner, tuple[threading.RLock, list[int]]] = {}

    @contextmanager
    def holding(self, owners: Iterable[Owner]) -> Iterator[None]:
        """Hold the locks of every owner given (in one fixed order, so two writers of the
        same users never wait for each other crosswise)."""
        wanted = sorted(set(owners))
        entries = []
        with self._guard:
            for owner in wanted:
                entry = self._locks.setdefault(owner, (threading.RLock(), [0]))
                entry[1][0] += 1
                entries.append(entry)
        held: list[threading.RLock] = []
        try:
            for lock, _ in entries:
                lock.acquire()
                held.append(lock)
            yield
        finally:
            for lock in reversed(held):
                lock.release()
            with self._guard:
                for owner, (_, users) in zip(wanted, entries, strict=True):
                    users[0] -= 1
                    if users[0] == 0:
                        del self._locks[owner]


class _WriterBase(ABC):
    def __init__(self, records: RecordStore, index: SearchIndex) -> None:
        self.records = records
        self.index = index

    def add(self, records: Sequence[NewRecord], dedup_window_seconds: float = 0.0) -> list[str]:
        """Put the records, then index those written; an index error the policy does not
        tolerate undoes the puts and is raised."""
        ids, written = self._put_all(records, dedup_window_seconds)
        if written:
            try:
                self._index_new([index_document(r.memory, r.vector) for r in written])
            except HindsightError:
                self._undo_add(written)
                raise
        return ids

    @abstractmethod
    def _index_new(self, documents: list[IndexDocument]) -> None:
        """Index freshly written documents: this is where the policies differ."""

    def _put_all(
        self, records: Sequence[NewRecord], dedup_window_seconds: float
    ) -> tuple[list[str], list[NewRecord]]:
        """Put each record; (one id per record, the records written). A failing put undoes
        the puts before it, so the batch is written whole or not at all. A store that can
        put a batch in one transaction (``put_many``: the embedded SQLite store) does, so
        that a process killed in the middle leaves no part of it behind either."""
        put_many = getattr(self.records, "put_many", None)
        if put_many is not None:
            named: list[str] = put_many(records, dedup_window_seconds)
            fresh = [r for r, i in zip(records, named, strict=True) if i == r.memory.memory_id]
            return named, fresh
        ids: list[str] = []
        written: list[NewRecord] = []
        for record in records:
            try:
                self.records.put(
                    record.memory,
                    record.vector,
                    dedup_key=record.dedup_key,
                    dedup_window_seconds=dedup_window_seconds,
                )
            except DuplicateMemoryError as duplicate:
                ids.append(duplicate.existing_memory_id)
                continue
            except HindsightError:
                self._delete_records([r.memory for r in written])
                raise
            ids.append(record.memory.memory_id)
            written.append(record)
        return ids, written

    def _delete_records(self, memories: Sequence[Memory]) -> None:
        delete_many = getattr(self.records, "delete_many", None)  # one transaction (SQLite)
        if delete_many is not None:
            for tenant_id in {m.tenant_id for m in memories}:
                try:
                    delete_many(
                        tenant_id, [m.memory_id for m in memories if m.tenant_id == tenant_id]
                    )
                except HindsightError:
                    logger.exception("undo failed tenant_id=%s", tenant_id)
            return
        for memory in memories:
            try:
                self.records.delete(memory.tenant_id, memory.memory_id)
            except HindsightError:
                logger.exception("undo failed memory_id=%s", memory.memory_id)

    def _undo_add(self, written: Sequence[NewRecord]) -> None:
        """Delete what ``add`` wrote, from the records and (should it hold any) the index."""
        memories = [r.memory for r in written]
        self._delete_records(memories)
        try:
            self.index.delete(memories[0].tenant_id, [m.memory_id for m in memories])
        except HindsightError:
            logger.exception("undo of index failed")

    def _update_records(self, tenant_id: str, memories: Sequence[Memory]) -> list[IndexDocument]:
        """Replace the records; the index documents of those that have a stored vector."""
        for memory in memories:
            self.records.update(memory)
        vectors = self.records.get_vectors(tenant_id, [m.memory_id for m in memories])
        return [index_document(m, vectors[m.memory_id]) for m in memories if m.memory_id in vectors]

    def _replace_record(self, record: NewRecord) -> tuple[Memory, StoredVector | None]:
        """Replace the memory and its vector in the record store; what was there before."""
        memory = record.memory
        before = self.records.get(memory.tenant_id, memory.memory_id)
        if before is None:
            raise NotFoundError(f"memory {memory.memory_id} does not exist")
        old = self.records.get_vectors(memory.tenant_id, [memory.memory_id]).get(memory.memory_id)
        self.records.update(memory, record.vector)
        return before, old


class CompensatingWriter(_WriterBase):
    """Records first, then the index; an index failure undoes the records and is raised.

    Every change holds the lock of the users it writes (``UserLocks``) from its first
    record write to its last index write or undo.
    """

    def __init__(self, records: RecordStore, index: SearchIndex) -> None:
        super().__init__(records, index)
        self.locks = UserLocks()

    def add(self, records: Sequence[NewRecord], dedup_window_seconds: float = 0.0) -> list[str]:
        owners = {(r.memory.tenant_id, r.memory.user_id) for r in records}
        with self.locks.holding(owners):
            return super().add(records, dedup_window_seconds)

    def replace(self, record: NewRecord) -> None:
        with self.locks.holding([(record.memory.tenant_id, record.memory.user_id)]):
            before, old = self._replace_record(record)
            try:
                self.index.upsert([index_document(record.memory, record.vector)])
            except HindsightError:
                try:
                    self.records.update(before, old)
                except HindsightError:
                    logger.exception("undo failed memory_id=%s", before.memory_id)
                raise

    def _index_new(self, documents: list[IndexDocument]) -> None:
        self.index.upsert(documents)

    def update(self, tenant_id: str, memories: Sequence[Memory]) -> None:
        if not memories:
            return
        with self.locks.holding({(tenant_id, m.user_id) for m in memories}):
            before = self.records.get_many(tenant_id, [m.memory_id for m in memories])
            documents = self._update_records(tenant_id, memories)
            try:
                if documents:
                    self.index.upsert(documents)
            except HindsightError:
                for previous in before:
                    try:
                        self.records.update(previous)
                    except HindsightError:
                        logger.exception("undo failed memory_id=%s", previous.memory_id)
                raise

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        # whose memories these are (a memory never changes user); ids the store does not
        # hold are still removed from the index, which may hold a leftover
        owners = {(tenant_id, m.user_id) for m in self.records.get_many(tenant_id, memory_ids)}
        with self.locks.holding(owners):
            # the index first: if it fails (the likely failure), nothing has changed; if the
            # record delete fails after it, the memory is unsearchable until the next start,
            # whose rebuild_from re-indexes every record the index lacks
            self.index.delete(tenant_id, memory_ids)
            for memory_id in memory_ids:
                self.records.delete(tenant_id, memory_id)

    def erase_user(self, tenant_id: str, user_id: str) -> int:
        with self.locks.holding([(tenant_id, user_id)]):
            self.index.delete_user(tenant_id, user_id)
            return self.records.erase_user(tenant_id, user_id)


class StreamRepairedWriter(_WriterBase):
    """Records first, then the index; an unavailable index is logged and left to the stream
    indexer, which applies every record change to the index (``functions/indexer``).

    Any other index error on ``add`` (one the stream would hit too) undoes the records.
    """

    def _index_new(self, documents: list[IndexDocument]) -> None:
        self._tolerating_outage("upsert", lambda: self.index.upsert(documents))

    def replace(self, record: NewRecord) -> None:
        self._replace_record(record)
        document = index_document(record.memory, record.vector)
        self._tolerating_outage("upsert", lambda: self.index.upsert([document]))

    def update(self, tenant_id: str, memories: Sequence[Memory]) -> None:
        if not memories:
            return
        documents = self._update_records(tenant_id, memories)
        if documents:
            self._tolerating_outage("upsert", lambda: self.index.upsert(documents))

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        for memory_id in memory_ids:
            self.records.delete(tenant_id, memory_id)
        self._tolerating_outage("delete", lambda: self.index.delete(tenant_id, memory_ids))

    def erase_user(self, tenant_id: str, user_id: str) -> int:
        deleted = self.records.erase_user(tenant_id, user_id)
        self._tolerating_outage("delete_user", lambda: self.index.delete_user(tenant_id, user_id))
        return deleted

    @staticmethod
    def _tolerating_outage(operation: str, write: Callable[[], None]) -> None:
        try:
            write()
        except UnavailableError as exc:
            logger.warning(
                "index %s failed; the stream indexer will apply it error=%s",
                operation,
                exc.message,
            )
