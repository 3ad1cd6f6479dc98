"""The HNSW graph forgets a removed vector: not returned, and not left in the saved file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hindsight.adapters.embedded.hnsw_graph import Graph

DIM = 16


def unit_vectors(count: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(count, DIM)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_a_removed_vector_is_not_in_the_saved_graph(tmp_path: Path) -> None:
    x = unit_vectors(40)
    graph = Graph(DIM, 40)
    graph.add(np.arange(40), x)
    graph.remove(7)
    graph.save(tmp_path / "g.hnsw")
    saved = (tmp_path / "g.hnsw").read_bytes()
    assert x[7].tobytes() not in saved
    assert x[8].tobytes() in saved  # the file does hold the live vectors as they are


def test_a_removed_vector_is_never_found_and_the_rest_still_are(tmp_path: Path) -> None:
    x = unit_vectors(40)
    graph = Graph(DIM, 40)
    graph.add(np.arange(40), x)
    for label in (3, 7, 11):
        graph.remove(label)
    assert graph.live == 37 and graph.deleted == 3
    for label in (3, 7, 11):
        assert label not in graph.search(x[label], 10).tolist()
    for label in (0, 8, 39):
        assert graph.search(x[label], 1).tolist() == [label]
    graph.save(tmp_path / "g.hnsw")
    loaded = Graph.load(tmp_path / "g.hnsw", DIM, live=37)
    assert loaded.deleted == 3
    assert 7 not in loaded.search(x[7], 37).tolist()
