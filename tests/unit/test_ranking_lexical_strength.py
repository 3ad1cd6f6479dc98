"""Lexical evidence strength (Policy.lexical_strength, core/retrieval/fusion.py ``lexical_weight``):
the share of the query's terms its best keyword hits hold scales the keyword share."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight.bootstrap import rewire
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import ConfigurationError
from hindsight.core.indexing import searched_text
from hindsight.core.retrieval.fusion import lexical_weight, plan_fusion
from hindsight.core.retrieval.ranking import coverage
from hindsight.core.text import tokenize
from hindsight.settings import Settings
from tests.fakes import numbered_episode

TEXTS = [
    "Avery: nice weather today",  # holds only the name the question asks about
    "Avery: I walk my two dogs every morning before work",
    "Jordan: my cat sleeps all day on the sofa",
    "Jordan: the meeting moved to Friday",
]
QUESTION = "Which animals does Avery look after?"


def test_a_full_match_keeps_the_policy_weight_and_none_leaves_dense_alone():
    assert lexical_weight(0.6, 1.0) == pytest.approx(0.6)
    assert lexical_weight(0.6, 0.0) == 1.0
    # a third of the terms held: the keyword share is a third of what it was, relative
    assert lexical_weight(0.6, 1 / 3) == pytest.approx(0.6 / (0.6 + 0.4 / 3))
    assert lexical_weight(0.0, 0.0) == 0.0  # keyword only, nothing held: still keyword


def test_a_coverage_outside_zero_one_is_refused():
    with pytest.raises(ValueError, match="within 0 and 1"):
        lexical_weight(0.6, 1.5)


@settings(max_examples=200, deadline=None)
@given(weight=st.floats(0.0, 1.0), low=st.floats(0.0, 1.0), high=st.floats(0.0, 1.0))
def test_the_dense_share_never_rises_as_the_lexical_match_grows(weight, low, high):
    low, high = min(low, high), max(low, high)
    assert 0.0 <= lexical_weight(weight, high) <= lexical_weight(weight, low) <= 1.0
    assert lexical_weight(weight, high) >= weight - 1e-12  # never below the policy's


def test_linear_fusion_takes_the_query_weight_and_explains_it():
    fusion = plan_fusion(0.6, lexical=0.5)
    assert fusion.vector_weight == pytest.approx(lexical_weight(0.6, 0.5))
    assert fusion.own(0.5, 1.0) == pytest.approx(
        fusion.vector_weight * 0.5 + (1 - fusion.vector_weight) * 1.0
    )
    assert fusion.why() == {
        "vector_weight": round(lexical_weight(0.6, 0.5), 4),
        "lexical_coverage": 0.5,
    }


def test_a_lone_signal_ignores_the_strength():
    assert plan_fusion(1.0, lexical=0.0).vector_weight == 1.0
    assert plan_fusion(0.0, lexical=0.2).vector_weight == 0.0
    assert plan_fusion(0.6).why() == {}


# --- through the retrieve use case -----------------------------------------------------


def _ask(service, principal):
    for text in TEXTS:
        service.store(principal, StoreMemoryCommand(user_id="u1", content=text))
    command = RetrieveCommand(user_id="u1", query=QUESTION, time_decay=1.0, top_k=10)
    return service.retrieve(principal, command).results


@pytest.mark.parametrize("depth", [1, 3])
def test_retrieval_scales_the_keyword_share_by_the_best_hits_coverage(service, principal, depth):
    strong = rewire(service, dataclasses.replace(service.policy, lexical_strength=depth))
    results = _ask(strong, principal)
    terms = frozenset(tokenize(QUESTION))
    keyword_hits = sorted(
        (r for r in results if r.why["keyword_bm25"] > 0),
        key=lambda r: (-r.why["keyword_bm25"], r.memory_id),
    )[:depth]
    held = max(coverage(terms, r.content) for r in keyword_hits)
    assert 0.0 < held < 1.0  # only "avery" of avery, animal, look is held
    expected_weight = lexical_weight(service.policy.vector_weight, held)
    for result in results:
        why = result.why
        assert why["fusion"]["lexical_coverage"] == pytest.approx(held, abs=1e-4)
        assert why["fusion"]["vector_weight"] == pytest.approx(expected_weight, abs=1e-4)
        own = why.get("own_relevance", why["relevance"])
        w = expected_weight
        assert own == pytest.approx(
            w * why["similarity_scaled"] + (1 - w) * why["keyword"], abs=1e-3
        )


def test_on_by_default_over_three_hits_and_zero_turns_it_off(service, principal):
    assert service.policy.lexical_strength == 3
    assert all("lexical_coverage" in r.why["fusion"] for r in _ask(service, principal))
    off = rewire(service, dataclasses.replace(service.policy, lexical_strength=0))
    command = RetrieveCommand(user_id="u1", query=QUESTION, time_decay=1.0, top_k=10)
    for result in off.retrieve(principal, command).results:
        assert "fusion" not in result.why


def test_the_setting_is_read_and_checked():
    assert Settings.from_env({"HINDSIGHT_LEXICAL_STRENGTH": "3"}).lexical_strength == 3
    with pytest.raises(ConfigurationError, match="LEXICAL_STRENGTH"):
        Settings.from_env({"HINDSIGHT_LEXICAL_STRENGTH": "-1"})


def test_the_coverage_is_of_the_text_as_searched_with_the_turn_before(service, principal, clock):
    # the reply holds none of the question's words but "Avery"; the keyword search found it
    # by its turn-before context, which holds the rest: the match is full
    turns = [("Jordan", "Jordan: do you keep any pets at home?"), ("Avery", "Avery: yes, two")]
    for speaker, text in turns:
        command = StoreMemoryCommand(user_id="u1", content=text, speaker=speaker, session_id="s1")
        service.store(principal, command)
        clock.advance(minutes=1)
    strong = rewire(service, dataclasses.replace(service.policy, lexical_strength=1))
    command = RetrieveCommand(user_id="u1", query="Does Avery keep pets?", time_decay=1.0)
    results = strong.retrieve(principal, command).results
    assert {r.why["fusion"]["lexical_coverage"] for r in results} == {1.0}
    assert {r.why["fusion"]["vector_weight"] for r in results} == {strong.policy.vector_weight}


def test_the_text_as_searched_holds_the_context_and_the_store_time_keys():
    # a memory found by a store-time key ("diet" for "I don't eat spicy food") holds it
    episode = numbered_episode(
        1, "I never eat spicy food", context="what about dinner?", search_keys=["diet"]
    )
    text = searched_text(episode)
    terms = frozenset(tokenize("What is my diet at dinner?"))
    assert coverage(terms, text) == 1.0
    assert coverage(terms, episode.content) == 0.0
