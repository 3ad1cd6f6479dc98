"""In-process, thread-safe record store and search index: the unit tests' fakes and a backend.

Nothing survives the process. Semantics follow ``hindsight.core.ports`` exactly and are
pinned by ``tests/contract``; the embedded SQLite adapters share the page-cursor format
and the filter rules defined here.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import json
import math
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

from hindsight.core.errors import (
    ConflictError,
    DuplicateMemoryError,
    EmbeddingModelMismatchError,
    InvalidRequestError,
    NotFoundError,
)
from hindsight.core.models import (
    HitFacts,
    IndexDocument,
    ListQuery,
    Memory,
    MemoryKind,
    Page,
    SearchFilter,
    SearchHit,
    StoredVector,
)
from hindsight.core.text import tokenize

BM25_K1 = 1.2
BM25_B = 0.75
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
INVALID_CURSOR = "cursor is invalid; pass next_cursor exactly as returned"


# --- shared helpers (also used by the embedded adapters) ---------------------------------
def epoch_us(moment: datetime) -> int:
    """Exact integer microseconds since the epoch: sortable, comparable, lossless."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


def encode_page_cursor(occurred_us: int, memory_id: str, oldest_first: bool) -> str:
    """Opaque keyset cursor: urlsafe base64 of JSON of the last (occurred_at, memory_id)."""
    payload = json.dumps([occurred_us, memory_id, "asc" if oldest_first else "desc"])
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def decode_page_cursor(cursor: str, oldest_first: bool) -> tuple[int, str]:
    """The (occurred_us, memory_id) a cursor continues after; InvalidRequestError if bad."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        occurred_us, memory_id, direction = json.loads(base64.urlsafe_b64decode(padded))
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidRequestError(INVALID_CURSOR) from exc
    valid = (
        isinstance(occurred_us, int)
        and isinstance(memory_id, str)
        and direction == ("asc" if oldest_first else "desc")
    )
    if not valid:
        raise InvalidRequestError(INVALID_CURSOR)
    return occurred_us, memory_id


def dedup_blocks(
    marked: Memory | None,
    memory: Memory,
    window_seconds: float,
) -> bool:
    """Whether a marker's memory makes ``memory`` a duplicate.

    It does when it is still stored, not expired as of the new memory's ``created_at``,
    and occurred less than ``window_seconds`` apart from the new memory.
    """
    if marked is None or marked.is_expired(memory.created_at):
        return False
    gap = abs((memory.occurred_at - marked.occurred_at).total_seconds())
    return gap < window_seconds


def memory_matches(memory: Memory, query: ListQuery) -> bool:
    """Whether a memory passes a list query's filters (a status filter selects facts)."""
    if query.kinds is not None and memory.kind not in query.kinds:
        return False
    if query.statuses is not None and getattr(memory, "status", None) not in query.statuses:
        return False
    if query.categories is not None and memory.category not in query.categories:
        return False
    if query.scopes is not None and memory.scope not in query.scopes:
        return False
    if query.session_id is not None and getattr(memory, "session_id", None) != query.session_id:
        return False
    if query.since is not None and memory.occurred_at < query.since:
        return False
    if query.until is not None and memory.occurred_at >= query.until:
        return False
    if query.created_after is not None and memory.created_at <= query.created_after:
        return False
    expired = query.now is not None and memory.is_expired(query.now)
    return query.include_expired or not expired


def document_passes(document: IndexDocument, search_filter: SearchFilter) -> bool:
    """Whether an index document passes a search filter (statuses apply to facts only)."""
    f = search_filter
    if document.tenant_id != f.tenant_id or document.user_id != f.user_id:
        return False
    if f.scopes is not None and document.scope not in f.scopes:
        return False
    if f.kinds is not None and document.kind not in f.kinds:
        return False
    if f.categories is not None and document.category not in f.categories:
        return False
    if f.emotions is not None and document.emotion not in f.emotions:
        return False
    if (
        f.statuses is not None
        and document.kind == MemoryKind.SEMANTIC
        and document.status not in f.statuses
    ):
        return False
    if f.since is not None and document.occurred_at < f.since:
        return False
    if f.until is not None and document.occurred_at >= f.until:
        return False
    if f.now is not None and document.expires_at is not None and document.expires_at <= f.now:
        return False
    return f.session_id is None or document.session_id == f.session_id


def model_mismatch(index_model: str, index_dim: int, vector: StoredVector) -> str:
    """The message of EmbeddingModelMismatchError: both models and what to do."""
    return (
        f"the search index holds vectors of embedding model {index_model!r} "
        f"(dimension {index_dim}) but got {vector.model!r} (dimension {vector.dim}); "
        "re-embed every memory with the new model (`hindsight reindex`) or configure "
        f"the original model {index_model!r} again"
    )


def _page(memories: Iterable[Memory], query: ListQuery, limit: int, cursor: str | None) -> Page:
    keyed = sorted(
        ((epoch_us(m.occurred_at), m.memory_id, m) for m in memories),
        key=lambda item: (item[0], item[1]),
        reverse=not query.oldest_first,
    )
    if cursor is not None:
        after = decode_page_cursor(cursor, query.oldest_first)
        if query.oldest_first:
            keyed = [item for item in keyed if (item[0], item[1]) > after]
        else:
            keyed = [item for item in keyed if (item[0], item[1]) < after]
    limit = max(1, limit)
    chosen = keyed[:limit]
    next_cursor = None
    if len(keyed) > limit:
        last = chosen[-1]
        next_cursor = encode_page_cursor(last[0], last[1], query.oldest_first)
    return Page(items=[item[2] for item in chosen], next_cursor=next_cursor)


# --- record store ------------------------------------------------------------------------
@dataclass
class _Marker:
    memory_id: str
    occurred_at: datetime


class InMemoryRecordStore:
    """RecordStore in a dict; memories are copied in and out, like a real database."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._memories: dict[tuple[str, str], Memory] = {}
        self._vectors: dict[tuple[str, str], StoredVector] = {}
        self._markers: dict[tuple[str, str, str], _Marker] = {}
        self._cursors: dict[tuple[str, str, str], datetime] = {}

    def put(
        self,
        memory: Memory,
        vector: StoredVector | None = None,
        dedup_key: str | None = None,
        dedup_window_seconds: float = 0.0,
    ) -> None:
        key = (memory.tenant_id, memory.memory_id)
        with self._lock:
            if key in self._memories:
                raise ConflictError(
                    f"memory {memory.memory_id} already exists; store it under a new id"
                )
            if dedup_key is not None:
                marker_key = (memory.tenant_id, memory.user_id, dedup_key)
                marker = self._markers.get(marker_key)
                if marker is not None:
                    marked = self._memories.get((memory.tenant_id, marker.memory_id))
                    if dedup_blocks(marked, memory, dedup_window_seconds):
                        raise DuplicateMemoryError(marker.memory_id)
                self._markers[marker_key] = _Marker(memory.memory_id, memory.occurred_at)
            self._memories[key] = memory.model_copy(deep=True)
            if vector is not None:
                self._vectors[key] = vector

    def update(self, memory: Memory, vector: StoredVector | None = None) -> None:
        key = (memory.tenant_id, memory.memory_id)
        with self._lock:
            if key not in self._memories:
                raise NotFoundError(f"memory {memory.memory_id} does not exist")
            self._memories[key] = memory.model_copy(deep=True)
            if vector is not None:
                self._vectors[key] = vector

    def get(self, tenant_id: str, memory_id: str) -> Memory | None:
        with self._lock:
            found = self._memories.get((tenant_id, memory_id))
            return None if found is None else found.model_copy(deep=True)

    def get_many(self, tenant_id: str, memory_ids: Sequence[str]) -> builtins.list[Memory]:
        with self._lock:
            found = (self._memories.get((tenant_id, mid)) for mid in memory_ids)
            return [m.model_copy(deep=True) for m in found if m is not None]

    def get_vectors(self, tenant_id: str, memory_ids: Sequence[str]) -> dict[str, StoredVector]:
        with self._lock:
            return {
                mid: self._vectors[(tenant_id, mid)]
                for mid in memory_ids
                if (tenant_id, mid) in self._vectors
            }

    def list(
        self,
        tenant_id: str,
        user_id: str,
        query: ListQuery,
        limit: int,
        cursor: str | None = None,
    ) -> Page:
        with self._lock:
            chosen = [
                m.model_copy(deep=True)
                for (tenant, _), m in self._memories.items()
                if tenant == tenant_id and m.user_id == user_id and memory_matches(m, query)
            ]
        return _page(chosen, query, limit, cursor)

    def delete(self, tenant_id: str, memory_id: str) -> bool:
        with self._lock:
            if self._memories.pop((tenant_id, memory_id), None) is None:
                return False
            self._vectors.pop((tenant_id, memory_id), None)
            for marker_key, marker in list(self._markers.items()):
                if marker_key[0] == tenant_id and marker.memory_id == memory_id:
                    del self._markers[marker_key]
            return True

    def erase_user(self, tenant_id: str, user_id: str) -> int:
        with self._lock:
            doomed = [
                key
                for key, m in self._memories.items()
                if key[0] == tenant_id and m.user_id == user_id
            ]
            for key in doomed:
                del self._memories[key]
                self._vectors.pop(key, None)
            for owned in (self._markers, self._cursors):
                for owned_key in [k for k in owned if k[0] == tenant_id and k[1] == user_id]:
                    del owned[owned_key]
            return len(doomed)

    def get_cursor(self, tenant_id: str, user_id: str, name: str) -> datetime | None:
        with self._lock:
            return self._cursors.get((tenant_id, user_id, name))

    def set_cursor(self, tenant_id: str, user_id: str, name: str, value: datetime) -> None:
        with self._lock:
            self._cursors[(tenant_id, user_id, name)] = value

    def iter_all(
        self, tenant_id: str | None = None
    ) -> Sequence[tuple[Memory, StoredVector | None]]:
        with self._lock:
            return [
                (m.model_copy(deep=True), self._vectors.get(key))
                for key, m in sorted(self._memories.items(), key=lambda item: item[0])
                if tenant_id is None or key[0] == tenant_id
            ]

    def users_with_episodes_since(self, since: datetime) -> builtins.list[tuple[str, str]]:
        with self._lock:
            return sorted(
                {
                    (m.tenant_id, m.user_id)
                    for m in self._memories.values()
                    if m.kind == MemoryKind.EPISODIC and m.created_at > since
                }
            )


# --- search index ------------------------------------------------------------------------
@dataclass
class _Entry:
    document: IndexDocument
    terms: Counter[str]
    length: int


@dataclass
class _Corpus:
    """BM25 statistics of one (tenant, user)."""

    documents: int = 0
    total_length: int = 0
    frequency: Counter[str] | None = None

    def add(self, entry: _Entry, sign: int) -> None:
        if self.frequency is None:
            self.frequency = Counter()
        self.documents += sign
        self.total_length += sign * entry.length
        for term in entry.terms:
            self.frequency[term] += sign
            if self.frequency[term] <= 0:
                del self.frequency[term]


class InMemorySearchIndex:
    """SearchIndex with exact BM25 (k1=1.2, b=0.75) per user and exact cosine search."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._corpora: dict[tuple[str, str], _Corpus] = {}
        self._model: tuple[str, int] | None = None

    def _check_model(self, vector: StoredVector) -> None:
        if self._model is not None and self._model != (vector.model, vector.dim):
            raise EmbeddingModelMismatchError(model_mismatch(*self._model, vector))

    def _remove(self, key: tuple[str, str]) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            owner = (entry.document.tenant_id, entry.document.user_id)
            self._corpora[owner].add(entry, -1)
            if self._corpora[owner].documents == 0:
                del self._corpora[owner]
        if not self._entries:
            self._model = None

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        with self._lock:
            fixed = self._model
            for document in documents:
                if fixed is None:
                    fixed = (document.vector.model, document.vector.dim)
                if fixed != (document.vector.model, document.vector.dim):
                    raise EmbeddingModelMismatchError(model_mismatch(*fixed, document.vector))
            for document in documents:
                key = (document.tenant_id, document.memory_id)
                self._remove(key)
                terms = Counter(tokenize(document.text))
                entry = _Entry(document, terms, sum(terms.values()))
                self._entries[key] = entry
                owner = (document.tenant_id, document.user_id)
                self._corpora.setdefault(owner, _Corpus()).add(entry, 1)
                self._model = (document.vector.model, document.vector.dim)

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        with self._lock:
            for memory_id in memory_ids:
                self._remove((tenant_id, memory_id))

    def delete_user(self, tenant_id: str, user_id: str) -> None:
        with self._lock:
            for key, entry in list(self._entries.items()):
                if key[0] == tenant_id and entry.document.user_id == user_id:
                    self._remove(key)

    def _passing(self, search_filter: SearchFilter) -> list[_Entry]:
        return [
            entry
            for entry in self._entries.values()
            if document_passes(entry.document, search_filter)
        ]

    def vector_search(
        self, search_filter: SearchFilter, vector: StoredVector, k: int
    ) -> list[SearchHit]:
        with self._lock:
            if self._model is None:
                return []
            self._check_model(vector)
            passing = self._passing(search_filter)
            if not passing or k <= 0:
                return []
            matrix = np.stack([e.document.vector.values for e in passing]).astype(np.float32)
            scores = matrix @ np.asarray(vector.values, dtype=np.float32)
        order = np.argsort(-scores, kind="stable")[:k]
        return [
            SearchHit(
                passing[i].document.memory_id, float(scores[i]), hit_facts(passing[i].document)
            )
            for i in order
        ]

    def keyword_search(self, search_filter: SearchFilter, text: str, k: int) -> list[SearchHit]:
        query_terms = set(tokenize(text))
        if not query_terms or k <= 0:
            return []
        with self._lock:
            corpus = self._corpora.get((search_filter.tenant_id, search_filter.user_id))
            if corpus is None or corpus.frequency is None:
                return []
            average = corpus.total_length / max(corpus.documents, 1)
            weights = {
                term: math.log(
                    1.0
                    + (corpus.documents - corpus.frequency[term] + 0.5)
                    / (corpus.frequency[term] + 0.5)
                )
                for term in query_terms
                if corpus.frequency[term] > 0
            }
            hits: list[SearchHit] = []
            for entry in self._passing(search_filter):
                score = 0.0
                norm = BM25_K1 * (1.0 - BM25_B + BM25_B * entry.length / max(average, 1e-9))
                for term, weight in weights.items():
                    tf = entry.terms.get(term, 0)
                    if tf:
                        score += weight * tf * (BM25_K1 + 1.0) / (tf + norm)
                if score > 0.0:
                    hits.append(
                        SearchHit(entry.document.memory_id, score, hit_facts(entry.document))
                    )
        hits.sort(key=lambda hit: (-hit.score, hit.memory_id))
        return hits[:k]

    def count(self, tenant_id: str | None = None) -> int:
        with self._lock:
            if tenant_id is None:
                return len(self._entries)
            return sum(1 for key in self._entries if key[0] == tenant_id)


def hit_facts(document: IndexDocument) -> HitFacts:
    return HitFacts(kind=document.kind, session_id=document.session_id)
