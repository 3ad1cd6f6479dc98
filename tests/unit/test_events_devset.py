"""The events dev set (bench/data/events) is what bench/events_devset.py promises to measure:
both languages, three users each with 90-130 memories in time order, 25 questions each in
the five categories, every evidence id one of its own user's memories and dated before the
question, two evidence ids exactly for ``multi``; and its store and ask path ranks each
question's memories through the public use cases."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import events_devset  # noqa: E402
from events_devset import EventsSet  # noqa: E402

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex  # noqa: E402
from hindsight.bootstrap import assemble, local_ports  # noqa: E402
from hindsight.core.policy import Policy  # noqa: E402
from tests.fakes import HashingEmbedder, ScriptedReflector  # noqa: E402

CATEGORIES = {"single", "multi", "temporal", "update", "preference"}


@pytest.fixture(scope="module")
def dataset() -> EventsSet:
    return events_devset.load()


def test_both_languages_three_users_each_with_a_history(dataset: EventsSet) -> None:
    assert Counter(u.language for u in dataset.users) == {"zh": 3, "en": 3}
    for user in dataset.users:
        assert 90 <= len(user.memories) <= 130
        times = [e.occurred_at for e in user.memories]
        assert times == sorted(times) and len(set(times)) == len(times)
        assert all(e.memory_id.startswith(user.user_id) for e in user.memories)
        assert all(e.text.strip() for e in user.memories)


def test_every_question_has_its_own_users_earlier_evidence(dataset: EventsSet) -> None:
    memories = {e.memory_id: (u.user_id, e) for u in dataset.users for e in u.memories}
    assert len(memories) == sum(len(u.memories) for u in dataset.users)
    assert len({q.question_id for q in dataset.questions}) == len(dataset.questions)
    for user in dataset.users:
        asked = [q for q in dataset.questions if q.user_id == user.user_id]
        assert len(asked) == 25
        assert {q.category for q in asked} == CATEGORIES
    for q in dataset.questions:
        assert len(q.evidence) == (2 if q.category == "multi" else 1), q.question_id
        for memory_id in q.evidence:
            owner, event = memories[memory_id]
            assert owner == q.user_id and event.occurred_at < q.asked_at


def test_questions_seldom_copy_their_evidence(dataset: EventsSet) -> None:
    # a paraphrase set: most questions must not be found by their words alone
    rows = events_devset.run_bm25(dataset)
    hits = sum(bool(set(ranked[:5]) & set(evidence)) for _, _, ranked, evidence in rows)
    assert hits < 0.4 * len(rows)


def test_the_store_and_ask_path_ranks_through_the_use_cases() -> None:
    small = events_devset.load(users_a_language=1)
    service = assemble(
        local_ports(
            InMemoryRecordStore(), InMemorySearchIndex(), HashingEmbedder(), ScriptedReflector()
        ),
        Policy(),
    )
    owner = events_devset.store(service, small)
    assert sorted(d for ids in owner.values() for d in ids) == sorted(
        e.memory_id for u in small.users for e in u.memories
    )
    rows = events_devset.ask(service, small, owner)
    assert len(rows) == 50 and {r[0] for r in rows} == {"zh", "en"}
    assert all(0 < len(ranked) <= events_devset.TOP for _, _, ranked, _ in rows)
