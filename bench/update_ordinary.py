"""How often the update rule fires on ordinary memories, where an update is rare.

    .venv/bin/python bench/update_ordinary.py

Every pair of one speaker's memories (older before newer, at most ``WINDOW`` memories
apart, shorter than ``core/retrieval/states.MAX_STATEMENT_CHARS``) that
``core/retrieval/states.same_attribute`` takes for an update; ``SAMPLES`` fired pairs a set
are printed to read. ``--reflect``: each speaker's or user's memories stored and reflected
on once by the default reflector, and how many of its facts a later episode retires
(``FactMerger.retire_outdated``) or a later fact supersedes. Writes
``bench/results/update_ordinary.json`` (``update_ordinary_reflect.json``; ``--out``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    PRINCIPAL,
    RESULTS_DIR,
    machine_info,
    store_in_batches,
    temporary_service,
    write_json,
)

from hindsight.bootstrap import build_embedder
from hindsight.core.commands import BatchItem, ReflectCommand
from hindsight.core.models import EpisodicMemory
from hindsight.core.retrieval.states import MAX_STATEMENT_CHARS, Statement, same_attribute
from hindsight.settings import Settings

REPO = Path(__file__).resolve().parents[1]
LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
REMARKS = REPO / "bench" / "data" / "remarks"

WINDOW = 60  # memories apart, at most
SAMPLES = 10  # fired pairs printed a set, to read
Turn = tuple[str, datetime, str]  # text, when, speaker


def locomo_speakers(path: Path) -> list[list[Turn]]:
    """Each LoCoMo speaker's turns in order (sessions two weeks apart)."""
    out = []
    for conversation in json.loads(path.read_text(encoding="utf-8")):
        c = conversation["conversation"]
        for speaker in (c["speaker_a"], c["speaker_b"]):
            turns, k = [], 1
            while f"session_{k}" in c:
                start = datetime(2023, 1, 1, tzinfo=UTC) + timedelta(days=14 * k)
                for n, turn in enumerate(c[f"session_{k}"]):
                    if turn["speaker"] == speaker:
                        turns.append((turn["text"], start + timedelta(minutes=n), speaker))
                k += 1
            out.append(turns)
    return out


def remarks_users(lang: str) -> list[list[Turn]]:
    """Each remarks user's memories in time order."""
    data = json.loads((REMARKS / f"remarks_{lang}.json").read_text(encoding="utf-8"))
    return [
        sorted(
            ((m["text"], datetime.fromisoformat(m["occurred_at"]), "") for m in user["memories"]),
            key=lambda t: t[1],
        )
        for user in data["users"]
    ]


def statement(index: int, turn: Turn) -> Statement:
    text, moment, speaker = turn
    return Statement.of(
        EpisodicMemory(
            memory_id=f"m{index}",
            tenant_id="bench",
            user_id="u",
            content=text,
            occurred_at=moment,
            created_at=moment,
            updated_at=moment,
            speaker=speaker or None,
        )
    )


def fire_rate(
    groups: list[list[Turn]], embedder: Any, window: int
) -> tuple[int, int, list[tuple[str, str]]]:
    fired, pairs, examples = 0, 0, []
    for group in groups:
        turns = [t for t in group if len(t[0]) <= MAX_STATEMENT_CHARS]
        if len(turns) < 2:
            continue
        vectors = np.asarray(embedder.embed_documents([t[0] for t in turns]), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        statements = [statement(i, t) for i, t in enumerate(turns)]
        for j, newer in enumerate(statements):
            for i in range(max(0, j - window), j):
                older = statements[i]
                if older.occurred_at >= newer.occurred_at:
                    continue
                pairs += 1
                if same_attribute(older, newer, float(vectors[i] @ vectors[j])):
                    fired += 1
                    examples.append((turns[i][0], turns[j][0]))
    return fired, pairs, examples


def reflect_rate(groups: list[list[Turn]], embedder: Any) -> tuple[int, int, int, list[Any]]:
    """(facts made, retired by an episode, superseded by a fact, what retired them)."""
    facts = retired = superseded = 0
    examples: list[tuple[str, str]] = []
    with temporary_service("ordinary-", embedder) as service:
        for n, group in enumerate(groups):
            user = f"u{n}"
            items = [BatchItem(content=t, occurred_at=w, speaker=s or None) for t, w, s in group]
            done = store_in_batches(service, PRINCIPAL, user, items)
            texts = {o.memory_id: i.content for o, i in zip(done, items, strict=True)}
            made = service.reflect(PRINCIPAL, ReflectCommand(user_id=user)).created
            facts += len(made)  # the user's only reflection: every fact is among these
            for fact in (f for f in made if f["superseded_by"]):
                if fact["superseded_by"] in texts:
                    retired += 1
                    examples.append((fact["content"], texts[fact["superseded_by"]]))
                superseded += fact["superseded_by"] not in texts
    return facts, retired, superseded, examples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--reflect", action="store_true", help="how often reflection retires")
    args = parser.parse_args()
    args.out = args.out or RESULTS_DIR / f"update_ordinary{'_reflect' * args.reflect}.json"
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        embedder = build_embedder(Settings(data_dir=Path(tmp)))
        sets = {"locomo en": locomo_speakers(LOCOMO)} if LOCOMO.exists() else {}
        sets |= {f"remarks {lang}": remarks_users(lang) for lang in ("en", "zh")}
        rows = {}
        random.seed(7)
        for name, groups in sets.items():
            if args.reflect:
                facts, retired, superseded, examples = reflect_rate(groups, embedder)
                rows[name] = {"facts": facts, "retired": retired, "superseded": superseded}
                said = f"{facts} facts, {retired} retired by an episode, {superseded} by a fact"
            else:
                fired, pairs, examples = fire_rate(groups, embedder, WINDOW)
                rows[name] = {"fired": fired, "pairs": pairs, "rate": fired / max(pairs, 1)}
                said = f"the rule fires on {fired} of {pairs} pairs ({fired / max(pairs, 1):.4%})"
            print(f"{name}: {said}")
            for older, newer in random.sample(examples, min(SAMPLES, len(examples))):
                print(f"    {older[:100]!r}\n -> {newer[:100]!r}")
    write_json(
        args.out,
        {
            "benchmark": "update_ordinary",
            "machine": machine_info(),
            "window": WINDOW,
            "sets": rows,
            "seconds": round(time.perf_counter() - started, 1),
        },
    )


if __name__ == "__main__":
    main()
