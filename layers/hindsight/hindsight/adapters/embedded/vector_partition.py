"""One partition of the in-process vector index: the rows of one (tenant, user).

A partition keeps its vectors in one float32 matrix (grown by doubling, removals by
swap-with-last), the filter fields in parallel numpy columns, BM25 postings of its rows'
terms and, once it is large, an HNSW graph. A long memory has one row per chunk (row
keys ``row_key``). ``VectorIndex`` (``vector_index.py``) owns the partitions, and the
locking rules are on ``Partition``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from hindsight.adapters.embedded.hnsw_graph import Graph
from hindsight.adapters.embedded.keyword_postings import Postings
from hindsight.adapters.embedded.rw_lock import ReadWriteLock

CODED = ("kind", "scope", "category", "emotion", "status", "session")


@dataclass
class Partition:
    """Vectors, filter columns, keyword postings and HNSW graph of one (tenant, user).

    ``lock`` guards all of it: searches read under ``lock.reading()``, every change
    (rows, postings, the graph) is made under ``lock.writing()``. ``retired`` is set,
    under the write lock, when the partition leaves its index (its user erased, its
    last memory deleted): a search that picked it up just before then finds nothing.
    """

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
    # rows of each memory: one, or one per chunk of a long memory (row keys ``row_key``)
    counts: dict[str, int] = field(default_factory=dict)
    lock: ReadWriteLock = field(default_factory=ReadWriteLock)
    retired: bool = False

    @property
    def extra(self) -> int:
        """Rows beyond one per memory (chunks after the first)."""
        return self.size - len(self.counts)

    def __post_init__(self) -> None:
        self.matrix = np.zeros((0, self.dim), dtype=np.float32)
        self.columns = {name: np.zeros(0, dtype=np.int32) for name in CODED}
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
        """Rows of one memory (replacing any it had): one per piece, keys ``row_key``."""
        self.remove_memory(memory_id)
        for number, (values, fields, terms) in enumerate(pieces):
            self.put(row_key(memory_id, number), values, fields, terms)
        self.counts[memory_id] = len(pieces)

    def remove_memory(self, memory_id: str) -> bool:
        count = self.counts.pop(memory_id, 0)
        for number in range(count):
            self.remove(row_key(memory_id, number))
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


def row_key(memory_id: str, number: int) -> str:
    """A row's key: the memory id for its first (or only) piece, ``id#n`` for chunk n."""
    return memory_id if number == 0 else f"{memory_id}#{number}"


def memory_of(row_key: str) -> str:
    return row_key.split("#", 1)[0]


def best_row_per_memory(partition: Partition, rows: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """The positions of ``ordered`` that keep each memory's first (best) row: a long memory's
    chunks are rows of their own, and a search returns the memory once."""
    seen: set[str] = set()
    keep = []
    for position, row in enumerate(rows[ordered].tolist()):
        memory_id = memory_of(partition.ids[row])
        if memory_id not in seen:
            seen.add(memory_id)
            keep.append(position)
    return ordered[np.asarray(keep, dtype=np.int64)]
