"""The offline rule-based reflector: explicit statements only, English and Chinese."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight.adapters.reflectors.rule_based import LABEL, RuleBasedReflector
from hindsight.core.models import (
    Confidence,
    EpisodicMemory,
    ExtractedFact,
    FactCategory,
)
from hindsight.core.ports import Reflector

T0 = datetime(2026, 6, 3, 9, 0, tzinfo=UTC)  # a Wednesday


def episode(
    number: int,
    content: str,
    speaker: str | None = "user",
    emotion: str | None = None,
    hours: int | None = None,
) -> EpisodicMemory:
    when = T0 + timedelta(hours=number if hours is None else hours)
    return EpisodicMemory(
        memory_id=f"mem_{number:03d}",
        tenant_id="t1",
        user_id="u1",
        content=content,
        speaker=speaker,
        emotion=emotion,
        occurred_at=when,
        created_at=when,
        updated_at=when,
    )


@pytest.fixture(scope="module")
def reflector() -> RuleBasedReflector:
    return RuleBasedReflector()


def facts_of(reflector: RuleBasedReflector, *texts: str) -> list[ExtractedFact]:
    episodes = [episode(i + 1, text) for i, text in enumerate(texts)]
    return reflector.reflect("u1", episodes, []).facts


def only(reflector: RuleBasedReflector, text: str) -> ExtractedFact:
    found = facts_of(reflector, text)
    assert len(found) == 1, found
    return found[0]


def test_label_and_protocol(reflector: RuleBasedReflector) -> None:
    assert reflector.label == "rule-based (offline, no LLM)" == LABEL
    assert isinstance(reflector, Reflector)
    output = reflector.reflect("u1", [], [])
    assert output.facts == []
    assert output.reflector == LABEL


# --- one pattern at a time ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "content", "category", "confidence", "topic"),
    [
        # allergies
        (
            "I'm allergic to peanuts.",
            "The user is allergic to peanuts.",
            "constraint",
            "high",
            "allergy:peanut",
        ),
        (
            "I have a severe peanut allergy",
            "The user is allergic to peanut.",
            "constraint",
            "high",
            "allergy:peanut",
        ),
        (
            "The user is allergic to penicillin.",
            "The user is allergic to penicillin.",
            "constraint",
            "high",
            "allergy:penicillin",
        ),
        ("我对花生过敏", "用户对花生过敏。", "constraint", "high", "allergy:peanut"),
        ("用户对海鲜过敏。", "用户对海鲜过敏。", "constraint", "high", "allergy:seafood"),
        # dietary constraints
        ("I don't eat meat.", "The user does not eat meat.", "constraint", "high", "diet:meat"),
        (
            "I'm vegetarian",
            "The user is vegetarian.",
            "constraint",
            "high",
            "state:diet",
        ),  # one diet at a time
        ("我不吃辣", "用户不吃辣。", "constraint", "high", "diet:food:spicy"),
        # likes and dislikes
        (
            "I love hiking in the mountains.",
            "The user loves hiking in the mountains.",
            "preference",
            "medium",
            "preference:activity:hiking",
        ),
        ("I really enjoy jazz", "The user enjoys jazz.", "preference", "medium", "preference:jazz"),
        (
            "I prefer tea over coffee.",
            "The user prefers tea over coffee.",
            "preference",
            "medium",
            "preference:drink:tea",
        ),
        (
            "I hate cilantro",
            "The user hates cilantro.",
            "preference",
            "medium",
            "preference:food:cilantro",
        ),
        (
            "I don't like horror movies.",
            "The user does not like horror movies.",
            "preference",
            "medium",
            "preference:horror-movie",
        ),
        (
            "I can't stand loud music",
            "The user cannot stand loud music.",
            "preference",
            "medium",
            "preference:loud-music",
        ),
        ("我喜欢川菜", "用户喜欢川菜。", "preference", "medium", "preference:food:sichuan"),
        ("我爱吃火锅", "用户爱吃火锅。", "preference", "medium", "preference:food:hotpot"),
        ("我不喜欢香菜", "用户不喜欢香菜。", "preference", "medium", "preference:food:cilantro"),
        ("我讨厌下雨天", "用户讨厌下雨天。", "preference", "medium", "preference:下雨天"),
        (
            "My favorite color is blue.",
            "The user's favorite color is blue.",
            "preference",
            "medium",
            "preference:favorite:color",
        ),
        (
            "我最喜欢的水果是芒果",
            "用户最喜欢的水果是芒果。",
            "preference",
            "medium",
            "preference:favorite:水果",
        ),
        # names
        ("My name is Alice Chen.", "The user's name is Alice Chen.", "fact", "high", "name"),
        ("Hi, I'm Bob.", "The user's name is Bob.", "fact", "high", "name"),
        (
            "Call me Ally",
            "The user wants to be called Ally.",
            "preference",
            "high",
            "name:preferred",
        ),
        ("我叫张三", "用户的名字是张三。", "fact", "high", "name"),
        ("我的名字是李小明", "用户的名字是李小明。", "fact", "high", "name"),
        ("叫我小王就行", "用户希望被称呼为小王。", "preference", "high", "name:preferred"),
        # pets and family
        (
            "I have a dog named Max.",
            "The user has a dog named Max.",
            "fact",
            "medium",
            "pet:dog:max",
        ),
        (
            "My daughter's name is Lily.",
            "The user's daughter is called Lily.",
            "fact",
            "medium",
            "family:daughter",
        ),
        ("我养了一只猫叫咪咪", "用户养了一只猫，名叫咪咪。", "fact", "medium", "pet:cat:咪咪"),
        ("我有两个孩子", "用户有两个孩子。", "fact", "medium", "family:children"),
        # habits
        (
            "I usually run in the morning.",
            "The user usually runs in the morning.",
            "fact",
            "medium",
            "habit:activity:running",
        ),
        (
            "Every morning I drink green tea.",
            "The user drinks green tea every morning.",
            "fact",
            "medium",
            "habit:drink:tea",
        ),
        (
            "I go swimming every weekend",
            "The user goes swimming every weekend.",
            "fact",
            "medium",
            "habit:activity:swimming",
        ),
        ("我每天早上跑步", "用户每天早上跑步。", "fact", "medium", "habit:activity:running"),
        ("我通常晚上十点睡觉", "用户通常晚上十点睡觉。", "fact", "medium", "habit:睡觉"),
        # plans and tasks, with the dates they refer to
        (
            "I'm going to Beijing next week.",
            "The user is going to Beijing next week (next week: 2026-06-08 to 2026-06-14).",
            "task",
            "medium",
            "plan:beijing",
        ),
        (
            "I need to renew my passport",
            "The user needs to renew their passport.",
            "task",
            "medium",
            "plan:renew-passport",
        ),
        (
            "Remind me to call mom tomorrow",
            "The user asked to be reminded to call mom tomorrow (tomorrow: 2026-06-04).",
            "task",
            "medium",
            "plan:call-mom",
        ),
        (
            "我下周要去北京出差",
            "用户下周要去北京出差（下周：2026-06-08至2026-06-14）。",
            "task",
            "medium",
            "plan:北京-出差",
        ),
        ("我明天要开会", "用户明天要开会（明天：2026-06-04）。", "task", "medium", "plan:开会"),
        (
            "提醒我周五交报告",
            "用户请求提醒：周五交报告（周五：2026-06-05）。",
            "task",
            "medium",
            "plan:交-报告",
        ),
    ],
)
def test_explicit_statements(
    reflector: RuleBasedReflector,
    text: str,
    content: str,
    category: str,
    confidence: str,
    topic: str,
) -> None:
    fact = only(reflector, text)
    assert fact.content == content
    assert fact.category == FactCategory(category)
    assert fact.confidence == Confidence(confidence)
    assert fact.topic == topic
    assert fact.source_memory_ids == ["mem_001"]


def test_list_of_allergens_gives_one_fact_and_topic_each(reflector: RuleBasedReflector) -> None:
    found = facts_of(reflector, "I'm allergic to peanuts and shellfish, so no Thai food for me.")
    assert [f.topic for f in found] == ["allergy:peanut", "allergy:shellfish"]
    assert [f.content for f in found] == [
        "The user is allergic to peanuts.",
        "The user is allergic to shellfish.",
    ]
    zh = facts_of(reflector, "我对花生和虾过敏")
    assert [f.topic for f in zh] == ["allergy:peanut", "allergy:shrimp"]


def test_topics_line_up_across_languages_and_phrasings(reflector: RuleBasedReflector) -> None:
    (english,) = facts_of(reflector, "I'm allergic to peanuts")
    (chinese,) = facts_of(reflector, "我对花生过敏")
    assert english.topic == chinese.topic == "allergy:peanut"
    (love,) = facts_of(reflector, "I love hiking")
    (no_longer,) = facts_of(reflector, "I no longer like hiking")
    assert love.topic == no_longer.topic
    assert love.content != no_longer.content


# --- what must not become a fact --------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I don't feel like Sichuan food today.",
        "I don't like Sichuan food today",
        "今天不想吃川菜",
        "我今天不喜欢川菜",
        "I'm not allergic to anything.",
        "我对花生不过敏",
        "Do you like pizza?",
        "你喜欢川菜吗？",
        "I would like a coffee.",
        "I like it.",
        "我叫了外卖",
        "叫我起床",
        "I'm tired.",
        "我觉得这个不错",
        "我要一杯咖啡",
        "Nice weather today.",
    ],
)
def test_no_fact(reflector: RuleBasedReflector, text: str) -> None:
    assert facts_of(reflector, text) == []


def test_sichuan_today_never_becomes_a_lasting_dislike(reflector: RuleBasedReflector) -> None:
    found = facts_of(
        reflector, "I don't feel like Sichuan food today.", "今天不想吃川菜", "我今天不喜欢川菜"
    )
    for fact in found:  # none today; if one appears it must stay time-bound and low
        assert fact.confidence is Confidence.LOW
        assert "today" in fact.content or "今天" in fact.content
    assert not any(f.category is FactCategory.PREFERENCE for f in found)
    assert not any("dislike" in f.content or "不喜欢川菜" in f.content for f in found)


# --- confidence -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I think I'm allergic to cats.",
        "我可能对芒果过敏",
        "Maybe I'll visit Paris next month.",
        "I guess I like jazz",
        "我好像喜欢爵士乐",
    ],
)
def test_hedged_statements_are_low_and_say_so(reflector: RuleBasedReflector, text: str) -> None:
    fact = only(reflector, text)
    assert fact.confidence is Confidence.LOW
    assert "uncertainty" in fact.content or "不确定" in fact.content


# --- speakers ---------------------------------------------------------------------------


@pytest.mark.parametrize("speaker", ["assistant", "Agent", "AI", "support-bot", "ChatBot", "助手"])
def test_agent_speakers_are_skipped(reflector: RuleBasedReflector, speaker: str) -> None:
    episodes = [episode(1, "The user is allergic to shellfish. I love helping.", speaker=speaker)]
    assert reflector.reflect("u1", episodes, []).facts == []


def test_name_prefixed_lines_set_the_speaker(reflector: RuleBasedReflector) -> None:
    transcript = (
        "Assistant: You are allergic to shellfish, right?\n"
        "User: No, but I love sushi.\n"
        "AI: I love sushi too!"
    )
    found = reflector.reflect("u1", [episode(1, transcript, speaker=None)], []).facts
    assert [(f.content, f.topic) for f in found] == [
        ("The user loves sushi.", "preference:food:sushi")
    ]


def test_a_named_speaker_keeps_their_name(reflector: RuleBasedReflector) -> None:
    found = reflector.reflect("u1", [episode(1, "Alice: I'm allergic to cats", speaker=None)], [])
    (fact,) = found.facts
    assert fact.content == "Alice is allergic to cats."
    assert fact.topic == "person:alice:allergy:cat"


def test_speaker_equal_to_the_user_id_is_the_user(reflector: RuleBasedReflector) -> None:
    found = reflector.reflect("u1", [episode(1, "I'm allergic to kiwi", speaker="u1")], [])
    assert found.facts[0].content == "The user is allergic to kiwi."


# --- merging across episodes ------------------------------------------------------------


def test_repeats_become_one_fact_with_every_source_and_raised_confidence(
    reflector: RuleBasedReflector,
) -> None:
    found = facts_of(reflector, "I love jazz.", "Nice weather today.", "I really love jazz!")
    (fact,) = found
    assert fact.source_memory_ids == ["mem_001", "mem_003"]
    assert fact.confidence is Confidence.HIGH  # medium raised one step


def test_repeated_high_confidence_stays_high(reflector: RuleBasedReflector) -> None:
    (fact,) = facts_of(reflector, "我对花生过敏", "I'm allergic to peanuts")
    assert fact.confidence is Confidence.HIGH
    assert fact.source_memory_ids == ["mem_001", "mem_002"]
    assert fact.content == "The user is allergic to peanuts."  # the latest wording


def test_hedged_repeat_is_raised_from_low_to_medium(reflector: RuleBasedReflector) -> None:
    (fact,) = facts_of(reflector, "I think I like jazz", "maybe I like jazz")
    assert fact.confidence is Confidence.MEDIUM


def test_later_contradiction_in_one_batch_wins(reflector: RuleBasedReflector) -> None:
    found = facts_of(reflector, "I love hiking", "I no longer like hiking")
    assert [(f.content, f.source_memory_ids) for f in found] == [
        ("The user no longer likes hiking.", ["mem_002"])
    ]


def test_episodes_are_read_in_time_order(reflector: RuleBasedReflector) -> None:
    newer = episode(1, "I no longer like hiking", hours=10)
    older = episode(2, "I love hiking", hours=1)
    (fact,) = reflector.reflect("u1", [newer, older], []).facts
    assert fact.content == "The user no longer likes hiking."


def test_mood_patterns_need_repetition(reflector: RuleBasedReflector) -> None:
    once = [episode(1, "I'm so stressed about work")]
    assert reflector.reflect("u1", once, []).facts == []
    repeated = [
        episode(1, "I'm so stressed about work"),
        episode(2, "Another long day, I feel drained", emotion="stressed"),
        episode(3, "压力好大"),
        episode(4, "Assistant: Sounds stressful!", speaker=None, emotion="stressed"),
    ]
    (fact,) = reflector.reflect("u1", repeated, []).facts
    assert fact.category is FactCategory.MOOD
    assert fact.topic == "mood:stressed"
    assert fact.content == "The user has repeatedly felt stressed."
    assert fact.source_memory_ids == ["mem_001", "mem_002", "mem_003"]
    assert fact.confidence is Confidence.MEDIUM


def test_chinese_mood_pattern_is_written_in_chinese(reflector: RuleBasedReflector) -> None:
    found = reflector.reflect("u1", [episode(1, "最近好焦虑"), episode(2, "还是很焦虑")], [])
    (fact,) = found.facts
    assert fact.content == "用户多次表现出焦虑的情绪。"
    assert fact.confidence is Confidence.LOW


# --- summarize --------------------------------------------------------------------------


def test_summarize_session(reflector: RuleBasedReflector) -> None:
    session = [
        episode(1, "I need to book a hotel in Paris for 3 nights"),
        episode(2, "Assistant: Sure, which dates?", speaker=None),
        episode(3, "I need to renew my passport too."),
        episode(
            4,
            "I'm feeling anxious. Can you find flights to Paris next Monday for $500?",
            emotion="anxious",
        ),
        episode(5, "OK, I booked the hotel."),
    ]
    summary = reflector.summarize(session)
    assert summary.summarizer == LABEL
    assert summary.intent == "Can you find flights to Paris next Monday for $500?"
    assert "Paris" in summary.entities
    assert "3 nights" in summary.entities
    assert "$500" in summary.entities
    assert "Sure" not in summary.entities
    assert summary.open_tasks == ["The user needs to renew their passport."]
    assert summary.mood == "anxious"


def test_summarize_chinese_session(reflector: RuleBasedReflector) -> None:
    session = [
        episode(1, "我下周要去北京出差"),
        episode(2, "帮我订一家离天安门近的酒店", emotion="焦虑"),
    ]
    summary = reflector.summarize(session)
    assert summary.intent == "帮我订一家离天安门近的酒店"
    assert "天安门" in summary.entities and "北京" in summary.entities
    assert summary.open_tasks == ["用户下周要去北京出差（下周：2026-06-08至2026-06-14）。"]
    assert summary.mood == "anxious"


def test_summarize_nothing() -> None:
    summary = RuleBasedReflector().summarize([])
    assert (summary.intent, summary.entities, summary.open_tasks, summary.mood) == ("", [], [], "")
