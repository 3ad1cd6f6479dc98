"""In-process vector and keyword index, partitioned per (tenant, user), filters as numpy masks.

Each partition keeps its vectors in one float32 matrix (grown by doubling, removals by
swap-with-last) and the filter fields in parallel numpy columns, so a ``SearchFilter``
is a vectorised mask. Search is exact (matrix @ query, masked, argpartition) while fewer
than ``ann_threshold`` vectors pass the filter; above that an HNSW graph (hnswlib, chosen
by ``bench/decisions/ann_choice.py``) is searched with oversampling and post-filtered, falling back
to exact search when the filter is too selective to fill ``k``. Returned scores are always
exact cosine similarities (vectors are L2-normalised).

Each partition also holds BM25 postings of its documents' terms (``keyword_postings``), so
keyword search shares the partition's filter columns and costs microseconds per term.

Graphs can be saved and loaded so a restart does not rebuild them; the vectors themselves
come from the caller (the record store is the source of truth) and ``load`` rebuilds any
graph whose ids or vectors no longer match.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hindsight.adapters.embedded.hnsw_graph import Graph
from hindsight.adapters.embedded.keyword_postings import Postings
from hindsight.adapters.index_rules import model_mismatch
from hindsight.adapters.paging import epoch_us
from hindsight.core.errors import EmbeddingModelMismatchError
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
_CODED = ("kind", "scope", "category", "emotion", "status", "session")
_SEMANTIC = 1


@dataclass
class _Partition:
    """Vectors and filter columns of one (tenant, user)."""

    dim: int
    size: int = 0
    ids: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    graph: Graph | None = None
    row_of_label: np.ndarray = field(default_factory=lambda: np.full(16, -1, dtype=np.int64))
    next_label: int = 0
    postings: Postings = field(default_factory=Postings)
    # rows of each memory: one, or one per chunk of a long memory (row keys ``_row_key``)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def extra(self) -> int:
        """Rows beyond one per memory (chunks after the first)."""
        return self.size - len(self.counts)

    def __post_init__(self) -> None:
        self.matrix = np.zeros((0, self.dim), dtype=np.float32)
        self.columns = {name: np.zeros(0, dtype=np.int32) for name in _CODED}
        self.columns["labels"] = np.zeros(0, dtype=np.int64)
        self.columns["doc"] = np.zeros(0, dtype=np.int64)
        self.columns["occurred"] = np.zeros(0, dtype=np.int64)
        self.columns["expires"] = np.zeros(0, dtype=np.int64)
        self.columns["start"] = np.zeros(0, dtype=np.int64)  # a chunk's span; -1: whole
        self.columns["end"] = np.zeros(0, dtype=np.int64)

    def _grow(self) -> None:
        capacity = max(16, 2 * self.matrix.shape[0])
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        matrix[: self.size] = self.matrix[: self.size]
        self.matrix = matrix
        for name, column in self.columns.items():
            grown = np.zeros(capacity, dtype=column.dtype)
            grown[: self.size] = column[: self.size]
            self.columns[name] = grown

    def put(
        self, memory_id: str, values: np.ndarray, fields: dict[str, int], terms: Sequence[str]
    ) -> None:
        row = self.rows.get(memory_id)
        if row is None:
            if self.size == self.matrix.shape[0]:
                self._grow()
            row = self.size
            self.size += 1
            self.ids.append(memory_id)
            self.rows[memory_id] = row
        else:  # a replaced document: its old postings and graph node go
            self.postings.remove(int(self.columns["doc"][row]))
            if self.graph is not None:
                old_label = int(self.columns["labels"][row])
                self.graph.remove(old_label)
                self.row_of_label[old_label] = -1
        self.matrix[row] = values
        for name, value in fields.items():
            self.columns[name][row] = value
        self.columns["doc"][row] = self.postings.add(row, terms)
        label = self.next_label
        self.next_label += 1
        self.columns["labels"][row] = label
        if label >= len(self.row_of_label):
            grown = np.full(2 * len(self.row_of_label), -1, dtype=np.int64)
            grown[: len(self.row_of_label)] = self.row_of_label
            self.row_of_label = grown
        self.row_of_label[label] = row
        if self.graph is not None:
            self.graph.add(np.asarray([label]), values[None, :])

    def add_memory(
        self,
        memory_id: str,
        pieces: Sequence[tuple[np.ndarray, dict[str, int], Sequence[str]]],
    ) -> None:
        """Rows of one memory (replacing any it had): one per piece, keys ``_row_key``."""
        self.remove_memory(memory_id)
        for number, (values, fields, terms) in enumerate(pieces):
            self.put(_row_key(memory_id, number), values, fields, terms)
        self.counts[memory_id] = len(pieces)

    def remove_memory(self, memory_id: str) -> bool:
        count = self.counts.pop(memory_id, 0)
        for number in range(count):
            self.remove(_row_key(memory_id, number))
        return count > 0

    def remove(self, memory_id: str) -> bool:
        row = self.rows.pop(memory_id, None)
        if row is None:
            return False
        label = int(self.columns["labels"][row])
        self.row_of_label[label] = -1
        self.postings.remove(int(self.columns["doc"][row]))
        if self.graph is not None:
            self.graph.remove(label)
            if self.graph.deleted > max(self.graph.live, 1_000):
                self.graph = None  # mostly tombstones: rebuilt compactly on the next search
        last = self.size - 1
        if row != last:  # swap the last row into the hole
            moved_id = self.ids[last]
            self.ids[row] = moved_id
            self.rows[moved_id] = row
            self.matrix[row] = self.matrix[last]
            for column in self.columns.values():
                column[row] = column[last]
            self.row_of_label[int(self.columns["labels"][row])] = row
            self.postings.move(int(self.columns["doc"][row]), row)
        self.ids.pop()
        self.size -= 1
        return True

    def build_graph(self) -> None:
        graph = Graph(self.dim, capacity=max(16, int(self.size * 1.25)))
        graph.add(self.columns["labels"][: self.size].copy(), self.matrix[: self.size])
        self.graph = graph

    def fingerprint(self) -> list[float]:
        """Column sums of the vectors: changes when any vector is added, removed or replaced."""
        return [float(x) for x in self.matrix[: self.size].sum(axis=0, dtype=np.float64)]


def _row_key(memory_id: str, number: int) -> str:
    """A row's key: the memory id for its first (or only) piece, ``id#n`` for chunk n."""
    return memory_id if number == 0 else f"{memory_id}#{number}"


def _memory_of(row_key: str) -> str:
    return row_key.split("#", 1)[0]


def _partition_file(tenant_id: str, user_id: str) -> str:
    digest = hashlib.sha256(f"{tenant_id}\x00{user_id}".encode()).hexdigest()[:24]
    return f"p_{digest}"


class VectorIndex:
    """Partitioned, filtered cosine search over L2-normalised float32 vectors."""

    def __init__(self, ann_threshold: int = ANN_THRESHOLD, persist_dir: Path | None = None) -> None:
        self.ann_threshold = max(1, ann_threshold)
        self.persist_dir = persist_dir
        self._lock = threading.RLock()
        self._partitions: dict[tuple[str, str], _Partition] = {}
        self._owners: dict[tuple[str, str], tuple[str, str]] = {}  # (tenant, id) -> partition
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
            code = self._codes[value] = len(self._codes)
            self._values.append(value)
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

    def upsert(
        self,
        documents: Sequence[IndexDocument],
        terms: Sequence[Sequence[Sequence[str]]] | None = None,
    ) -> None:
        """Add or replace documents; EmbeddingModelMismatchError if a vector's model differs.

        ``terms`` are the keyword terms (``core.text.tokenize`` of the text) of each
        document's pieces (``IndexDocument.pieces``), computed here when not given.
        """
        if terms is None:
            terms = [[tokenize(text) for _, text, _, _ in doc.pieces()] for doc in documents]
        with self._lock:
            fixed = self._model
            for document in documents:
                self._check(document.vector, fixed)
                fixed = fixed or (document.vector.model, document.vector.dim)
            for document, document_terms in zip(documents, terms, strict=True):
                key = (document.tenant_id, document.memory_id)
                owner = (document.tenant_id, document.user_id)
                previous = self._owners.get(key)
                if previous is not None and previous != owner:
                    self._partitions[previous].remove_memory(document.memory_id)
                partition = self._partitions.get(owner)
                if partition is None:
                    partition = self._partitions[owner] = _Partition(document.vector.dim)
                fields = self._fields(document)
                pieces = []
                for (_, _, values, span), piece_terms in zip(
                    document.pieces(), document_terms, strict=True
                ):
                    start, end = span if span is not None else (-1, -1)
                    pieces.append((values, {**fields, "start": start, "end": end}, piece_terms))
                partition.add_memory(document.memory_id, pieces)
                self._owners[key] = owner
            self._model = fixed

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        with self._lock:
            for memory_id in memory_ids:
                owner = self._owners.pop((tenant_id, memory_id), None)
                if owner is not None:
                    self._partitions[owner].remove_memory(memory_id)
                    if self._partitions[owner].size == 0:
                        del self._partitions[owner]
            self._forget_model_if_empty()

    def delete_user(self, tenant_id: str, user_id: str) -> None:
        with self._lock:
            partition = self._partitions.pop((tenant_id, user_id), None)
            if partition is not None:
                for memory_id in partition.counts:
                    self._owners.pop((tenant_id, memory_id), None)
            self._forget_model_if_empty()

    def clear(self) -> None:
        with self._lock:
            self._partitions.clear()
            self._owners.clear()
            self._codes.clear()
            self._values.clear()
            self._model = None

    def _forget_model_if_empty(self) -> None:
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
        with self._lock:
            partition = self._partitions.get((tenant_id, user_id))
            return partition is not None and partition.graph is not None

    def _mask(self, partition: _Partition, f: SearchFilter) -> np.ndarray:
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
            if self._model is None:
                return []
            self._check(vector, self._model)
            owner = (search_filter.tenant_id, search_filter.user_id)
            partition = self._partitions.get(owner)
            if partition is None or k <= 0:
                return []
            query = np.asarray(vector.values, dtype=np.float32)
            mask = self._mask(partition, search_filter)
            passing = int(mask.sum())
            if passing == 0:
                return []
            if passing >= self.ann_threshold and partition.size >= self.ann_threshold:
                wanted = k + min(partition.extra, 7 * k)  # rows enough for k memories
                rows = self._approximate(owner, partition, query, mask, passing, wanted)
                if rows is not None:
                    return self._ranked(partition, query, rows, k)
            if passing == partition.size:
                scores = partition.matrix[: partition.size] @ query
                return self._top(partition, np.arange(partition.size), scores, k)
            rows = np.flatnonzero(mask)
            return self._top(partition, rows, partition.matrix[rows] @ query, k)

    def keyword_search(self, search_filter: SearchFilter, text: str, k: int) -> list[SearchHit]:
        """Top ``k`` by BM25 over the partition's documents passing the filter."""
        terms = tokenize(text)
        with self._lock:
            partition = self._partitions.get((search_filter.tenant_id, search_filter.user_id))
            if partition is None or k <= 0 or not terms:
                return []
            scores = partition.postings.scores(terms, partition.size)
            matched = scores > 0.0
            if not matched.any():
                return []
            rows = np.flatnonzero(matched & self._mask(partition, search_filter))
            return self._top(partition, rows, scores[rows], k)

    def _approximate(
        self,
        owner: tuple[str, str],
        partition: _Partition,
        query: np.ndarray,
        mask: np.ndarray,
        passing: int,
        k: int,
    ) -> np.ndarray | None:
        """Rows of ANN candidates that pass the mask (at least k), or None to go exact."""
        if partition.graph is None:
            partition.build_graph()
            self._persist(owner, partition)
        graph = partition.graph
        assert graph is not None
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
        self, partition: _Partition, query: np.ndarray, rows: np.ndarray, k: int
    ) -> list[SearchHit]:
        return self._top(partition, rows, partition.matrix[rows] @ query, k)

    def _top(
        self, partition: _Partition, rows: np.ndarray, scores: np.ndarray, k: int
    ) -> list[SearchHit]:
        """The ``k`` best memories among scored rows; a memory with several (chunk) rows
        counts once, with its best row."""
        wanted = min(len(scores), k + partition.extra)
        chosen = np.arange(len(scores))
        if len(scores) > wanted:
            chosen = np.argpartition(-scores, wanted - 1)[:wanted]
        chosen = chosen[np.lexsort((rows[chosen], -scores[chosen]))]
        if partition.extra:
            chosen = self._best_row_per_memory(partition, rows, chosen)
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
            hits.append(SearchHit(_memory_of(key), score, facts, number, (start, end)))
        return hits

    @staticmethod
    def _best_row_per_memory(
        partition: _Partition, rows: np.ndarray, ordered: np.ndarray
    ) -> np.ndarray:
        seen: set[str] = set()
        keep = []
        for position, row in enumerate(rows[ordered].tolist()):
            memory_id = _memory_of(partition.ids[row])
            if memory_id not in seen:
                seen.add(memory_id)
                keep.append(position)
        return ordered[np.asarray(keep, dtype=np.int64)]

    # --- persistence -------------------------------------------------------------------
    def _persist(self, owner: tuple[str, str], partition: _Partition) -> None:
        if self.persist_dir is None:
            return
        try:
            self._save_partition(self.persist_dir, owner, partition)
        except (OSError, RuntimeError) as exc:
            logger.warning("ann graph not saved dir=%s error=%s", self.persist_dir, exc)

    def _save_partition(self, directory: Path, owner: tuple[str, str], part: _Partition) -> None:
        assert part.graph is not None
        directory.mkdir(parents=True, exist_ok=True)
        name = _partition_file(*owner)
        part.graph.save(directory / f"{name}.hnsw.tmp")
        os.replace(directory / f"{name}.hnsw.tmp", directory / f"{name}.hnsw")
        meta = {
            "tenant_id": owner[0],
            "user_id": owner[1],
            "model": list(self._model) if self._model else None,
            "ids": part.ids[: part.size],
            "labels": [int(x) for x in part.columns["labels"][: part.size]],
            "next_label": part.next_label,
            "fingerprint": part.fingerprint(),
        }
        (directory / f"{name}.json.tmp").write_text(json.dumps(meta))
        os.replace(directory / f"{name}.json.tmp", directory / f"{name}.json")

    def save(self, directory: Path) -> int:
        """Save every partition's HNSW graph; returns how many were saved."""
        with self._lock:
            saved = 0
            for owner, partition in self._partitions.items():
                if partition.graph is not None:
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
        with self._lock:
            for meta_path in sorted(directory.glob("p_*.json")):
                meta = self._read_meta(meta_path)
                owner = (str(meta.get("tenant_id")), str(meta.get("user_id")))
                partition = self._partitions.get(owner)
                if partition is None or not self._matches(partition, meta):
                    outcome["stale"] += 1
                    continue
                graph_path = meta_path.with_name(meta_path.name[: -len(".json")] + ".hnsw")
                try:
                    graph = Graph.load(graph_path, partition.dim, live=partition.size)
                except (OSError, RuntimeError) as exc:
                    logger.warning("ann graph unreadable path=%s error=%s", graph_path, exc)
                    outcome["stale"] += 1
                    continue
                saved = dict(zip(meta["ids"], meta["labels"], strict=True))
                for row, memory_id in enumerate(partition.ids[: partition.size]):
                    partition.columns["labels"][row] = saved[memory_id]
                partition.next_label = int(meta["next_label"])
                labels = partition.columns["labels"][: partition.size]
                partition.row_of_label = np.full(max(16, partition.next_label), -1, dtype=np.int64)
                partition.row_of_label[labels] = np.arange(partition.size)
                partition.graph = graph
                outcome["restored"] += 1
        logger.info("ann graphs loaded restored=%d stale=%d", outcome["restored"], outcome["stale"])
        return outcome

    @staticmethod
    def _read_meta(path: Path) -> dict[str, Any]:
        try:
            meta = json.loads(path.read_text())
        except (OSError, ValueError):
            return {}
        return meta if isinstance(meta, dict) else {}

    def _matches(self, partition: _Partition, meta: dict[str, Any]) -> bool:
        if not self._model or meta.get("model") != list(self._model):
            return False
        ids, labels = meta.get("ids", []), meta.get("labels", [])
        if len(ids) != partition.size or len(labels) != partition.size:
            return False
        if set(ids) != set(partition.ids[: partition.size]) or "next_label" not in meta:
            return False
        saved = np.asarray(meta.get("fingerprint", []), dtype=np.float64)
        current = np.asarray(partition.fingerprint(), dtype=np.float64)
        return saved.shape == current.shape and bool(np.allclose(saved, current, atol=1e-3))
