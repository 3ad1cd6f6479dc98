"""Which HNSW library should back the embedded vector index? Measure, don't guess.

Compares usearch and hnswlib on the same seeded, clustered, L2-normalised float32
vectors (default 100k x 384, the shape of multilingual-e5-small embeddings) with the
same graph parameters (M=16, ef_construction=128) and prints, per library and ef_search:
build time, single-query latency p50/p95 for k=10, recall@10 against exact search,
and resident memory added by the index.

Each library runs in its own child process so memory figures do not mix.

    .venv/bin/python bench/decisions/ann_choice.py            # 100k x 384
    .venv/bin/python bench/decisions/ann_choice.py --n 20000  # quicker
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time
from typing import Any

import numpy as np

M = 16
EF_CONSTRUCTION = 128
EF_SEARCH = (32, 64, 128)
K = 10


def clustered_vectors(n: int, dim: int, clusters: int, seed: int) -> np.ndarray:
    """Gaussian blobs around random centres, normalised: embedding-like topic structure."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    labels = rng.integers(0, clusters, size=n)
    data = centres[labels] + 0.9 * rng.standard_normal((n, dim)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    return data.astype(np.float32)


def rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def exact_top_k(data: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    scores = queries @ data.T
    top = np.argpartition(-scores, k, axis=1)[:, :k]
    return top


def _run(library: str, n: int, dim: int, n_queries: int, threads: int) -> dict[str, Any]:
    # queries are fresh draws from the same clusters, never points of the index
    everything = clustered_vectors(n + n_queries, dim, clusters=max(8, n // 1000), seed=7)
    data, queries = everything[:n], everything[n:]
    truth = exact_top_k(data, queries, K)
    keys = np.arange(n, dtype=np.uint64)

    before = rss_bytes()
    started = time.perf_counter()
    if library == "usearch":
        from usearch.index import Index

        index = Index(
            ndim=dim,
            metric="ip",
            dtype="f32",
            connectivity=M,
            expansion_add=EF_CONSTRUCTION,
        )
        index.add(keys, data, threads=threads)
    else:
        import hnswlib

        index = hnswlib.Index(space="ip", dim=dim)
        index.init_index(max_elements=n, ef_construction=EF_CONSTRUCTION, M=M)
        index.add_items(data, keys, num_threads=threads)
    build_seconds = time.perf_counter() - started
    index_bytes = rss_bytes() - before

    rows = []
    for ef in EF_SEARCH:
        latencies = []
        found = []
        if library == "usearch":
            index.expansion_search = ef
            for query in queries:
                t0 = time.perf_counter()
                matches = index.search(query, K)
                latencies.append(time.perf_counter() - t0)
                found.append(np.asarray(matches.keys, dtype=np.int64))
        else:
            index.set_ef(ef)
            index.set_num_threads(1)
            for query in queries:
                t0 = time.perf_counter()
                labels, _ = index.knn_query(query, k=K)
                latencies.append(time.perf_counter() - t0)
                found.append(np.asarray(labels[0], dtype=np.int64))
        recall = float(
            np.mean(
                [
                    len(set(f.tolist()) & set(t.tolist())) / K
                    for f, t in zip(found, truth, strict=True)
                ]
            )
        )
        ms = np.asarray(latencies) * 1000
        rows.append(
            {
                "library": library,
                "ef_search": ef,
                "build_s": build_seconds,
                "p50_ms": float(np.percentile(ms, 50)),
                "p95_ms": float(np.percentile(ms, 95)),
                "recall": recall,
                "mem_mb": index_bytes / 2**20,
            }
        )
    # exact baseline for reference (numpy matrix-vector product)
    latencies = []
    for query in queries[:200]:
        t0 = time.perf_counter()
        scores = data @ query
        np.argpartition(-scores, K)[:K]
        latencies.append(time.perf_counter() - t0)
    ms = np.asarray(latencies) * 1000
    rows.append(
        {
            "library": "numpy exact",
            "ef_search": 0,
            "build_s": 0.0,
            "p50_ms": float(np.percentile(ms, 50)),
            "p95_ms": float(np.percentile(ms, 95)),
            "recall": 1.0,
            "mem_mb": data.nbytes / 2**20,
        }
    )
    return {"rows": rows}


def _child(library: str, args: dict[str, Any], out: Any) -> None:
    out.put(json.dumps(_run(library, **args)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    options = parser.parse_args()
    args = {
        "n": options.n,
        "dim": options.dim,
        "n_queries": options.queries,
        "threads": options.threads,
    }
    context = mp.get_context("spawn")
    rows: list[dict[str, Any]] = []
    for library in ("usearch", "hnswlib"):
        queue = context.Queue()
        process = context.Process(target=_child, args=(library, args, queue))
        process.start()
        result = json.loads(queue.get())
        process.join()
        rows.extend(
            r for r in result["rows"] if r["library"] != "numpy exact" or library == "usearch"
        )

    print(
        f"\n{options.n} x {options.dim} float32, clustered, normalised; "
        f"M={M} ef_construction={EF_CONSTRUCTION}; k={K}; {options.threads} build threads; "
        f"{options.queries} single queries, 1 thread\n"
    )
    header = f"{'library':<12} {'ef':>4} {'build s':>8} {'p50 ms':>8} {'p95 ms':>8} "
    header += f"{'recall@10':>9} {'mem MB':>8}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['library']:<12} {row['ef_search']:>4} {row['build_s']:>8.1f} "
            f"{row['p50_ms']:>8.3f} {row['p95_ms']:>8.3f} {row['recall']:>9.3f} "
            f"{row['mem_mb']:>8.0f}"
        )


if __name__ == "__main__":
    main()
