"""An hnswlib HNSW graph over (label, vector) pairs, as the in-process vector index uses it.

Parameters chosen in docs/decisions.md ("Storage and indexes"). hnswlib allows searches side by
side but not a search beside an addition or a removal: the owning partition's
readers-writer lock provides that. The search breadth ``ef`` is set once, when the graph
is made or loaded (hnswlib searches with ``max(ef, k)``), so that concurrent searches
never change it under each other.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128
# recall 0.996 at k=10 on 100k clustered vectors (docs/decisions.md)
HNSW_EF_SEARCH = 128


class Graph:
    """An hnswlib HNSW graph over (label, vector) pairs; removal zeroes a label's vector and
    marks it deleted."""

    def __init__(self, dim: int, capacity: int) -> None:
        import hnswlib

        self.dim = dim
        self.index = hnswlib.Index(space="ip", dim=dim)
        self.index.init_index(
            max_elements=max(capacity, 16), M=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION
        )
        self.index.set_ef(HNSW_EF_SEARCH)
        self.live = 0
        self.deleted = 0

    @classmethod
    def load(cls, path: Path, dim: int, live: int) -> Graph:
        import hnswlib

        graph = cls.__new__(cls)
        graph.dim = dim
        graph.index = hnswlib.Index(space="ip", dim=dim)
        graph.index.load_index(str(path))
        graph.index.set_ef(HNSW_EF_SEARCH)
        graph.live = live
        graph.deleted = graph.index.element_count - live
        return graph

    def add(self, labels: np.ndarray, vectors: np.ndarray) -> None:
        needed = self.index.element_count + len(labels)
        if needed > self.index.max_elements:
            self.index.resize_index(max(needed, 2 * self.index.max_elements))
        self.index.add_items(vectors, labels, num_threads=-1 if len(labels) > 1_000 else 1)
        self.live += len(labels)

    def remove(self, label: int) -> None:
        """Mark ``label`` deleted, its vector overwritten with zeros first: hnswlib keeps a
        deleted element's vector, in memory and in the saved file, until the graph is
        rebuilt, and a forgotten memory's embedding must not stay on disk. Costs one
        re-link of the element: docs/decisions.md has the time a delete takes and the
        recall with a third of 20k vectors deleted."""
        zeros = np.zeros((1, self.dim), dtype=np.float32)
        self.index.add_items(zeros, np.asarray([int(label)]), num_threads=1)
        self.index.mark_deleted(int(label))
        self.live -= 1
        self.deleted += 1

    def search(self, query: np.ndarray, count: int) -> np.ndarray:
        count = min(count, self.live)
        if count <= 0:
            return np.zeros(0, dtype=np.int64)
        labels, _ = self.index.knn_query(query, k=count, num_threads=1)
        return np.asarray(labels[0], dtype=np.int64)

    def save(self, path: Path) -> None:
        self.index.save_index(str(path))
