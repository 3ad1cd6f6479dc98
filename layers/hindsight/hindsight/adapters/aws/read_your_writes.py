"""Search index wrapper for the AWS backend: writes never lost, recent writes always found.

Consistency on AWS (DynamoDB is the source of truth, OpenSearch is derived):

1. The store use case writes DynamoDB, then calls ``index.upsert`` directly, so a memory
   is normally searchable in OpenSearch within the request.
2. The DynamoDB stream indexer (``functions/indexer``) applies every insert, update and
   delete (TTL expiries included) to OpenSearch as well: it is the repair path that makes
   the index eventually consistent even when the direct write failed.
3. Hence, on AWS, a failed direct index write must NOT undo the DynamoDB write: that is
   the write policy ``StreamRepairedWriter`` (``hindsight.adapters.writers``), which logs
   the failure and leaves it to the stream. This wrapper counts failed inner writes
   (``failed_writes``) and raises them like any index.
4. Read-your-writes: documents upserted by this process in the last ``recent_seconds``
   are also kept in a small in-process index and merged into every search, so a memory
   stored a moment ago is found by the next retrieve in this process even before
   OpenSearch has refreshed, or while OpenSearch is down for writes. Other processes
   (other Lambda containers) see it once OpenSearch has it (direct write or stream).
   Keyword scores of recent-only hits come from the small index (BM25 over fewer
   documents), so their scale differs slightly; vector scores are exact cosines. A long
   memory is buffered with all its chunks and found by any of them, once, with the best
   chunk's number and span, as in OpenSearch. The buffer holds at most ``max_recent``
   memories and ``max_recent_chunks`` chunks (a 100,000-character memory is hundreds), the
   oldest going first, so its memory stays bounded in a Lambda container.
5. A search while OpenSearch is down answers with a clear ``UnavailableError`` (HTTP 503)
   that says the memories are safe and what to do; never a stack trace.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from hindsight.adapters.memory import InMemorySearchIndex
from hindsight.core.errors import UnavailableError
from hindsight.core.models import IndexDocument, SearchFilter, SearchHit, StoredVector
from hindsight.core.ports import SearchIndex

logger = logging.getLogger(__name__)

DEFAULT_RECENT_SECONDS = 120.0
DEFAULT_MAX_RECENT = 2_000
DEFAULT_MAX_RECENT_CHUNKS = 20_000  # ~30 MB of 384-dimension vectors and chunk text


class ReadYourWritesIndex:
    """A SearchIndex over ``inner`` that finds this process's recent writes (even while
    ``inner`` refuses them) and counts failed inner writes; it raises them like any index."""

    def __init__(
        self,
        inner: SearchIndex,
        recent_seconds: float = DEFAULT_RECENT_SECONDS,
        max_recent: int = DEFAULT_MAX_RECENT,
        monotonic: Callable[[], float] = time.monotonic,
        max_recent_chunks: int = DEFAULT_MAX_RECENT_CHUNKS,
    ) -> None:
        self.inner = inner
        self.recent_seconds = recent_seconds
        self.max_recent = max_recent
        self.max_recent_chunks = max_recent_chunks
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._recent = InMemorySearchIndex()
        self._written: dict[tuple[str, str], float] = {}  # (tenant, id) -> when, oldest first
        self._chunks: dict[tuple[str, str], int] = {}  # (tenant, id) -> pieces buffered
        self._chunk_total = 0
        self.failed_writes = 0

    # --- the recent-writes buffer ----------------------------------------------------
    def _forget_old(self) -> None:
        horizon = self._monotonic() - self.recent_seconds
        stale: dict[str, list[str]] = {}
        while self._written:
            key, written_at = next(iter(self._written.items()))
            if (
                written_at > horizon
                and len(self._written) <= self.max_recent
                and self._chunk_total <= self.max_recent_chunks
            ):
                break
            self._drop(key)
            stale.setdefault(key[0], []).append(key[1])
        for tenant_id, memory_ids in stale.items():
            self._recent.delete(tenant_id, memory_ids)

    def _drop(self, key: tuple[str, str]) -> None:
        self._written.pop(key, None)
        self._chunk_total -= self._chunks.pop(key, 0)

    def _remember(self, documents: Sequence[IndexDocument]) -> None:
        with self._lock:
            now = self._monotonic()
            for document in documents:
                key = (document.tenant_id, document.memory_id)
                self._drop(key)
                self._written[key] = now
                self._chunks[key] = max(1, len(document.chunks))
                self._chunk_total += self._chunks[key]
            try:
                self._recent.upsert(documents)
            except Exception:  # a model switch mid-process: start the buffer afresh
                self._recent = InMemorySearchIndex()
                self._written.clear()
                self._chunks.clear()
                self._chunk_total = 0
            self._forget_old()

    # --- writes ----------------------------------------------------------------------
    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        if not documents:
            return
        self._remember(documents)
        try:
            self.inner.upsert(documents)
        except UnavailableError:
            self.failed_writes += 1
            raise

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        with self._lock:
            for memory_id in memory_ids:
                self._drop((tenant_id, memory_id))
            self._recent.delete(tenant_id, memory_ids)
        try:
            self.inner.delete(tenant_id, memory_ids)
        except UnavailableError:
            self.failed_writes += 1
            raise

    def delete_user(self, tenant_id: str, user_id: str) -> None:
        with self._lock:
            self._recent.delete_user(tenant_id, user_id)
        try:
            self.inner.delete_user(tenant_id, user_id)
        except UnavailableError:
            self.failed_writes += 1
            raise

    # --- reads -----------------------------------------------------------------------
    def _search(
        self,
        run: Callable[[SearchIndex], list[SearchHit]],
        k: int,
    ) -> list[SearchHit]:
        try:
            hits = run(self.inner)
        except UnavailableError as exc:
            raise UnavailableError(
                "the search index is unavailable, so retrieval cannot run now; stored "
                f"memories are safe in DynamoDB and will be indexed; retry shortly ({exc.message})"
            ) from exc
        with self._lock:
            self._forget_old()
            recent = run(self._recent) if self._written else []
        if not recent:
            return hits
        seen = {hit.memory_id for hit in hits}
        merged = hits + [hit for hit in recent if hit.memory_id not in seen]
        merged.sort(key=lambda hit: (-hit.score, hit.memory_id))
        return merged[:k]

    def vector_search(
        self, search_filter: SearchFilter, vector: StoredVector, k: int
    ) -> list[SearchHit]:
        return self._search(lambda index: index.vector_search(search_filter, vector, k), k)

    def keyword_search(self, search_filter: SearchFilter, text: str, k: int) -> list[SearchHit]:
        return self._search(lambda index: index.keyword_search(search_filter, text, k), k)

    def count(self, tenant_id: str | None = None) -> int:
        return self.inner.count(tenant_id)

    def indexed_ids(
        self, tenant_id: str | None = None, user_id: str | None = None
    ) -> set[tuple[str, str]]:
        return self.inner.indexed_ids(tenant_id, user_id)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()
