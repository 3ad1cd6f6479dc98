"""The events dev set: a user's past events recalled from ~100 short memories, zh and en.

The data, its categories and how it was made: ``bench/data/events/README.md``. Each user's
memories are stored through ``store_batch`` with their session and time (no speaker: the
notes are the assistant's, the rest the user's); each question is asked of its user with
``as_of`` its ``asked_at``, so "last month" means February 2026. Baselines, per user over
the same memories: BM25 (``locomo.bm25_scores``, Hindsight's tokenizer) and dense cosine
with the same embedding model. The chat and remarks sets have this set's form and use its
loader, store, ask and baselines.

    .venv/bin/python bench/events_devset.py         # the set's size and a few questions
    .venv/bin/python bench/devsets.py --sets events  # every system on it
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import REPO, dense_scores, store_in_batches
from locomo import bm25_scores

from hindsight.core.commands import BatchItem, RetrieveCommand
from hindsight.core.models import Principal
from hindsight.core.ports import Embedder
from hindsight.core.service import MemoryService
from hindsight.core.text import tokenize

DATA_DIR = REPO / "bench" / "data" / "events"
LANGUAGES = ("zh", "en")
PRINCIPAL = Principal(tenant_id="events", key_id="bench")
TOP = 10  # recall@10 and hit@5 need no more

Row = tuple[str, str, list[str], tuple[str, ...]]  # language, category, ranked ids, evidence


@dataclass(frozen=True)
class Event:
    memory_id: str  # the data's id, not the service's
    session: str
    occurred_at: datetime
    text: str
    speaker: str | None = None  # the chat set's "user" / "assistant"; events have none


@dataclass(frozen=True)
class User:
    user_id: str
    language: str
    memories: list[Event]


@dataclass(frozen=True)
class Question:
    question_id: str
    user_id: str
    text: str
    evidence: tuple[str, ...]
    category: str
    asked_at: datetime


@dataclass(frozen=True)
class EventsSet:
    users: list[User]
    questions: list[Question]

    def language_of(self, user_id: str) -> str:
        return next(u.language for u in self.users if u.user_id == user_id)


def load(
    data_dir: Path = DATA_DIR, users_a_language: int | None = None, name: str = "events"
) -> EventsSet:
    """Both languages' files, ``{name}_{zh,en}.json`` (the first ``users_a_language`` users
    of each, if given). The chat set (``chat_devset.py``) has the same form, with speakers."""
    users: list[User] = []
    questions: list[Question] = []
    for language in LANGUAGES:
        raw = json.loads((data_dir / f"{name}_{language}.json").read_text(encoding="utf-8"))
        kept = raw["users"][:users_a_language]
        for user in kept:
            events = []
            for m in user["memories"]:
                when = datetime.fromisoformat(m["occurred_at"])
                events.append(Event(m["id"], m["session"], when, m["text"], m.get("speaker")))
            users.append(User(user["user_id"], language, events))
        known = {u["user_id"] for u in kept}
        for q in raw["questions"]:
            if q["user_id"] in known:
                asked_at = datetime.fromisoformat(q["asked_at"])
                evidence = tuple(q["evidence"])
                questions.append(
                    Question(q["id"], q["user_id"], q["text"], evidence, q["category"], asked_at)
                )
    return EventsSet(users, questions)


# --- Hindsight through the service -------------------------------------------------------


def store(service: MemoryService, dataset: EventsSet) -> dict[str, list[str]]:
    """Every memory through ``store_batch``; the data ids each stored memory holds."""
    owner: dict[str, list[str]] = {}
    for user in dataset.users:
        items = [
            BatchItem(
                content=e.text, occurred_at=e.occurred_at, session_id=e.session, speaker=e.speaker
            )
            for e in user.memories
        ]
        outcomes = store_in_batches(service, PRINCIPAL, user.user_id, items)
        for event, outcome in zip(user.memories, outcomes, strict=True):
            owner.setdefault(outcome.memory_id, []).append(event.memory_id)
    return owner


def ask(
    service: MemoryService,
    dataset: EventsSet,
    owner: dict[str, list[str]],
    extra: dict[str, Any] | None = None,
) -> list[Row]:
    """Each question of its own user, top 10, as of its ``asked_at``."""
    rows: list[Row] = []
    for q in dataset.questions:
        command = RetrieveCommand(
            user_id=q.user_id, query=q.text, top_k=TOP, as_of=q.asked_at, **(extra or {})
        )
        result = service.retrieve(PRINCIPAL, command)
        ranked = [d for r in result.results for d in owner.get(r.memory_id, [])]
        rows.append((dataset.language_of(q.user_id), q.category, ranked, q.evidence))
    return rows


# --- baselines ---------------------------------------------------------------------------


def _per_user(dataset: EventsSet, score: Any) -> list[Row]:
    """Each user's questions ranked over that user's memories by ``score(user, questions)``
    (a questions x memories matrix; only positive scores are ranked)."""
    by_user: dict[str, list[Question]] = defaultdict(list)
    for q in dataset.questions:
        by_user[q.user_id].append(q)
    ranked: dict[str, list[str]] = {}
    for user in dataset.users:
        questions = by_user.get(user.user_id, [])
        if not questions:
            continue
        for q, row in zip(questions, score(user, questions), strict=True):
            order = [i for i in np.argsort(-row, kind="stable")[:TOP] if row[i] > 0]
            ranked[q.question_id] = [user.memories[i].memory_id for i in order]
    return [
        (dataset.language_of(q.user_id), q.category, ranked[q.question_id], q.evidence)
        for q in dataset.questions
    ]


def run_bm25(dataset: EventsSet) -> list[Row]:
    def score(user: User, questions: list[Question]) -> np.ndarray:
        docs = [tokenize(e.text) for e in user.memories]
        return np.stack([bm25_scores(docs, tokenize(q.text)) for q in questions])

    return _per_user(dataset, score)


def run_dense(dataset: EventsSet, embedder: Embedder) -> list[Row]:
    def score(user: User, questions: list[Question]) -> np.ndarray:
        texts = [e.text for e in user.memories]
        return dense_scores(embedder, texts, [q.text for q in questions])

    return _per_user(dataset, score)


def describe(dataset: EventsSet, asked: str = "questions") -> None:
    """Print a set of this form: per language its users' sizes, the questions (``asked``)
    by category and three of them with their evidence (each cut at 120 characters)."""
    for language in LANGUAGES:
        users = [u for u in dataset.users if u.language == language]
        questions = [q for q in dataset.questions if dataset.language_of(q.user_id) == language]
        sizes = ", ".join(str(len(u.memories)) for u in users)
        kinds = Counter(q.category for q in questions)
        print(f"{language}: {len(users)} users ({sizes} memories), {len(questions)} {asked}")
        print("  " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
        texts = {e.memory_id: e.text for u in users for e in u.memories}
        for q in questions[:: max(1, len(questions) // 3)][:3]:
            print(f"  {q.text}  ->  {' / '.join(texts[e][:120] for e in q.evidence)}")


if __name__ == "__main__":
    describe(load())
