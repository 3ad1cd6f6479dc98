"""Store-time key expansion (adapters/keys): the keys a memory gets, in English and Chinese,
what the store use case does with them, and the switch (HINDSIGHT_KEY_EXPANSION)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import numpy as np
import pytest

from hindsight.adapters.keys import LexiconKeyExpander, load_lexicon
from hindsight.adapters.memory import InMemorySearchIndex
from hindsight.bootstrap import build_key_expander, build_memory_service
from hindsight.core.commands import BatchItem, StoreBatchCommand
from hindsight.core.indexing import index_document, piece_terms
from hindsight.core.models import EpisodicMemory, Principal, SearchFilter, StoredVector
from hindsight.core.text import tokenize
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder

PRINCIPAL = Principal(tenant_id="t1")


@pytest.fixture(scope="module")
def expander() -> LexiconKeyExpander:
    return LexiconKeyExpander()


def terms(keys: list[str]) -> set[str]:
    return set(tokenize(" ".join(keys)))


@pytest.mark.parametrize(
    ("text", "category", "query_en", "query_zh"),
    [
        ("我不吃辣", "diet", "dietary preferences", "饮食偏好"),
        ("我对花生过敏", "allergy", "dietary restrictions", "饮食禁忌"),
        ("I'm allergic to peanuts", "allergy", "dietary restrictions", "过敏"),
        ("My sister Ana lives in Porto", "family", "family", "家人"),
        ("我妈妈住在杭州", "family", "family", "家人"),
        ("I work as a nurse at the city hospital", "work", "occupation", "职业"),
        ("我家有一只橘猫叫小橙", "pets", "pets", "宠物"),
        ("Flew to Lisbon for a week and stayed in a hotel", "travel", "travel", "旅行"),
    ],
)
def test_a_memory_gets_keys_of_its_topic_in_both_languages(
    expander: LexiconKeyExpander, text: str, category: str, query_en: str, query_zh: str
) -> None:
    keys = expander.keys(text)
    assert category in expander.categories(text)
    # every word of the topic query, English or Chinese, is among the memory's key terms
    assert set(tokenize(query_en)) <= terms(keys), (text, keys)
    assert set(tokenize(query_zh)) <= terms(keys), (text, keys)
    # and those words are not the memory's own: the keys add what the text lacks
    assert not set(tokenize(query_zh)) & set(tokenize(text)) or category == "allergy"


def test_a_fact_the_extractors_find_adds_its_kind(expander: LexiconKeyExpander) -> None:
    # the rule-based extractors read "我不吃辣" as a constraint (diet:food:spicy)
    assert {"restriction", "限制"} <= set(expander.keys("我不吃辣"))
    # without the extractors the cue words still give the category, not the fact's kind
    cues_only = LexiconKeyExpander(use_extractors=False).keys("我不吃辣")
    assert "饮食偏好" in cues_only
    assert "限制" not in cues_only


@pytest.mark.parametrize(
    "text", ["Nice weather today.", "今天天气不错。", "   ", "ok", "The printer is jammed."]
)
def test_chatter_gets_no_keys(expander: LexiconKeyExpander, text: str) -> None:
    assert expander.keys(text) == []


def test_keys_are_unique_and_bounded(expander: LexiconKeyExpander) -> None:
    everything = (
        "My mom and my boss went hiking; I ate spicy noodles, paid the rent, flew to Rome, "
        "studied for my exam, walked the dog and felt anxious. 我妈妈喜欢旅游和跑步。"
    )
    keys = expander.keys(everything)
    assert len(keys) == len(set(keys))
    assert len(expander.categories(everything)) <= 4
    assert len(keys) <= 4 * 12 + 5


def test_long_text_costs_about_what_a_short_one_does(expander: LexiconKeyExpander) -> None:
    long = "I'm allergic to peanuts. " + "The meeting notes say nothing new. " * 3_000
    began = time.perf_counter()
    keys = expander.keys(long)
    assert time.perf_counter() - began < 2.0  # bounded by EXTRACT_CHARS / CUE_CHARS
    assert "allergy" in keys


def test_the_lexicon_is_bilingual_and_consistent() -> None:
    lexicon = load_lexicon()
    for category in lexicon.categories:
        assert any(k.isascii() for k in category.keys), category.name
        assert any(not k.isascii() for k in category.keys), category.name
    names = {c.name for c in lexicon.categories}
    assert {n for found in lexicon.fact_topics.values() for n in found} <= names


def test_index_terms_carry_the_keys_on_every_piece() -> None:
    memory = _episode("我不吃辣", search_keys=["diet", "饮食偏好"])
    document = index_document(memory, StoredVector(model="m", values=_vector()))
    assert document.keys == ("diet", "饮食偏好")
    assert piece_terms(document) == [[*tokenize("我不吃辣"), "diet", "饮食", "偏好"]]
    again = index_document(
        memory.model_copy(update={"search_keys": ["辣", "diet", "diet"]}), document.vector
    )
    assert piece_terms(again) == [[*tokenize("我不吃辣"), "diet"]]  # once, and not the text's


def test_a_key_finds_the_memory_in_the_keyword_index() -> None:
    index = InMemorySearchIndex()
    with_keys = _episode("我不吃辣", memory_id="m1", search_keys=["饮食偏好"])
    without = _episode("我不吃辣", memory_id="m2")
    vector = StoredVector(model="m", values=_vector())
    index.upsert([index_document(with_keys, vector), index_document(without, vector)])
    hits = index.keyword_search(SearchFilter(tenant_id="t1", user_id="u1"), "饮食偏好", 10)
    assert [h.memory_id for h in hits] == ["m1"]


@pytest.mark.parametrize(("value", "on"), [("off", False), ("false", False), ("on", True)])
def test_the_switch(value: str, on: bool) -> None:
    settings = Settings.from_env({"HINDSIGHT_KEY_EXPANSION": value})
    assert settings.key_expansion is on
    assert (build_key_expander(settings) is not None) is on


@pytest.mark.parametrize("on", [True, False])
def test_store_keeps_the_keys_on_the_record_or_none_when_off(on: bool) -> None:
    service = build_memory_service(
        Settings(backend="memory", key_expansion=on), embedder=HashingEmbedder()
    )
    [outcome] = service.store_batch(
        PRINCIPAL, StoreBatchCommand(user_id="u1", items=[BatchItem(content="我不吃辣")])
    )
    stored = service.ports.records.get("t1", outcome.memory_id)
    assert isinstance(stored, EpisodicMemory)
    assert ("饮食偏好" in stored.search_keys) is on
    assert bool(stored.search_keys) is on
    # the wire view is unchanged: keys are an index matter, not a field of the API
    assert "search_keys" not in service.get_memory(PRINCIPAL, outcome.memory_id)


def _vector() -> np.ndarray:
    return np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)


def _episode(content: str, memory_id: str = "m1", **fields: object) -> EpisodicMemory:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return EpisodicMemory(
        memory_id=memory_id,
        tenant_id="t1",
        user_id="u1",
        content=content,
        occurred_at=now,
        created_at=now,
        updated_at=now,
        **fields,  # type: ignore[arg-type]
    )
