"""Changing the embedding model of a live embedded store: `hindsight reindex --re-embed`.

A user's memories are stored with one model (MiniLM by default), then the migration moves
the index to another (the bundled multilingual e5) while a reader thread keeps retrieving
through the same service. Prints and writes (bench/results/reembed.json): the migration's
rate, retrieve latency before / during / after, errors seen by the reader (the target is
0), the served model before and after, and whether retrieval after the switch finds what
it should with the new model.

    .venv/bin/python bench/reembed.py --memories 1000
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import RESULTS_DIR, latency_summary, machine_info, write_json

from hindsight.bootstrap import build_embedded_service
from hindsight.core.commands import BatchItem, RetrieveCommand, StoreBatchCommand
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from hindsight.reembedding import reembedding
from hindsight.settings import Settings

OWNER = Principal(tenant_id="local")
USER = "u1"
PLACES = ["the mountains", "the coast", "a lake", "the old town", "a vineyard", "the desert"]


def episode(number: int) -> str:
    place = PLACES[number % len(PLACES)]
    return f"Day {number}: we talked about trip number {number} to {place} and its weather"


def store(service: MemoryService, count: int) -> float:
    started = time.perf_counter()
    for start in range(0, count, 100):
        items = [BatchItem(content=episode(n)) for n in range(start, min(count, start + 100))]
        service.store_batch(OWNER, StoreBatchCommand(user_id=USER, items=items))
    return time.perf_counter() - started


def retrieve_once(service: MemoryService, number: int) -> tuple[float, bool]:
    """Seconds, and whether the episode asked about came back first."""
    query = f"trip number {number} to {PLACES[number % len(PLACES)]}"
    started = time.perf_counter()
    results = service.retrieve(OWNER, RetrieveCommand(user_id=USER, query=query)).results
    found = bool(results) and results[0].content == episode(number)
    return time.perf_counter() - started, found


def sample(service: MemoryService, count: int, memories: int) -> dict[str, Any]:
    timed = [retrieve_once(service, (n * 37) % memories) for n in range(count)]
    summary = latency_summary([seconds for seconds, _ in timed])
    return {**summary, "found_first": round(sum(f for _, f in timed) / len(timed), 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--from-model", default="minilm", help="the embedder stored with")
    parser.add_argument("--to-model", default="e5", help="the embedder migrated to")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "reembed.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    data = Path(tempfile.mkdtemp(prefix="reembed-"))
    before_settings = Settings(backend="embedded", data_dir=data, embedder=args.from_model)
    service = build_embedded_service(before_settings)
    stored_seconds = store(service, args.memories)
    model_before = service.ports.embedder.model_name
    before = sample(service, 30, args.memories)
    during: list[float] = []
    errors: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        number = 0
        while not stop.is_set():
            try:
                during.append(retrieve_once(service, number % args.memories)[0])
            except Exception as exc:  # every error the reader sees is counted and reported
                errors.append(repr(exc))
            number += 1
            time.sleep(0.05)

    thread = threading.Thread(target=reader)
    thread.start()
    started = time.perf_counter()
    target = Settings(backend="embedded", data_dir=data, embedder=args.to_model)
    with reembedding(target) as migrate:
        result = migrate()
    took = time.perf_counter() - started
    time.sleep(2.5)  # the server follows the manifest within a second, then swaps
    stop.set()
    thread.join()
    after = sample(service, 30, args.memories)
    report = {
        "benchmark": "re-embedding migration of a live embedded store",
        "command": f"python bench/reembed.py --memories {args.memories}",
        "machine": machine_info(),
        "memories": args.memories,
        "store_seconds": round(stored_seconds, 1),
        "model_before": model_before,
        "model_after": service.ports.embedder.model_name,
        "migration": {
            "seconds": round(took, 1),
            "per_second": round(result["memories"] / took, 1),
            "result": {k: v for k, v in result.items() if isinstance(v, int | str | float)},
        },
        "retrieve_before": before,
        "retrieve_during": {**latency_summary(during), "reader_errors": len(errors)},
        "retrieve_after": after,
        "errors": errors[:5],
    }
    write_json(args.out, report)
    print(f"stored {args.memories} with {model_before} in {stored_seconds:.1f} s")
    rate = report["migration"]["per_second"]
    print(f"migrated to {report['model_after']} in {took:.1f} s ({rate}/s)")
    for name in ("retrieve_before", "retrieve_during", "retrieve_after"):
        print(name, report[name])
    print(f"wrote {args.out}")
    return 1 if errors or report["model_after"] == model_before else 0


if __name__ == "__main__":
    sys.exit(main())
