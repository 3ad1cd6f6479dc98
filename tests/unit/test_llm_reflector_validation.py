"""LLM reflector output: JSON extraction, schema validation, one retry, then an error."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from hindsight.adapters.reflectors.llm import (
    REFLECTION_SYSTEM_PROMPT,
    InvalidLlmOutputError,
    LlmReflector,
    build_reflection_prompt,
    extract_json_object,
    parse_reflection,
)
from hindsight.core.errors import ReflectorOutputError
from hindsight.core.models import (
    Confidence,
    EpisodicMemory,
    FactCategory,
    FactStatus,
    SemanticMemory,
)
from hindsight.core.ports import Reflector
from tests.fakes import numbered_episode

T0 = datetime(2026, 6, 3, 9, 0, tzinfo=UTC)


def episode(number: int, content: str, speaker: str = "user") -> EpisodicMemory:
    return numbered_episode(number, content, speaker=speaker)


EPISODES = [episode(1, "I'm allergic to peanuts."), episode(2, "我下周要去北京出差")]
IDS = ["mem_1", "mem_2"]


def fact(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "content": "The user is allergic to peanuts.",
        "category": "constraint",
        "confidence": "high",
        "topic": "allergy:peanut",
        "source_memory_ids": ["mem_1"],
    }
    base.update(overrides)
    return base


def answer(*facts: dict[str, object]) -> str:
    return json.dumps({"facts": list(facts)}, ensure_ascii=False)


class ScriptedModel:
    """A complete(system, user) function that replays answers and records prompts."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, str]] = []

    def __call__(self, system: str, user: str) -> str:
        self.calls.append((system, user))
        return self.answers.pop(0)


# --- JSON extraction ----------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"facts": []}',
        '```json\n{"facts": []}\n```',
        '```\n{"facts": []}\n```',
        'Here is the result:\n{"facts": []}\nHope this helps {not json}.',
        'Sure! {"facts": [], "note": {"nested": true}} done',
    ],
)
def test_extract_json_object(text: str) -> None:
    assert extract_json_object(text)["facts"] == []


@pytest.mark.parametrize("text", ["", "   ", "no json here", "[1, 2, 3]", '{"facts": [}'])
def test_extract_json_object_rejects(text: str) -> None:
    with pytest.raises(InvalidLlmOutputError):
        extract_json_object(text)


# --- schema ----------------------------------------


def test_valid_answer_becomes_extracted_facts() -> None:
    facts = parse_reflection(
        answer(
            fact(),
            fact(
                content="用户下周（2026-06-08至2026-06-14）要去北京出差。",
                category="Task",
                confidence="MEDIUM",
                topic="Plan:Trip Beijing",
                source_memory_ids=["mem_2"],
            ),
        ),
        IDS,
    )
    assert [(f.category, f.confidence, f.topic) for f in facts] == [
        (FactCategory.CONSTRAINT, Confidence.HIGH, "allergy:peanut"),
        (FactCategory.TASK, Confidence.MEDIUM, "plan:trip-beijing"),
    ]
    assert facts[1].source_memory_ids == ["mem_2"]


def test_chinese_confidence_words_are_accepted() -> None:
    (parsed,) = parse_reflection(answer(fact(confidence="高")), IDS)
    assert parsed.confidence is Confidence.HIGH


def test_duplicate_items_are_merged_with_their_sources() -> None:
    facts = parse_reflection(
        answer(fact(source_memory_ids=["mem_1"]), fact(source_memory_ids=["mem_2", "mem_1"])),
        IDS,
    )
    assert len(facts) == 1
    assert facts[0].source_memory_ids == ["mem_1", "mem_2"]


def test_empty_fact_list_is_valid() -> None:
    assert parse_reflection('{"facts": []}', IDS) == []


@pytest.mark.parametrize(
    ("bad", "mentions"),
    [
        (fact(category="habit"), "category"),
        (fact(confidence="certain"), "confidence"),
        (fact(content="   "), "content"),
        (fact(content="x" * 1001), "content"),
        (fact(source_memory_ids=[]), "source_memory_ids"),
        ({"content": "The user likes tea."}, "category"),
    ],
)
def test_invalid_items_are_rejected_with_a_reason(bad: dict[str, object], mentions: str) -> None:
    with pytest.raises(InvalidLlmOutputError) as caught:
        parse_reflection(answer(bad), IDS)
    assert mentions in str(caught.value)


def test_a_fact_citing_an_episode_not_given_is_dropped_the_others_kept() -> None:
    stranger = fact(content="The user is a pilot.", topic="job", source_memory_ids=["mem_9"])
    facts = parse_reflection(answer(stranger, fact()), IDS)
    assert [(f.content, f.source_memory_ids) for f in facts] == [
        ("The user is allergic to peanuts.", ["mem_1"])
    ]


def test_missing_facts_key_is_rejected() -> None:
    with pytest.raises(InvalidLlmOutputError, match="facts"):
        parse_reflection('{"items": []}', IDS)


# --- prompt ----------------------------------------


def test_prompt_lists_episodes_with_ids_times_speakers_and_existing_topics() -> None:
    existing = SemanticMemory(
        memory_id="sem_1",
        tenant_id="t1",
        user_id="u1",
        content="The user loves hiking.",
        topic="preference:hiking",
        status=FactStatus.APPROVED,
        occurred_at=T0,
        created_at=T0,
        updated_at=T0,
    )
    prompt = build_reflection_prompt(
        "u1", [EPISODES[1], episode(3, "Noted.", speaker="assistant"), EPISODES[0]], [existing]
    )
    assert prompt.index("[mem_1]") < prompt.index("[mem_2]") < prompt.index("[mem_3]")
    assert "2026-06-03 10:00 UTC (Wednesday)" in prompt
    assert "speaker=assistant" in prompt
    assert "topic=preference:hiking" in prompt
    assert "Sichuan" in REFLECTION_SYSTEM_PROMPT and "川菜" in REFLECTION_SYSTEM_PROMPT
    assert "source_memory_ids" in REFLECTION_SYSTEM_PROMPT


# --- the reflector: retry once, then fail ----------------------------------------


def test_valid_first_answer_needs_one_call() -> None:
    model = ScriptedModel(answer(fact()))
    reflector = LlmReflector(model, label="fake:model")
    assert isinstance(reflector, Reflector)
    output = reflector.reflect("u1", EPISODES, [])
    assert output.reflector == "fake:model"
    assert [f.topic for f in output.facts] == ["allergy:peanut"]
    assert len(model.calls) == 1
    assert model.calls[0][0] == REFLECTION_SYSTEM_PROMPT


def test_invalid_then_valid_answer_is_retried_with_the_error() -> None:
    model = ScriptedModel(answer(fact(category="habit")), f"```json\n{answer(fact())}```")
    output = LlmReflector(model, label="fake:model").reflect("u1", EPISODES, [])
    assert len(output.facts) == 1
    assert len(model.calls) == 2
    retry_prompt = model.calls[1][1]
    assert retry_prompt.startswith(model.calls[0][1])
    assert "rejected" in retry_prompt and "category" in retry_prompt


def test_invalid_twice_raises_and_says_nothing_was_stored() -> None:
    model = ScriptedModel("I cannot help with that.", answer(fact(category="opinion")))
    with pytest.raises(ReflectorOutputError) as caught:
        LlmReflector(model, label="fake:model").reflect("u1", EPISODES, [])
    assert "nothing was stored" in caught.value.message
    assert "category" in caught.value.message
    assert len(model.calls) == 2


def test_no_episodes_means_no_call() -> None:
    model = ScriptedModel()
    assert LlmReflector(model, label="fake:model").reflect("u1", [], []).facts == []
    assert model.calls == []


def test_summarize_parses_and_retries() -> None:
    model = ScriptedModel(
        '{"intent": 5}',
        'Summary: {"intent": "Book a hotel in Paris", "entities": ["Paris"], '
        '"open_tasks": ["Renew passport"], "mood": "anxious"}',
    )
    summary = LlmReflector(model, label="fake:model").summarize(EPISODES)
    assert summary.intent == "Book a hotel in Paris"
    assert summary.entities == ["Paris"]
    assert summary.open_tasks == ["Renew passport"]
    assert summary.mood == "anxious"
    assert summary.summarizer == "fake:model"
    assert len(model.calls) == 2


def test_summarize_invalid_twice_raises() -> None:
    model = ScriptedModel("nope", '{"entities": "not a list"}')
    with pytest.raises(ReflectorOutputError):
        LlmReflector(model, label="fake:model").summarize(EPISODES)
