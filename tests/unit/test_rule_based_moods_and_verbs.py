"""Two faults of the offline extractor: moods from non-feelings, and "gaves up".

1. A mood pattern comes only from statements of feelings: an ``emotion`` label a
   classifier put on "I am allergic to peanuts" is no evidence of a mood.
2. A verb the user already inflected ("gave up", "walked", "used to") is not conjugated
   again when the fact is written in the third person.
"""

from __future__ import annotations

import pytest

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.adapters.reflectors.rule_based.grammar import conjugate, is_inflected
from hindsight.adapters.reflectors.rule_based.moods import (
    canonical_mood,
    moods_in,
    states_feeling,
)
from hindsight.core.models import EpisodicMemory, FactCategory
from tests.fakes import numbered_episode


def episode(number: int, content: str, emotion: str | None = None) -> EpisodicMemory:
    return numbered_episode(number, content, emotion=emotion)


@pytest.fixture(scope="module")
def reflector() -> RuleBasedReflector:
    return RuleBasedReflector()


def moods(reflector: RuleBasedReflector, episodes: list[EpisodicMemory]) -> list[str]:
    facts = reflector.reflect("u1", episodes, []).facts
    return [f.content for f in facts if f.category is FactCategory.MOOD]


# --- moods ----------------------------------------------------------------------------------


def test_allergy_statements_labelled_anxious_make_no_mood(reflector: RuleBasedReflector) -> None:
    episodes = [
        episode(1, "I am allergic to peanuts.", emotion="anxious"),
        episode(2, "I'm allergic to shellfish as well.", emotion="anxious"),
        episode(3, "我对花生过敏", emotion="焦虑"),
    ]
    facts = reflector.reflect("u1", episodes, []).facts
    assert {f.topic for f in facts} == {"allergy:peanut", "allergy:shellfish"}
    assert moods(reflector, episodes) == []


def test_labels_count_when_the_user_states_a_feeling(reflector: RuleBasedReflector) -> None:
    episodes = [
        episode(1, "I feel drained after the meeting", emotion="anxious"),
        episode(2, "心情很差", emotion="anxious"),
    ]
    assert moods(reflector, episodes) == ["The user has repeatedly felt anxious."]


def test_said_moods_still_make_patterns(reflector: RuleBasedReflector) -> None:
    episodes = [episode(1, "I'm so anxious about the exam"), episode(2, "I get nervous at exams")]
    assert moods(reflector, episodes) == ["The user has repeatedly felt anxious."]


@pytest.mark.parametrize(
    "text",
    ["I am allergic to peanuts", "I feel like pizza", "I need to call my mom", "我对花生过敏"],
)
def test_not_statements_of_feeling(text: str) -> None:
    assert not states_feeling(text)


@pytest.mark.parametrize(
    "text", ["I feel drained", "I'm feeling great", "I'm not happy today", "我不开心", "压力好大"]
)
def test_statements_of_feeling(text: str) -> None:
    assert states_feeling(text)


@pytest.mark.parametrize(
    ("label", "mood"),
    [("anxious", "anxious"), ("Very Worried", "anxious"), ("unhappy", "unhappy")],
)
def test_negated_mood_labels_are_not_their_opposite(label: str, mood: str) -> None:
    assert canonical_mood(label) == mood
    assert canonical_mood("不开心") == "不开心"
    assert canonical_mood("not happy") == "not happy"


def test_denied_chinese_moods_are_not_moods() -> None:
    assert moods_in("我不开心，别担心") == []
    assert moods_in("我很开心") == ["happy"]


# --- verbs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phrase", "third"),
    [
        ("gave up sugar", "gave up sugar"),
        ("went running", "went running"),
        ("walked the dog", "walked the dog"),
        ("studied late", "studied late"),
        ("used to swim", "used to swim"),
        ("gives up", "gives up"),
        ("ate breakfast", "ate breakfast"),
        ("give up sugar", "gives up sugar"),
        ("need coffee", "needs coffee"),
        ("read books", "reads books"),
        ("feed the cat", "feeds the cat"),
        ("focus on work", "focuses on work"),
        ("pass the exam", "passes the exam"),
        ("study French", "studies French"),
        ("go out", "goes out"),
    ],
)
def test_conjugate_leaves_inflected_verbs_alone(phrase: str, third: str) -> None:
    assert conjugate(phrase) == third


def test_is_inflected() -> None:
    assert all(is_inflected(v) for v in ["gave", "took", "walked", "agreed", "tries", "done"])
    assert not any(is_inflected(v) for v in ["give", "need", "read", "speed", "miss", "run"])


@pytest.mark.parametrize(
    ("said", "fact"),
    [
        ("I always gave up sugar for Lent.", "The user always gave up sugar for Lent."),
        ("I usually walked to school.", "The user usually walked to school."),
        ("I usually give up on diets.", "The user usually gives up on diets."),
        ("Every morning I study French", "The user studies French every morning."),
    ],
)
def test_habits_are_written_with_the_right_verb_form(
    reflector: RuleBasedReflector, said: str, fact: str
) -> None:
    facts = reflector.reflect("u1", [episode(1, said)], []).facts
    assert [f.content for f in facts] == [fact]
    assert "gaves" not in fact and "walkeds" not in fact
