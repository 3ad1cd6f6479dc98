"""Forgetting a memory in the HNSW graph: what zeroing its vector before marking it deleted
costs (``adapters/embedded/hnsw_graph.py``, ``Graph.remove``).

hnswlib keeps a deleted element's vector in memory and in the saved graph file until the
graph is rebuilt; ``Graph.remove`` overwrites it with zeros first (one re-link of the
element), so a forgotten memory's embedding does not stay on disk. On seeded, clustered,
L2-normalised vectors (default 20k x 384, the partition size from which the embedded index
builds a graph), a third of them deleted, this prints per variant the milliseconds per
delete and recall@10 of 300 queries against exact search over the live vectors:

    .venv/bin/python bench/decisions/ann_delete.py [--n 20000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "layers" / "hindsight"))

from hindsight.adapters.embedded.hnsw_graph import Graph

DIM = 384


def vectors(rng: np.random.Generator, n: int, spread: float) -> np.ndarray:
    centers = rng.normal(size=(200, DIM))
    x = centers[rng.integers(0, 200, n)] + spread * rng.normal(size=(n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def run(x: np.ndarray, queries: np.ndarray, zero_first: bool) -> tuple[float, float]:
    n = len(x)
    graph = Graph(DIM, n)
    graph.add(np.arange(n), x)
    dead = np.arange(0, n, 3)
    start = time.perf_counter()
    for label in dead:
        if zero_first:
            graph.remove(int(label))
        else:  # what Graph.remove did before: the tombstone only
            graph.index.mark_deleted(int(label))
            graph.live -= 1
    per_delete_ms = (time.perf_counter() - start) / len(dead) * 1000
    alive = np.setdiff1d(np.arange(n), dead)
    found = 0.0
    for query in queries:
        truth = alive[np.argsort(-(x[alive] @ query))[:10]]
        found += len(set(graph.search(query, 10).tolist()) & set(truth.tolist())) / 10
    return found / len(queries), per_delete_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = vectors(rng, args.n, 0.5)
    queries = x[rng.integers(0, args.n, 300)] + 0.05 * rng.normal(size=(300, DIM))
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    for name, zero_first in (("tombstone only", False), ("zeroed, then tombstone", True)):
        recall, ms = run(x, queries, zero_first)
        print(f"{name:24s} recall@10 {recall:.4f}  {ms:.3f} ms a delete")


if __name__ == "__main__":
    main()
