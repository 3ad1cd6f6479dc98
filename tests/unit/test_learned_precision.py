"""The learned reflector's precision rules: what they drop, and (as many cases) what they
must leave alone, in English and Chinese; and the folding of near-duplicate facts."""

from __future__ import annotations

import pytest

from hindsight.adapters.reflectors.learned.precision import (
    fold_near_duplicates,
    not_about_the_speaker,
)
from hindsight.core.models import Confidence, ExtractedFact, FactCategory


@pytest.mark.parametrize(
    "statement",
    [
        "He's an acoustic guitarist",  # someone else
        "Oh, she works at the hospital",
        "Their house is by the lake",
        "他是一名老师",
        "她每天都去跑步",
        "I found some great songs for your wedding",  # the listener
        "I hope your family helps out with the dogs",
        "你一定很喜欢旅行",
        "I would love to",  # only pointed at
        "I love both",
        "我也是",
        "我觉得这个不错",
        "Sky diving",  # an English clause without its speaker
        "The corndogs are great",
        "South Carolina's definitely got a great food scene",
    ],
)
def test_statements_that_are_not_the_speakers_facts(statement: str) -> None:
    assert not_about_the_speaker(statement)


@pytest.mark.parametrize(
    "statement",
    [
        "I am a nurse",
        "My husband is a firefighter",  # the speaker's family is theirs
        "We have two kids",
        "My sister and I run a bakery",
        "I love hiking with their dog",  # a third person later on: still the speaker's
        "I have a theory about them and it holds",
        "Hearing her sing makes me happy",
        "我的丈夫是消防员",
        "我们家有两个孩子",
        "我和妹妹开了一家面包店",
        "我喜欢和他一起爬山",
        "我对花粉过敏",
        "Im a vegan",  # the speaker, however spelled
        "Our house is by the lake",
        "It keeps me busy",
        "喜欢爬山",  # Chinese drops its subject: no speaker needed
        "每周都去游泳",
    ],
)
def test_the_speakers_own_facts_are_left_alone(statement: str) -> None:
    assert not not_about_the_speaker(statement)


def fact(content: str, confidence: Confidence, source: str, topic: str = "") -> ExtractedFact:
    topic = topic or "statement:" + content
    return ExtractedFact(content, FactCategory.FACT, confidence, [source], topic)


def test_near_duplicates_of_the_classifier_are_one_fact_with_both_sources() -> None:
    folded = fold_near_duplicates(
        [
            fact("The user loves hiking in the mountains.", Confidence.LOW, "m1"),
            fact("The user is a nurse.", Confidence.MEDIUM, "m2"),
            fact("The user loves hiking in the mountains a lot.", Confidence.MEDIUM, "m3"),
        ]
    )
    assert [(f.content, f.confidence, f.source_memory_ids) for f in folded] == [
        ("The user loves hiking in the mountains a lot.", Confidence.MEDIUM, ["m1", "m3"]),
        ("The user is a nurse.", Confidence.MEDIUM, ["m2"]),
    ]


def test_different_facts_and_the_rules_facts_are_not_folded() -> None:
    facts = [
        fact("The user loves hiking.", Confidence.LOW, "m1"),
        fact("The user hates hiking in the rain.", Confidence.LOW, "m2"),
        fact("用户喜欢爬山。", Confidence.LOW, "m3"),
        fact("用户喜欢游泳。", Confidence.LOW, "m4"),
        # the rules' topics carry supersession: two states are never folded here
        fact("The user lives in Paris.", Confidence.MEDIUM, "m5", topic="state:residence"),
        fact("The user lives in Paris now.", Confidence.MEDIUM, "m6", topic="state:residence"),
    ]
    assert fold_near_duplicates(facts) == facts
