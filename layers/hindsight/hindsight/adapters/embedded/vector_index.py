"""In-process vector and keyword index, partitioned per (tenant, user), filters as numpy masks.

Each partition (``vector_partition.py``) keeps its vectors in one float32 matrix and the
filter fields in parallel numpy columns, so a ``SearchFilter`` is a vectorised mask. Search
is exact (matrix @ query, masked, argpartition) while fewer than ``ann_threshold`` vectors
pass the filter; above that an HNSW graph (hnswlib, chosen in docs/decisions.md) is
searched with oversampling and post-filtered, falling back to exact search when the filter
is too selective to fill ``k``. Scores are exact inner products: the cosine for a unit
vector, the mix of two cosines for a session turn's mixed vector (``core/embedding.py``).

Each partition also holds BM25 postings of its documents' terms (``keyword_postings``), so
keyword search shares the partition's filter columns and costs microseconds per term.

Graphs are saved (``vector_graph_files.py``) so a restart does not rebuild them; the vectors
come from the caller (the record store is the source of truth), and a graph whose ids or
vectors no longer match is rebuilt.

Each partition has its own readers-writer lock (``VectorIndex``'s docstring): a search sees
each write to its partition whole or not at all, and writes are one at a time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from hindsight.adapters.backend_rules import model_mismatch
from hindsight.adapters.embedded.vector_graph_files import (
    attach_saved_graph,
    read_meta,
    remove_saved_graph,
    save_graph,
)
from hindsight.adapters.embedded.vector_partition import (
    Partition,
    best_row_per_memory,
    memory_of,
)
from hindsight.adapters.paging import epoch_us
from hindsight.core.errors import EmbeddingModelMismatchError
from hindsight.core.indexing import piece_terms as terms_of_pieces
from hindsight.core.models import (
    HitFacts,
    IndexDocument,
    MemoryKind,
    SearchFilter,
    SearchHit,
    StoredVector,
)
from hindsight.core.text import tokenize

logger = logging.getLogger(__name__)

ANN_THRESHOLD = 20_000  # a search of at least this many vectors goes through an HNSW graph
_NEVER = np.iinfo(np.int64).max
_NONE = -1  # code of a missing string field
# one piece (a row) of a memory: its vector, its filter fields, its keyword terms
_Piece = tuple[np.ndarray, dict[str, int], Sequence[str]]
_SEMANTIC = 1


class VectorIndex:
    """Partitioned, filtered inner-product search over float32 vectors; thread-safe.

    Locking: writes (``upsert``, ``delete``, ``delete_user``, ``clear``) take
    ``_write_lock``, one at a time, and within it the write lock of each partition they
    change, so a write holds up only the searches of the users it writes. Searches take
    no index-wide lock but a moment of ``_lock`` (the partition table, owners, codes and
    model, never held while waiting for anything else) and then their partition's read
    lock. Lock order: ``_write_lock``, a partition's lock, ``_lock``.
    """

    def __init__(self, ann_threshold: int = ANN_THRESHOLD, persist_dir: Path | None = None) -> None:
        self.ann_threshold = max(1, ann_threshold)
        self.persist_dir = persist_dir
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()
        self._partitions: dict[tuple[str, str], Partition] = {}
        self._owners: dict[tuple[str, str], tuple[str, str]] = {}  # (tenant, id) -> partition
        # interned strings of the filter columns; they only grow, so readers use them unlocked
        self._codes: dict[str, int] = {}
        self._values: list[str] = []  # code -> value
        self._model: tuple[str, int] | None = None

    # --- model -------------------------------------------------------------------------
    @property
    def model(self) -> tuple[str, int] | None:
        """(model name, dimension) of the vectors held, or None while empty."""
        return self._model

    def _check(self, vector: StoredVector, fixed: tuple[str, int] | None) -> None:
        if fixed is not None and fixed != (vector.model, vector.dim):
            raise EmbeddingModelMismatchError(model_mismatch(*fixed, vector))

    # --- writes ------------------------------------------------------------------------
    def _code(self, value: str | None) -> int:
        if value is None:
            return _NONE
        code = self._codes.get(value)
        if code is None:
            self._values.append(value)  # before the code is visible to readers
            code = self._codes[value] = len(self._values) - 1
        return code

    def _fields(self, document: IndexDocument) -> dict[str, int]:
        status = document.status.value if document.status is not None else None
        return {
            "kind": _SEMANTIC if document.kind == MemoryKind.SEMANTIC else 0,
            "scope": self._code(document.scope),
            "category": self._code(document.category),
            "emotion": self._code(document.emotion),
            "status": self._code(status),
            "session": self._code(document.session_id),
            "occurred": epoch_us(document.occurred_at),
            "expires": _NEVER if document.expires_at is None else epoch_us(document.expires_at),
        }

    def _pieces(self, document: IndexDocument, terms: Sequence[Sequence[str]]) -> list[_Piece]:
        fields = self._fields(document)
        pieces = []
        for (_, _, values, span), piece_terms in zip(document.pieces(), terms, strict=True):
            start, end = span if span is not None else (-1, -1)
            pieces.append((values, {**fields, "start": start, "end": end}, piece_terms))
        return pieces

    def upsert(
        self,
        documents: Sequence[IndexDocument],
        terms: Sequence[Sequence[Sequence[str]]] | None = None,
    ) -> None:
        """Add or replace documents; EmbeddingModelMismatchError if a vector's model differs.

        ``terms`` are the keyword terms (``core.text.tokenize`` of the text) of each
        document's pieces (``IndexDocument.pieces``), computed here when not given. Each
        partition's share of the documents appears to its searches all at once.
        """
        if terms is None:
            terms = [terms_of_pieces(doc) for doc in documents]
        with self._write_lock:
            fixed = self._model
            for document in documents:
                self._check(document.vector, fixed)
                fixed = fixed or (document.vector.model, document.vector.dim)
            by_owner: dict[tuple[str, str], list[tuple[str, list[_Piece]]]] = {}
            with self._lock:
                for document, document_terms in zip(documents, terms, strict=True):
                    owner = (document.tenant_id, document.user_id)
                    pieces = self._pieces(document, document_terms)
                    by_owner.setdefault(owner, []).append((document.memory_id, pieces))
            for owner, memories in by_owner.items():
                assert fixed is not None
                self._write_partition(owner, fixed, memories)

    def _write_partition(
        self,
        owner: tuple[str, str],
        model: tuple[str, int],
        memories: Sequence[tuple[str, Sequence[_Piece]]],
    ) -> None:
        """Put memories into the owner's partition (made if missing); caller holds
        ``_write_lock``. A memory that was another user's leaves that user's partition."""
        with self._lock:
            partition = self._partitions.get(owner)
            if partition is None:
                partition = self._partitions[owner] = Partition(model[1])
        moved: dict[tuple[str, str], list[str]] = {}
        with partition.lock.writing():
            for memory_id, pieces in memories:
                partition.add_memory(memory_id, pieces)
            with self._lock:
                for memory_id, _ in memories:
                    previous = self._owners.get((owner[0], memory_id))
                    if previous is not None and previous != owner:
                        moved.setdefault(previous, []).append(memory_id)
                    self._owners[(owner[0], memory_id)] = owner
                self._model = model
        for previous, memory_ids in moved.items():
            self._remove_rows(previous, memory_ids)

    def _remove_rows(self, owner: tuple[str, str], memory_ids: Sequence[str]) -> None:
        """Remove memories' rows from a partition, and the partition once it is empty;
        caller holds ``_write_lock``."""
        with self._lock:
            partition = self._partitions.get(owner)
        if partition is None:
            return
        with partition.lock.writing():
            for memory_id in memory_ids:
                partition.remove_memory(memory_id)
            if partition.size == 0:
                with self._lock:
                    del self._partitions[owner]
                    partition.retired = True
        if partition.retired:
            self._unpersist(owner)

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        with self._write_lock:
            by_owner: dict[tuple[str, str], list[str]] = {}
            with self._lock:
                for memory_id in memory_ids:
                    owner = self._owners.pop((tenant_id, memory_id), None)
                    if owner is not None:
                        by_owner.setdefault(owner, []).append(memory_id)
            for owner, owned in by_owner.items():
                self._remove_rows(owner, owned)
            self._forget_model_if_empty()

    def delete_user(self, tenant_id: str, user_id: str) -> None:
        with self._write_lock:
            with self._lock:
                partition = self._partitions.pop((tenant_id, user_id), None)
            if partition is not None:
                with partition.lock.writing():  # searches already inside finish first
                    partition.retired = True
                with self._lock:
                    for memory_id in partition.counts:
                        self._owners.pop((tenant_id, memory_id), None)
            # its saved graph too (whether or not this process held the partition): the
            # graph file holds the user's vectors and memory ids
            self._unpersist((tenant_id, user_id))
            self._forget_model_if_empty()

    def clear(self) -> None:
        with self._write_lock:
            with self._lock:
                partitions = list(self._partitions.values())
                self._partitions.clear()
                self._owners.clear()
                self._model = None
            for partition in partitions:
                with partition.lock.writing():
                    partition.retired = True

    def _forget_model_if_empty(self) -> None:
        with self._lock:
            if not self._owners:
                self._model = None

    # --- reads -------------------------------------------------------------------------
    def count(self, tenant_id: str | None = None) -> int:
        with self._lock:
            if tenant_id is None:
                return len(self._owners)
            return sum(len(p.counts) for (t, _), p in self._partitions.items() if t == tenant_id)

    def has_graph(self, tenant_id: str, user_id: str) -> bool:
        """Whether that partition currently has an HNSW graph (for tests and diagnostics)."""
        with self._reading((tenant_id, user_id)) as partition:
            return partition is not None and partition.graph is not None

    @contextmanager
    def _reading(self, owner: tuple[str, str]) -> Iterator[Partition | None]:
        """The owner's partition under its read lock; None if it has none (or it was
        erased while this search waited)."""
        with self._lock:
            partition = self._partitions.get(owner)
        if partition is None:
            yield None
            return
        with partition.lock.reading():
            yield None if partition.retired else partition

    def _mask(self, partition: Partition, f: SearchFilter) -> np.ndarray:
        n = partition.size
        columns = partition.columns
        mask = np.ones(n, dtype=bool)

        def among(name: str, values: frozenset[str] | None) -> None:
            nonlocal mask
            if values is not None:
                codes = [self._codes[v] for v in values if v in self._codes]
                mask &= np.isin(columns[name][:n], np.asarray(codes, dtype=np.int32))

        among("scope", f.scopes)
        if f.kinds is not None:
            kinds = [_SEMANTIC if k == MemoryKind.SEMANTIC else 0 for k in f.kinds]
            mask &= np.isin(columns["kind"][:n], np.asarray(kinds, dtype=np.int32))
        among("category", f.categories)
        among("emotion", f.emotions)
        if f.statuses is not None:
            codes = [self._codes[s.value] for s in f.statuses if s.value in self._codes]
            allowed = np.isin(columns["status"][:n], np.asarray(codes, dtype=np.int32))
            mask &= (columns["kind"][:n] != _SEMANTIC) | allowed
        if f.since is not None:
            mask &= columns["occurred"][:n] >= epoch_us(f.since)
        if f.until is not None:
            mask &= columns["occurred"][:n] < epoch_us(f.until)
        if f.now is not None:
            mask &= columns["expires"][:n] > epoch_us(f.now)
        if f.session_id is not None:
            mask &= columns["session"][:n] == self._codes.get(f.session_id, -2)
        return mask

    def search(self, search_filter: SearchFilter, vector: StoredVector, k: int) -> list[SearchHit]:
        """Top ``k`` by cosine similarity among the partition's documents passing the filter."""
        with self._lock:
            model = self._model
        if model is None:
            return []
        self._check(vector, model)
        if k <= 0:
            return []
        owner = (search_filter.tenant_id, search_filter.user_id)
        query = np.asarray(vector.values, dtype=np.float32)
        for may_build in (True, False):
            with self._reading(owner) as partition:
                if partition is None:
                    return []
                hits = self._search(partition, search_filter, query, k, may_build)
            if hits is not None:
                return hits
            self._build_graph(owner)
        raise AssertionError("unreachable: the second pass never asks for a graph")

    def _search(
        self,
        partition: Partition,
        search_filter: SearchFilter,
        query: np.ndarray,
        k: int,
        may_build: bool,
    ) -> list[SearchHit] | None:
        """The hits, under the partition's read lock; None when an HNSW graph should be
        built first (only if ``may_build``; otherwise a missing graph means exact search)."""
        mask = self._mask(partition, search_filter)
        passing = int(mask.sum())
        if passing == 0:
            return []
        if passing >= self.ann_threshold and partition.size >= self.ann_threshold:
            if partition.graph is None and may_build:
                return None
            wanted = k + min(partition.extra, 7 * k)  # rows enough for k memories
            rows = self._approximate(partition, query, mask, passing, wanted)
            if rows is not None:
                return self._ranked(partition, query, rows, k)
        if passing == partition.size:
            scores = partition.matrix[: partition.size] @ query
            return self._top(partition, np.arange(partition.size), scores, k)
        rows = np.flatnonzero(mask)
        return self._top(partition, rows, partition.matrix[rows] @ query, k)

    def _build_graph(self, owner: tuple[str, str]) -> None:
        """Build (and save) the partition's HNSW graph under its write lock: the user's
        searches wait for it, other users' do not."""
        with self._lock:
            partition = self._partitions.get(owner)
        if partition is None:
            return
        with partition.lock.writing():
            if partition.graph is None and not partition.retired and partition.size:
                partition.build_graph()
                self._persist(owner, partition)

    def keyword_search(self, search_filter: SearchFilter, text: str, k: int) -> list[SearchHit]:
        """Top ``k`` by BM25 over the partition's documents passing the filter."""
        terms = tokenize(text)
        if k <= 0 or not terms:
            return []
        with self._reading((search_filter.tenant_id, search_filter.user_id)) as partition:
            if partition is None:
                return []
            scores = partition.postings.scores(terms, partition.size)
            matched = scores > 0.0
            if not matched.any():
                return []
            rows = np.flatnonzero(matched & self._mask(partition, search_filter))
            return self._top(partition, rows, scores[rows], k)

    def _approximate(
        self,
        partition: Partition,
        query: np.ndarray,
        mask: np.ndarray,
        passing: int,
        k: int,
    ) -> np.ndarray | None:
        """Rows of ANN candidates that pass the mask (at least k), or None to go exact."""
        graph = partition.graph
        if graph is None:
            return None
        # oversample by how selective the filter is, then grow until k candidates pass
        fetch = min(graph.live, k * 4 * max(1, -(-partition.size // passing)))
        for _ in range(3):
            try:
                labels = graph.search(query, fetch)
            except RuntimeError as exc:  # hnswlib could not collect `fetch` live neighbours
                logger.warning("ann search fell back to exact error=%s", exc)
                return None
            rows = partition.row_of_label[labels]
            rows = rows[mask[rows]] if len(rows) else rows
            if len(rows) >= k or fetch >= graph.live:
                return rows
            fetch = min(graph.live, fetch * 4)
        return None  # the filter defeats the graph: exact search over the passing rows

    def _ranked(
        self, partition: Partition, query: np.ndarray, rows: np.ndarray, k: int
    ) -> list[SearchHit]:
        return self._top(partition, rows, partition.matrix[rows] @ query, k)

    def _top(
        self, partition: Partition, rows: np.ndarray, scores: np.ndarray, k: int
    ) -> list[SearchHit]:
        """The ``k`` best memories among scored rows; a memory with several (chunk) rows
        counts once, with its best row."""
        wanted = min(len(scores), k + partition.extra)
        chosen = np.arange(len(scores))
        if len(scores) > wanted:
            chosen = np.argpartition(-scores, wanted - 1)[:wanted]
        chosen = chosen[np.lexsort((rows[chosen], -scores[chosen]))]
        if partition.extra:
            chosen = best_row_per_memory(partition, rows, chosen)
        top_rows = rows[chosen[:k]]
        columns = partition.columns
        kinds = columns["kind"][top_rows].tolist()
        sessions = columns["session"][top_rows].tolist()
        starts, ends = columns["start"][top_rows].tolist(), columns["end"][top_rows].tolist()
        values = self._values
        hits = []
        for row, score, kind, session, start, end in zip(
            top_rows.tolist(),
            scores[chosen[:k]].tolist(),
            kinds,
            sessions,
            starts,
            ends,
            strict=True,
        ):
            key = partition.ids[row]
            facts = HitFacts(
                kind=MemoryKind.SEMANTIC if kind == _SEMANTIC else MemoryKind.EPISODIC,
                session_id=None if session == _NONE else values[session],
            )
            if start < 0:
                hits.append(SearchHit(key, score, facts))
                continue
            number = int(key.split("#", 1)[1]) if "#" in key else 0
            hits.append(SearchHit(memory_of(key), score, facts, number, (start, end)))
        return hits

    # --- persistence -------------------------------------------------------------------
    def _persist(self, owner: tuple[str, str], partition: Partition) -> None:
        if self.persist_dir is None:
            return
        try:
            self._save_partition(self.persist_dir, owner, partition)
        except (OSError, RuntimeError) as exc:
            logger.warning("ann graph not saved dir=%s error=%s", self.persist_dir, exc)

    def _unpersist(self, owner: tuple[str, str]) -> None:
        """Delete the owner's saved graph, if any (a retired partition is never saved
        again)."""
        if self.persist_dir is not None:
            remove_saved_graph(self.persist_dir, owner)

    def _save_partition(self, directory: Path, owner: tuple[str, str], part: Partition) -> None:
        save_graph(directory, owner, part, self._model)

    def save(self, directory: Path) -> int:
        """Save every partition's HNSW graph; returns how many were saved."""
        with self._write_lock:
            with self._lock:
                partitions = list(self._partitions.items())
            saved = 0
            for owner, partition in partitions:
                with partition.lock.reading():
                    if partition.graph is not None and not partition.retired:
                        self._save_partition(directory, owner, partition)
                        saved += 1
            return saved

    def load(self, directory: Path) -> dict[str, int]:
        """Attach saved graphs to the (already filled) partitions they still match.

        A graph whose partition's ids, vectors or model changed since it was saved is
        stale: it is dropped and rebuilt from the vectors on the next search that needs
        it. Returns counts of graphs ``restored`` and ``stale``.
        """
        outcome = {"restored": 0, "stale": 0}
        if not directory.is_dir():
            return outcome
        with self._write_lock:
            for meta_path in sorted(directory.glob("p_*.json")):
                meta = read_meta(meta_path)
                owner = (str(meta.get("tenant_id")), str(meta.get("user_id")))
                with self._lock:
                    partition = self._partitions.get(owner)
                attached = False
                if partition is not None:
                    with partition.lock.writing():
                        attached = attach_saved_graph(partition, meta, meta_path, self._model)
                outcome["restored" if attached else "stale"] += 1
        logger.info("ann graphs loaded restored=%d stale=%d", outcome["restored"], outcome["stale"])
        return outcome
