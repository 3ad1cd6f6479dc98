"""The chat dev set (bench/data/chat) is what bench/chat_devset.py promises to measure:
both languages, two users each with a year of user/assistant sessions in time order and
long turns among them, 20 questions each in the five categories with the brief's counts,
every evidence id one of its own user's turns and dated before the question, ``multi``
questions on two turns of two sessions; the build refuses a helper's file whose evidence
is no turn; and the store path keeps each turn's speaker."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import chat_devset  # noqa: E402
import events_devset  # noqa: E402
from events_devset import EventsSet  # noqa: E402

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex  # noqa: E402
from hindsight.bootstrap import assemble, local_ports  # noqa: E402
from hindsight.core.models import ListQuery  # noqa: E402
from hindsight.core.policy import Policy  # noqa: E402
from tests.fakes import HashingEmbedder, ScriptedReflector  # noqa: E402

COUNTS = {"single-user": 8, "single-assistant": 3, "multi": 4, "update": 2, "temporal": 3}


@pytest.fixture(scope="module")
def dataset() -> EventsSet:
    return chat_devset.load()


def test_both_languages_two_users_each_with_a_year_of_sessions(dataset: EventsSet) -> None:
    assert Counter(u.language for u in dataset.users) == {"zh": 2, "en": 2}
    for user in dataset.users:
        sessions: dict[str, list[events_devset.Event]] = {}
        for turn in user.memories:
            sessions.setdefault(turn.session, []).append(turn)
        assert 12 <= len(sessions) <= 14, user.user_id
        for turns in sessions.values():
            assert [t.speaker for t in turns] == ["user", "assistant"] * (len(turns) // 2) + [
                "user"
            ] * (len(turns) % 2)
        times = [t.occurred_at for t in user.memories]
        assert times == sorted(times)
        long = 1500 if user.language == "en" else 500
        assert sum(len(t.text) > long for t in user.memories) >= 2  # the pastes


def test_every_question_has_its_own_users_earlier_evidence(dataset: EventsSet) -> None:
    turns = {e.memory_id: (u.user_id, e) for u in dataset.users for e in u.memories}
    assert len({q.question_id for q in dataset.questions}) == len(dataset.questions)
    for user in dataset.users:
        asked = [q for q in dataset.questions if q.user_id == user.user_id]
        assert Counter(q.category for q in asked) == COUNTS
    for q in dataset.questions:
        assert len(q.evidence) == (2 if q.category == "multi" else 1), q.question_id
        owners = [turns[e] for e in q.evidence]
        assert all(owner == q.user_id and t.occurred_at < q.asked_at for owner, t in owners)
        if q.category == "multi":
            assert len({t.session for _, t in owners}) == 2, q.question_id


def test_questions_seldom_copy_their_evidence(dataset: EventsSet) -> None:
    rows = events_devset.run_bm25(dataset)
    hits = sum(bool(set(ranked[:5]) & set(evidence)) for _, _, ranked, evidence in rows)
    assert hits < 0.7 * len(rows)


def test_the_build_refuses_evidence_that_is_no_turn(tmp_path: Path) -> None:
    part = {
        "user_id": "chat-en-9",
        "persona": "a test user",
        "turns": [
            {
                "id": "chat-en-9-t001",
                "session": "chat-en-9-s01",
                "occurred_at": "2025-03-01T10:00:00+00:00",
                "speaker": "user",
                "text": "My sister lives in Leeds.",
            }
        ],
        "questions": [
            {
                "id": "q",
                "text": "Where does my sister live?",
                "category": "single-user",
                "evidence": ["chat-en-9-t002"],
                "answer": "Leeds",
            }
        ],
    }
    assert chat_devset.check_part(part) == ["q: evidence ['chat-en-9-t002'] is no turn"]
    (tmp_path / "chat-zh-9.json").write_text(json.dumps(part))  # zh is built first
    with pytest.raises(SystemExit, match="is no turn"):
        chat_devset.build(tmp_path, tmp_path)


def test_the_store_path_keeps_each_turns_speaker() -> None:
    small = chat_devset.load(users_a_language=1)
    records = InMemoryRecordStore()
    service = assemble(
        local_ports(records, InMemorySearchIndex(), HashingEmbedder(), ScriptedReflector()),
        Policy(),
    )
    owner = events_devset.store(service, small)
    speaker = {e.memory_id: e.speaker for u in small.users for e in u.memories}
    user = small.users[0]
    page = records.list(events_devset.PRINCIPAL.tenant_id, user.user_id, ListQuery(), limit=500)
    assert page.items and all(m.speaker == speaker[owner[m.memory_id][0]] for m in page.items)
    rows = events_devset.ask(service, small, owner)
    assert len(rows) == 40 and {r[0] for r in rows} == {"zh", "en"}
