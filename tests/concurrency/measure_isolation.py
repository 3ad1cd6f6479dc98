"""How long user B's retrieve takes while user A is busy, on one embedded service.

Not a test (nothing asserted): the figures behind the per-partition locks of the embedded
index. Run from the repository root:

    .venv/bin/python -m tests.concurrency.measure_isolation [--a-memories 10000]

and, to compare with another version of the package, with ``PYTHONPATH`` pointing at that
version's ``layers/hindsight`` first. Uses the fast fake embedder (so that what is measured
is the stores and indexes, not a model) at the real model's dimension (384).

Phases, each a few hundred of B's retrieves (keyword and vector search of B's 2,000
memories): B alone; B while A batch-stores (100 memories a batch, one writer); B while A
retrieves (two threads over A's memories); B while A's first search builds A's HNSW graph
(A is above the ANN threshold, set to 5,000 here).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from hindsight.bootstrap import build_embedded_service
from hindsight.core.commands import BatchItem, RetrieveCommand, StoreBatchCommand
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder, ScriptedReflector

PRINCIPAL = Principal(tenant_id="acme", key_id="measure")
TOPICS = ["garden", "travel", "music", "cooking", "chess", "running", "books", "work"]


def fill(service: MemoryService, user_id: str, count: int, start: int = 0) -> None:
    for first in range(start, start + count, 100):
        items = [
            BatchItem(content=f"{TOPICS[n % len(TOPICS)]} note {n} of {user_id} day {n % 97}")
            for n in range(first, min(first + 100, start + count))
        ]
        service.store_batch(PRINCIPAL, StoreBatchCommand(user_id=user_id, items=items))


def retrieve(service: MemoryService, user_id: str, n: int) -> None:
    query = f"{TOPICS[n % len(TOPICS)]} day {n % 97}"
    service.retrieve(PRINCIPAL, RetrieveCommand(user_id=user_id, query=query, top_k=10))


def b_latencies(service: MemoryService, count: int) -> list[float]:
    seconds = []
    for n in range(count):
        started = time.perf_counter()
        retrieve(service, "bee", n)
        seconds.append(time.perf_counter() - started)
    return seconds


def while_busy(service: MemoryService, count: int, busy: Callable[[threading.Event], None],
               threads: int = 1) -> list[float]:  # fmt: skip
    done = threading.Event()
    workers = [threading.Thread(target=busy, args=(done,), daemon=True) for _ in range(threads)]
    for worker in workers:
        worker.start()
    time.sleep(0.05)
    try:
        return b_latencies(service, count)
    finally:
        done.set()
        for worker in workers:
            worker.join(120)


def report(name: str, seconds: list[float]) -> None:
    ms = sorted(s * 1000 for s in seconds)

    def pick(q: float) -> float:
        return ms[min(len(ms) - 1, int(q * len(ms)))]

    print(
        f"{name:<34} n={len(ms):4d}  p50 {statistics.median(ms):7.1f} ms  "
        f"p95 {pick(0.95):7.1f}  p99 {pick(0.99):7.1f}  max {ms[-1]:7.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a-memories", type=int, default=10_000)
    parser.add_argument("--b-memories", type=int, default=2_000)
    parser.add_argument("--retrieves", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(data_dir=Path(data), ann_threshold=5_000, reflector="rule-based")
        service = build_embedded_service(
            settings, embedder=HashingEmbedder(dimension=384), reflector=ScriptedReflector()
        )
        started = time.perf_counter()
        fill(service, "ay", args.a_memories)
        fill(service, "bee", args.b_memories)
        print(f"filled in {time.perf_counter() - started:.1f} s")
        b_latencies(service, 30)  # warm

        report("B alone", b_latencies(service, args.retrieves))

        stored = [args.a_memories]

        def a_stores(done: threading.Event) -> None:
            while not done.is_set():
                fill(service, "ay", 100, start=stored[0])
                stored[0] += 100

        report("B while A batch-stores", while_busy(service, args.retrieves, a_stores))
        print(f"  (A stored {stored[0] - args.a_memories} meanwhile)")

        def a_retrieves(done: threading.Event) -> None:
            n = 0
            while not done.is_set():
                retrieve(service, "ay", n)
                n += 1

        # A's first search builds A's HNSW graph (A is over the ANN threshold)
        build = [0.0]

        def a_builds(done: threading.Event) -> None:
            first = time.perf_counter()
            retrieve(service, "ay", 0)
            build[0] = time.perf_counter() - first

        report("B while A's HNSW graph is built", while_busy(service, 60, a_builds))
        print(f"  (A's first search, building the graph, took {build[0]:.2f} s)")
        report("B while 2 threads retrieve for A", while_busy(service, args.retrieves,
                                                               a_retrieves, 2))  # fmt: skip

        def b_retrieves(done: threading.Event) -> None:
            n = 0
            while not done.is_set():
                retrieve(service, "bee", n)
                n += 1

        report("B while 2 threads also retrieve B", while_busy(service, args.retrieves,
                                                                b_retrieves, 2))  # fmt: skip
        service.ports.index.close()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
