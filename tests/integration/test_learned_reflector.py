"""The learned reflector with the shipped weights and the real bundled embedder
(multilingual-e5-small), English and Chinese: what it must find, what it must not; the
same for its static variant (mean word embeddings, ``weights_static.npz``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.adapters.reflectors.learned import LearnedReflector
from hindsight.adapters.reflectors.rule_based.clauses import is_zh
from hindsight.core.models import Confidence, EpisodicMemory, ExtractedFact, FactCategory

T0 = datetime(2026, 6, 3, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module", params=["e5", "static"])
def reflector(request: pytest.FixtureRequest) -> LearnedReflector:
    """The learned reflector over the model's vectors, and over mean word embeddings
    (``learned``, the default): both keep every promise below."""
    return LearnedReflector(build_embedder("e5"), static=request.param == "static")


def facts_of(reflector: LearnedReflector, *texts: str) -> list[ExtractedFact]:
    episodes = [
        EpisodicMemory(
            memory_id=f"mem_{n:03d}",
            tenant_id="t1",
            user_id="u1",
            content=text,
            speaker="user",
            occurred_at=T0 + timedelta(hours=n),
            created_at=T0 + timedelta(hours=n),
            updated_at=T0 + timedelta(hours=n),
        )
        for n, text in enumerate(texts, start=1)
    ]
    return reflector.reflect("u1", episodes, []).facts


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("I'm a nurse and I work night shifts.", ["nurse"]),
        ("I have two kids and a golden retriever.", ["kids"]),
        ("Honestly, I love hiking in the mountains.", ["loves hiking"]),
        ("我养了一只猫，叫馒头。", ["猫", "馒头"]),
        ("我下个月要去云南旅游。", ["云南"]),
        ("我是一名护士，在儿童医院上夜班。", ["护士"]),
    ],
)
def test_lasting_facts_are_found_in_both_languages(
    reflector: LearnedReflector, text: str, words: list[str]
) -> None:
    found = facts_of(reflector, text)
    assert any(all(w in f.content for w in words) for f in found), found
    assert all(f.source_memory_ids == ["mem_001"] for f in found)
    # the fact naming the words is about the user; a Chinese clause that dropped its
    # subject ("在儿童医院上夜班" of "我是一名护士，在儿童医院上夜班") keeps the words as said
    named = next(f for f in found if all(w in f.content for w in words))
    assert named.content.startswith(("The user", "用户"))
    assert all(f.content.startswith(("The user", "用户")) or is_zh(f.content) for f in found)


@pytest.mark.parametrize(
    "text",
    [
        "I don't feel like Sichuan food today.",
        "今天不想吃川菜",
        "我今天不喜欢川菜",
        "Do you like pizza?",
        "你喜欢川菜吗？",
        "If I had a dog I would walk it every day.",
        "如果我有钱，我就去环游世界。",
        "I would like a coffee.",
        "I like it.",
        "Nice weather today.",
        "我觉得这个不错",
        "I'm tired.",
    ],
)
def test_questions_hypotheticals_and_moments_are_no_facts(
    reflector: LearnedReflector, text: str
) -> None:
    assert facts_of(reflector, text) == []


def test_sichuan_today_never_becomes_a_lasting_dislike(reflector: LearnedReflector) -> None:
    found = facts_of(reflector, "I don't like Sichuan food today", "今天不想吃川菜")
    assert not any(f.category is FactCategory.PREFERENCE for f in found)
    assert found == []


def test_other_peoples_facts_stay_theirs(reflector: LearnedReflector) -> None:
    for text, owner in [
        ("My sister loves hiking.", "The user's sister"),
        ("我妹妹喜欢爬山。", "用户妹妹"),
    ]:
        found = facts_of(reflector, text)
        assert found and all(f.content.startswith(owner) for f in found), found


def test_repeats_in_two_languages_merge_through_the_rules_topic(
    reflector: LearnedReflector,
) -> None:
    (fact,) = facts_of(reflector, "I'm allergic to peanuts", "我对花生过敏")
    assert fact.topic == "allergy:peanut"
    assert fact.source_memory_ids == ["mem_001", "mem_002"]
    assert fact.confidence is Confidence.HIGH
