"""Retrieve latency with a retrieve's index searches one by one and side by side.

``Policy.parallel_searches`` (core/retrieval/parallel.py) runs the keyword search while the query is
embedded and the two vector searches at once. This times the same retrieves both ways on
the same store, interleaved query by query (on, off, off, on, ...) so drift in the
machine's load falls on both alike, the query embedding included, and checks that both
ways rank the same memories. Prints numbers and writes
``bench/results/parallel_searches.json``; asserts nothing.

- embedded: the store ``hindsight serve`` runs on, with ``--size`` memories of one user
  written through its ports (pool texts embedded with the real model, vectors of the rest
  are pool vectors with seeded noise, as in bench/aws_latency.py);
- aws (``--aws``; needs ``make services``): DynamoDB on moto and OpenSearch in-JVM, as
  ``build_aws_service`` wires them, bulk-loaded the same way, at each ``--rtt-ms``: a wait
  before every DynamoDB and OpenSearch request is sent. Both engines answer on this
  machine; on AWS every request is a network round trip, and the wait models that cost (it
  is not either service's latency).

    .venv/bin/python bench/parallel_searches.py --size 10000 --aws --rtt-ms 0 2 5
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from aws_latency import PRINCIPAL, TENANT, USER, bulk_load, embed_all
from harness import (
    RESULTS_DIR,
    close_service,
    latency_summary,
    machine_header,
    machine_info,
    markdown_table,
    noisy_copies,
    open_service,
    retrieve_plan,
    synthetic_episode,
    with_policy,
    write_json,
    write_through_ports,
)
from synthetic import generate_memories, generate_queries, variant

from hindsight.adapters.aws.opensearch_index import OpenSearchSearchIndex, build_opensearch_client
from hindsight.adapters.embedders.factory import build_embedder
from hindsight.bootstrap import build_aws_service
from hindsight.core.commands import RetrieveCommand
from hindsight.core.models import StoredVector
from hindsight.core.ports import Embedder
from hindsight.core.service import MemoryService
from hindsight.settings import Settings

WARMUP = 5


def interleaved(
    on: MemoryService, off: MemoryService, commands: Sequence[RetrieveCommand]
) -> dict[str, Any]:
    """Each command retrieved by both services, in alternating order; their latencies and
    how many rankings were the same."""
    for command in commands[:WARMUP]:
        on.retrieve(PRINCIPAL, command)
        off.retrieve(PRINCIPAL, command)
    seconds: dict[str, list[float]] = {"parallel": [], "one by one": []}
    same = 0
    for number, command in enumerate(commands):
        pair = [("parallel", on), ("one by one", off)]
        ids: dict[str, list[str]] = {}
        for name, service in pair if number % 2 == 0 else pair[::-1]:
            started = time.perf_counter()
            result = service.retrieve(PRINCIPAL, command)
            seconds[name].append(time.perf_counter() - started)
            ids[name] = [r.memory_id for r in result.results]
        same += ids["parallel"] == ids["one by one"]
    out: dict[str, Any] = {name: latency_summary(s) for name, s in seconds.items()}
    out["same_rankings"] = f"{same}/{len(commands)}"
    return out


def embedded_store(
    service: MemoryService,
    pool: list[tuple[str, str]],
    vectors: np.ndarray,
    size: int,
    noise: float,
    seed: int,
) -> None:
    """``size`` memories of USER written through the ports (no embedding)."""
    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)
    model = service.ports.embedder.model_name
    batch: list[tuple[Any, StoredVector]] = []
    for position in range(size):
        owner = position % len(pool)
        lap = position // len(pool)
        text = pool[owner][0] if lap == 0 else variant(pool[owner][0], lap - 1)
        memory = synthetic_episode(
            service.ports.ids.new_id("mem"),
            TENANT,
            USER,
            text,
            pool[owner][1],
            now - timedelta(days=float(rng.uniform(1, 365))),
            now,
            f"s{position // 25}",
        )
        values = noisy_copies(vectors[owner : owner + 1], noise, rng)[0]
        batch.append((memory, StoredVector(model=model, values=values)))
        if len(batch) == 500 or position == size - 1:
            write_through_ports(service, batch)
            batch = []


def run_embedded(
    embedder: Embedder, args: argparse.Namespace, pool: Any, vectors: Any, plan: Any
) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix="hindsight-parallel-"))
    try:
        service = open_service(data_dir, embedder=embedder)
        print(f"embedded: writing {args.size:,} memories", flush=True)
        embedded_store(service, pool, vectors, args.size, args.noise, args.seed)
        off = with_policy(service, parallel_searches=False)
        on = with_policy(service, parallel_searches=True)
        timed = interleaved(on, off, plan)
        close_service(service)
        return timed
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def run_aws(
    embedder: Embedder, args: argparse.Namespace, pool: Any, vectors: Any, plan: Any
) -> dict[str, Any]:
    from tests.integration.dynamodb_local import moto_client, require_moto
    from tests.services import OPENSEARCH_URL

    rtt = {"seconds": 0.0}  # the wait before each request, changed per --rtt-ms
    client = moto_client()
    require_moto(client)
    client.meta.events.register("before-send.dynamodb", lambda **_: time.sleep(rtt["seconds"]))
    os_client = build_opensearch_client(OPENSEARCH_URL, "none", timeout=120)
    transport = os_client.transport
    send = transport.perform_request

    def waited(*call: Any, **options: Any) -> Any:
        time.sleep(rtt["seconds"])
        return send(*call, **options)

    transport.perform_request = waited
    settings = Settings(
        backend="aws", table=f"hindsight-bench-{uuid.uuid4().hex[:8]}", region="us-east-1"
    )
    index = OpenSearchSearchIndex(
        os_client, f"hindsight-bench-{uuid.uuid4().hex[:8]}", embedder.dimension
    )
    index.ensure_index()
    service = build_aws_service(settings, embedder=embedder, index=index, dynamodb_client=client)
    out: dict[str, Any] = {}
    try:
        print(f"aws: bulk-loading {args.size:,} memories", flush=True)
        bulk_load(
            service,
            index,
            [t for t, _ in pool],
            [c for _, c in pool],
            vectors,
            args.size,
            args.noise,
            args.seed,
        )
        off = with_policy(service, parallel_searches=False)
        on = with_policy(service, parallel_searches=True)
        for ms in args.rtt_ms:
            rtt["seconds"] = ms / 1000
            print(f"aws: timing at {ms} ms a request", flush=True)
            out[f"{ms:g} ms a request"] = interleaved(on, off, plan)
    finally:
        rtt["seconds"] = 0.0
        index.drop_index()
        client.delete_table(TableName=settings.table)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size", type=int, default=10_000, help="memories of the one user")
    parser.add_argument("--timed", type=int, default=200, help="retrieves timed each way")
    parser.add_argument("--pool", type=int, default=500, help="texts embedded for real")
    parser.add_argument("--noise", type=float, default=0.015)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--aws", action="store_true", help="also on moto + OpenSearch")
    parser.add_argument("--rtt-ms", type=float, nargs="+", default=[0.0, 2.0, 5.0])
    parser.add_argument("--out", default=str(RESULTS_DIR / "parallel_searches.json"))
    args = parser.parse_args(argv)
    info = machine_info()
    print(machine_header(info))
    embedder = build_embedder(Settings().embedder)
    pool = generate_memories(args.pool, args.seed)
    print(f"embedding {len(pool)} pool texts ({embedder.model_name})", flush=True)
    vectors = embed_all(embedder, [t for t, _ in pool])
    plan = retrieve_plan([(USER, q) for q in generate_queries(args.timed, args.seed)])
    results: dict[str, Any] = {
        "command": "python bench/parallel_searches.py " + " ".join(sys.argv[1:]),
        "machine": info,
        "embedder": embedder.model_name,
        "note": "query embedding included; both ways interleaved query by query",
        "embedded": run_embedded(embedder, args, pool, vectors, plan),
    }
    if args.aws:
        results["aws"] = run_aws(embedder, args, pool, vectors, plan)
    runs = [("embedded", results["embedded"])]
    runs += [(f"aws, {wait}", timed) for wait, timed in results.get("aws", {}).items()]
    parts = ("p50_ms", "p95_ms", "mean_ms")
    rows = [
        [name, way, *(timed[way][k] for k in parts), timed["same_rankings"]]
        for name, timed in runs
        for way in ("one by one", "parallel")
    ]
    headers = ["store", "searches", "p50 ms", "p95 ms", "mean ms", "same ranking"]
    print(markdown_table(headers, rows))
    write_json(Path(args.out), results)


if __name__ == "__main__":
    main()
