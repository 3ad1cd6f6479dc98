"""What the rerank stage costs: nothing measurable when off, and its latency when on.

1. Off (``HINDSIGHT_RERANKER=none``): the same retrieves through the retrieve use case as
   it was before the stage existed (``core/usecases/retrieve.py`` at ``--base``, read with
   ``git show``) and as it is now without a reranker, on the same store and ports,
   interleaved query by query (A B B A ...) so the machine's load falls on both alike.
   Both must return the same ids and scores.
2. On: retrieves with a cross-encoder reranking the top N (N = 20 and 50) against the same
   retrieves without one, interleaved likewise, for two models built here from configs
   (tests/tiny_models.py): the tiny one the tests load, and one of the shape of the common
   MiniLM-L6 rerankers (6 layers, hidden 384) made from the packaged all-MiniLM-L6-v2
   encoder under an untrained head. Their relevances mean nothing: only time is measured.
   No trained cross-encoder can be had here (none is shipped in a package, and the hub
   cannot be reached), so the quality of reranking is not measured at all.

torch runs on ``--torch-threads`` threads (default 1): on a machine whose cores other
processes keep busy, torch's default of one thread per core spins waiting for its own
threads and the same model runs several times slower (docs/reranking.md).

The store is in process memory with the hashing embedder of the tests (tests/fakes.py), so
a retrieve is mostly ranking and the stage's share is as large as it can be.

    nice -n 5 .venv/bin/python bench/rerank_overhead.py --memories 2000 --queries 60
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from harness import (  # noqa: E402
    RESULTS_DIR,
    latency_summary,
    machine_header,
    machine_info,
    markdown_table,
    write_json,
)
from synthetic import generate_memories, generate_queries  # noqa: E402

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex  # noqa: E402
from hindsight.adapters.rerankers.cross_encoder import CrossEncoderReranker  # noqa: E402
from hindsight.bootstrap import assemble, local_ports  # noqa: E402
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand  # noqa: E402
from hindsight.core.hit_log import HitLog  # noqa: E402
from hindsight.core.models import Principal  # noqa: E402
from hindsight.core.policy import Policy  # noqa: E402
from hindsight.core.retrieval.rerank import page_rows, reranked_page, rows_read  # noqa: E402
from hindsight.core.service import MemoryService  # noqa: E402
from tests.fakes import HashingEmbedder, ScriptedReflector  # noqa: E402
from tests.tiny_models import minilm_shaped_cross_encoder, tiny_cross_encoder  # noqa: E402

PRINCIPAL = Principal(tenant_id="bench")
RETRIEVE_PATH = "layers/hindsight/hindsight/core/usecases/retrieve.py"


def load_base_retrieve(base: str) -> Any:
    """``RetrieveMemories`` as it was at commit ``base`` (before the rerank stage)."""
    source = subprocess.run(
        ["git", "show", f"{base}:{RETRIEVE_PATH}"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="rerank-bench-")) / "retrieve_base.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("retrieve_base", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.RetrieveMemories


def filled_service(memories: int, seed: int) -> MemoryService:
    ports = local_ports(
        InMemoryRecordStore(), InMemorySearchIndex(), HashingEmbedder(), ScriptedReflector()
    )
    service = assemble(ports, Policy())
    for text, _ in generate_memories(memories, seed):
        service.store(PRINCIPAL, StoreMemoryCommand(user_id="u1", content=text))
    return service


CPU_SECONDS: dict[int, list[float]] = {}  # the process's CPU time of each timed call, by sink


def timed(call: Callable[[], Any], sink: list[float]) -> tuple[float, Any]:
    """Wall seconds of ``call()`` and its result; its process CPU seconds (every thread:
    the rerank runs on the stage's pool) go to ``CPU_SECONDS[id(sink)]``. CPU time does not
    grow when other programs take the cores, so it is the steadier measure on a busy machine."""
    started, cpu = time.perf_counter(), time.process_time()
    result = call()
    CPU_SECONDS.setdefault(id(sink), []).append(time.process_time() - cpu)
    return time.perf_counter() - started, result


def interleaved(
    a: Callable[[RetrieveCommand], Any],
    b: Callable[[RetrieveCommand], Any],
    commands: list[RetrieveCommand],
    repeats: int,
) -> tuple[list[float], list[float], list[tuple[Any, Any]]]:
    """Each command through ``a`` and ``b`` in A B B A order, ``repeats`` times."""
    times_a: list[float] = []
    times_b: list[float] = []
    answers: list[tuple[Any, Any]] = []
    for repeat in range(repeats):
        for number, command in enumerate(commands):
            first_a = (number + repeat) % 2 == 0
            order = [(a, times_a), (b, times_b)] if first_a else [(b, times_b), (a, times_a)]
            got = {}
            for call, sink in order:
                seconds, result = timed(lambda call=call, command=command: call(command), sink)
                sink.append(seconds)
                got[id(sink)] = result
            answers.append((got[id(times_a)], got[id(times_b)]))
    return times_a, times_b, answers


def ranked(result: Any) -> list[tuple[str, float]]:
    return [(r.memory_id, r.score) for r in result.results]


def off_overhead(service: MemoryService, base: str, commands: list, repeats: int) -> dict:
    before_class = load_base_retrieve(base)
    ports, policy = service.ports, service.policy
    hits = HitLog(ports.records, ports.clock)
    before = before_class(ports.records, ports.index, ports.embedder, ports.clock, policy, hits)
    now = service.use_cases.retrieve
    assert now.rerank is None
    times_before, times_now, answers = interleaved(
        lambda c: before(PRINCIPAL, c), lambda c: now(PRINCIPAL, c), commands, repeats
    )
    same = all(ranked(x) == ranked(y) for x, y in answers)
    # the noise floor: the same code as A and as B
    times_a, times_b, _ = interleaved(
        lambda c: before(PRINCIPAL, c), lambda c: before(PRINCIPAL, c), commands, repeats
    )
    summary_before, summary_now = latency_summary(times_before), latency_summary(times_now)
    noise_a, noise_b = latency_summary(times_a), latency_summary(times_b)
    cpu = {
        name: CPU_SECONDS.pop(id(times))
        for name, times in [
            ("before", times_before),
            ("now", times_now),
            ("a", times_a),
            ("b", times_b),
        ]
    }
    return {
        "cpu_ratio_mean": round(sum(cpu["now"]) / sum(cpu["before"]), 4),
        "noise_cpu_ratio_mean": round(sum(cpu["b"]) / sum(cpu["a"]), 4),
        "before": summary_before,
        "off": summary_now,
        "same_results": same,
        "ratio_p50": round(summary_now["p50_ms"] / summary_before["p50_ms"], 4),
        "ratio_mean": round(summary_now["mean_ms"] / summary_before["mean_ms"], 4),
        "noise_ratio_p50": round(noise_b["p50_ms"] / noise_a["p50_ms"], 4),
        "noise_ratio_mean": round(noise_b["mean_ms"] / noise_a["mean_ms"], 4),
        "hook_us_per_retrieve": hook_cost(),
    }


def hook_cost(calls: int = 200_000) -> float:
    """Microseconds per retrieve of what the stage adds when off: its three calls."""
    rows = list(range(50))
    results: list[Any] = list(range(10))
    started = time.perf_counter()
    for _ in range(calls):
        rows_read(None)
        page = page_rows(None, rows, 0, 10)
        reranked_page(None, "q", results, page, 0, 10)
    return round((time.perf_counter() - started) / calls * 1e6, 3)


def rerank_latency(
    service: MemoryService, model_dir: Path, top_n: int, commands: list, repeats: int
) -> dict:
    reranker = CrossEncoderReranker(model_dir)
    reranker.warm()
    policy = Policy(rerank_top_n=top_n, rerank_budget_seconds=600.0)
    from hindsight.bootstrap import rewire

    with_stage = rewire(service, policy, reranker=reranker).use_cases.retrieve
    without = rewire(service, policy, reranker=None).use_cases.retrieve
    times_off, times_on, answers = interleaved(
        lambda c: without(PRINCIPAL, c), lambda c: with_stage(PRINCIPAL, c), commands, repeats
    )
    reranked = [
        sum("relevance" in r.why.get("rerank", {}) for r in on.results) for _, on in answers
    ]
    off, on = latency_summary(times_off), latency_summary(times_on)
    cpu_off, cpu_on = CPU_SECONDS.pop(id(times_off)), CPU_SECONDS.pop(id(times_on))
    return {
        "top_n": top_n,
        "off": off,
        "on": on,
        "cpu_off_mean_ms": round(1000 * sum(cpu_off) / len(cpu_off), 2),
        "cpu_on_mean_ms": round(1000 * sum(cpu_on) / len(cpu_on), 2),
        "added_cpu_mean_ms": round(
            1000 * (sum(cpu_on) / len(cpu_on) - sum(cpu_off) / len(cpu_off)), 2
        ),
        "added_p50_ms": round(on["p50_ms"] - off["p50_ms"], 3),
        "added_mean_ms": round(on["mean_ms"] - off["mean_ms"], 3),
        "mean_reranked_on_page": round(sum(reranked) / len(reranked), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--base", default="060a943", help="commit before the rerank stage")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch's intra-op threads (0: torch's default, one per core)",
    )
    args = parser.parse_args()
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)

    info = machine_info()
    print(machine_header(info))
    service = filled_service(args.memories, seed=40)
    queries = generate_queries(args.queries, seed=41)
    random.Random(42).shuffle(queries)
    commands = [RetrieveCommand(user_id="u1", query=q, min_score=0, top_k=10) for q in queries]
    for command in commands[:5]:  # warm caches (jieba, the index)
        service.retrieve(PRINCIPAL, command)

    off = off_overhead(service, args.base, commands, args.repeats)
    print("\n## Off: the retrieve before the stage vs now with HINDSIGHT_RERANKER=none\n")
    print(
        markdown_table(
            ["", "p50 ms", "p95 ms", "mean ms"],
            [
                [
                    "before (" + args.base + ")",
                    *(off["before"][k] for k in ("p50_ms", "p95_ms", "mean_ms")),
                ],
                ["now, none", *(off["off"][k] for k in ("p50_ms", "p95_ms", "mean_ms"))],
            ],
        )
    )
    print(
        f"\nratio now/before: p50 {off['ratio_p50']}, mean {off['ratio_mean']} (the same "
        f"code against itself: p50 {off['noise_ratio_p50']}, mean {off['noise_ratio_mean']}); "
        f"CPU time now/before: {off['cpu_ratio_mean']} (itself: {off['noise_cpu_ratio_mean']}); "
        f"same ids and scores: {off['same_results']}; the stage's calls when off: "
        f"{off['hook_us_per_retrieve']} µs a retrieve"
    )

    models: dict[str, Path] = {}
    scratch = Path(tempfile.mkdtemp(prefix="rerank-models-"))
    models["tiny (tests)"] = tiny_cross_encoder(scratch / "tiny")
    models["MiniLM-L6 shape"] = minilm_shaped_cross_encoder(scratch / "minilm")
    on: dict[str, list[dict]] = {}
    rows = []
    for name, directory in models.items():
        for top_n in (20, 50):
            run = rerank_latency(service, directory, top_n, commands, args.repeats)
            on.setdefault(name, []).append(run)
            rows.append(
                [
                    name,
                    top_n,
                    run["off"]["p50_ms"],
                    run["on"]["p50_ms"],
                    run["on"]["p95_ms"],
                    run["added_p50_ms"],
                    run["added_mean_ms"],
                    run["added_cpu_mean_ms"],
                ]
            )
    print("\n## On: a cross-encoder over the top N (untrained weights: time only)\n")
    print(
        markdown_table(
            [
                "model",
                "N",
                "off p50 ms",
                "on p50 ms",
                "on p95 ms",
                "added p50 ms",
                "added mean ms",
                "added CPU ms",
            ],
            rows,
        )
    )
    write_json(
        RESULTS_DIR / "rerank_overhead.json",
        {"machine": info, "args": vars(args), "off": off, "on": on},
    )


if __name__ == "__main__":
    main()
