"""In-process, thread-safe record store and search index: the unit tests' fakes and a backend.

Nothing survives the process. Semantics follow ``hindsight.core.ports`` exactly and are
pinned by ``tests/contract``; filters are the core's own (``ListQuery.admits``,
``SearchFilter.admits``), paging and index rules those every adapter shares
(``hindsight.adapters.paging``, ``hindsight.adapters.backend_rules``).
"""

from __future__ import annotations

import builtins
import math
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from hindsight.adapters.backend_rules import (
    BM25_B,
    BM25_K1,
    already_exists,
    dedup_blocks,
    hit_facts,
    model_mismatch,
)
from hindsight.adapters.paging import page_of
from hindsight.core.errors import (
    DuplicateMemoryError,
    EmbeddingModelMismatchError,
    InvalidRequestError,
    NotFoundError,
)
from hindsight.core.indexing import piece_terms
from hindsight.core.models import (
    IndexDocument,
    ListQuery,
    Memory,
    MemoryKind,
    Page,
    SearchFilter,
    SearchHit,
    Span,
    StoredVector,
)
from hindsight.core.text import tokenize


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
        self._leases: dict[tuple[str, str, str], tuple[str, datetime]] = {}  # holder, until

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
                raise already_exists(memory)
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
            old = self._memories.get(key)
            if old is None:
                raise NotFoundError(f"memory {memory.memory_id} does not exist")
            # the counts are the store's (record_hits), whatever the caller read
            kept = {"hit_count": old.hit_count, "last_hit_at": old.last_hit_at}
            self._memories[key] = memory.model_copy(update=kept, deep=True)
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
                if tenant == tenant_id and m.user_id == user_id and query.admits(m)
            ]
        return page_of(chosen, query, limit, cursor)

    def list_ids(
        self, tenant_id: str, user_id: str, query: ListQuery, limit: int
    ) -> builtins.list[str]:
        with self._lock:  # the page sorts the memories themselves; no copies are made
            chosen = [
                m
                for (tenant, _), m in self._memories.items()
                if tenant == tenant_id and m.user_id == user_id and query.admits(m)
            ]
            return [m.memory_id for m in page_of(chosen, query, limit, None).items]

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
            for owned in (self._markers, self._cursors, self._leases):
                for owned_key in [k for k in owned if k[0] == tenant_id and k[1] == user_id]:
                    del owned[owned_key]
            return len(doomed)

    def get_cursor(self, tenant_id: str, user_id: str, name: str) -> datetime | None:
        with self._lock:
            return self._cursors.get((tenant_id, user_id, name))

    def set_cursor(self, tenant_id: str, user_id: str, name: str, value: datetime) -> None:
        with self._lock:
            self._cursors[(tenant_id, user_id, name)] = value

    def acquire_lease(
        self, tenant_id: str, user_id: str, name: str, holder: str, until: datetime, now: datetime
    ) -> bool:
        key = (tenant_id, user_id, name)
        with self._lock:
            held = self._leases.get(key)
            if held is not None and held[0] != holder and held[1] > now:
                return False
            self._leases[key] = (holder, until)
            return True

    def release_lease(self, tenant_id: str, user_id: str, name: str, holder: str) -> None:
        key = (tenant_id, user_id, name)
        with self._lock:
            if key in self._leases and self._leases[key][0] == holder:
                del self._leases[key]

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

    def record_hits(self, tenant_id: str, hits: Mapping[str, int], at: datetime) -> None:
        with self._lock:
            for memory_id, count in hits.items():
                found = self._memories.get((tenant_id, memory_id))
                if found is None:
                    continue
                last = found.last_hit_at
                found.hit_count += count
                found.last_hit_at = at if last is None or at > last else last


# --- search index ------------------------------------------------------------------------
@dataclass
class _Piece:
    """One searchable piece of a document: a chunk of a long memory, or the whole memory."""

    number: int
    span: Span | None
    values: np.ndarray
    terms: Counter[str]
    length: int


@dataclass
class _Entry:
    document: IndexDocument
    pieces: list[_Piece]

    def hit(self, piece: _Piece, score: float) -> SearchHit:
        chunked = piece.span is not None
        return SearchHit(
            self.document.memory_id,
            score,
            hit_facts(self.document),
            chunk=piece.number if chunked else None,
            span=piece.span,
        )


@dataclass
class _Corpus:
    """BM25 statistics of one (tenant, user); every piece counts as a document."""

    documents: int = 0
    total_length: int = 0
    frequency: Counter[str] | None = None

    def add(self, entry: _Entry, sign: int) -> None:
        if self.frequency is None:
            self.frequency = Counter()
        for piece in entry.pieces:
            self.documents += sign
            self.total_length += sign * piece.length
            for term in piece.terms:
                self.frequency[term] += sign
                if self.frequency[term] <= 0:
                    del self.frequency[term]


class InMemorySearchIndex:
    """SearchIndex with exact BM25 (k1 1.2, b 0) per user and exact inner-product search
    (the cosine of unit vectors).

    A long memory's chunks are searched one by one; a memory scores as its best chunk.
    """

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
                pieces = []
                for (number, _, values, span), words in zip(
                    document.pieces(), piece_terms(document), strict=True
                ):
                    terms = Counter(words)
                    pieces.append(_Piece(number, span, values, terms, sum(terms.values())))
                entry = _Entry(document, pieces)
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
        return [entry for entry in self._entries.values() if search_filter.admits(entry.document)]

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
            # every piece of every passing entry in one product; an entry scores as its best
            pieces = [(entry, piece) for entry in passing for piece in entry.pieces]
            matrix = np.stack([piece.values for _, piece in pieces]).astype(np.float32)
            scores = matrix @ np.asarray(vector.values, dtype=np.float32)
            best: dict[int, int] = {}
            for position, (entry, _) in enumerate(pieces):
                kept = best.get(id(entry))
                if kept is None or scores[position] > scores[kept]:
                    best[id(entry)] = position
        order = sorted(best.values(), key=lambda position: -scores[position])[:k]
        return [pieces[p][0].hit(pieces[p][1], float(scores[p])) for p in order]

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
                scored = [(_bm25(piece, weights, average), piece) for piece in entry.pieces]
                score, piece = max(scored, key=lambda pair: pair[0])
                if score > 0.0:
                    hits.append(entry.hit(piece, score))
        hits.sort(key=lambda hit: (-hit.score, hit.memory_id))
        return hits[:k]

    def count(self, tenant_id: str | None = None) -> int:
        with self._lock:
            if tenant_id is None:
                return len(self._entries)
            return sum(1 for key in self._entries if key[0] == tenant_id)

    def indexed_ids(
        self, tenant_id: str | None = None, user_id: str | None = None
    ) -> set[tuple[str, str]]:
        if user_id is not None and tenant_id is None:
            raise InvalidRequestError("indexed_ids: give the tenant of the user too")
        with self._lock:
            return {
                key
                for key, entry in self._entries.items()
                if tenant_id in (None, key[0]) and user_id in (None, entry.document.user_id)
            }


def _bm25(piece: _Piece, weights: dict[str, float], average: float) -> float:
    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * piece.length / max(average, 1e-9))
    score = 0.0
    for term, weight in weights.items():
        tf = piece.terms.get(term, 0)
        if tf:
            score += weight * tf * (BM25_K1 + 1.0) / (tf + norm)
    return score
