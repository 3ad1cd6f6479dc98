"""Fusion of dense and keyword evidence (core/fusion.py): linear, reciprocal-rank, adaptive."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight.bootstrap import rewire
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import ConfigurationError
from hindsight.core.fusion import (
    CLARITY_DEPTH,
    Fusion,
    adaptive_weight,
    clarity,
    lexical_weight,
    plan_fusion,
    shared_ranks,
)
from hindsight.settings import Settings

TEXTS = [
    "The user is allergic to peanuts and carries an epipen",
    "Peanut butter cookies were served at the party",
    "I love hiking on weekends in the Alps",
    "We booked a cabin for the hiking trip",
    "My sister is allergic to cats",
    "nice weather today",
]


def test_equal_scores_share_the_better_rank():
    ranks = shared_ranks({"a": 0.9, "b": 0.5, "c": 0.5, "d": 0.1})
    assert ranks == {"a": 1, "b": 2, "c": 2, "d": 4}
    assert shared_ranks({}) == {}


def test_rrf_gives_one_to_the_first_of_both_lists_and_nothing_to_the_unfound():
    fusion = plan_fusion("rrf", 0.6, 60.0, {"a": 1.0, "b": 0.4}, {"a": 1.0, "c": 0.5, "b": 0.0})
    assert fusion.own("a", 1.0, 1.0) == pytest.approx(1.0)
    assert fusion.keyword_ranks == {"a": 1, "c": 2}  # b was not found by the keywords
    # b: second by similarity only; c: second by keyword only
    assert fusion.own("b", 0.4, 0.0) == pytest.approx(0.6 * 61 / 62)
    assert fusion.own("c", 0.0, 0.5) == pytest.approx(0.4 * 61 / 62)
    assert fusion.own("z", 0.0, 0.0) == 0.0
    assert fusion.why("b") == {
        "method": "rrf",
        "vector_weight": 0.6,
        "vector_rank": 2,
        "keyword_rank": None,
    }


def test_rrf_uses_ranks_only_so_a_spread_out_signal_cannot_swamp_the_other():
    # by scaled scores the keyword gap is huge and the dense gap tiny; ranks are alike
    sims, keywords = {"a": 1.0, "b": 0.99}, {"b": 1.0, "a": 0.01}
    linear = plan_fusion("linear", 0.5, 60.0, sims, keywords)
    assert linear.own("b", 0.99, 1.0) > linear.own("a", 1.0, 0.01) + 0.4
    rrf = plan_fusion("rrf", 0.5, 60.0, sims, keywords)
    assert rrf.own("a", 1.0, 0.01) == pytest.approx(rrf.own("b", 0.99, 1.0))


def test_linear_fusion_is_the_weighted_sum_and_explains_nothing_more():
    fusion = plan_fusion("linear", 0.6, 60.0, {"a": 0.5}, {"a": 0.25})
    assert fusion.own("a", 0.5, 0.25) == pytest.approx(0.6 * 0.5 + 0.4 * 0.25)
    assert fusion.why("a") == {}


def test_clarity_is_how_far_the_best_stands_out():
    assert clarity([]) == 0.0
    assert clarity([1.0]) == 1.0  # a lone hit stands out from nothing
    assert clarity([1.0] * (CLARITY_DEPTH + 1)) == 0.0  # all alike: tells nothing
    assert clarity([1.0, 0.5, 0.5]) == pytest.approx(1.0 - 1.0 / CLARITY_DEPTH)


def test_adaptive_weight_leans_to_the_clearer_signal():
    assert adaptive_weight(0.6, 0.5, 0.5) == pytest.approx(0.6)
    assert adaptive_weight(0.6, 0.0, 0.0) == 0.6  # neither tells: the policy's weight
    assert adaptive_weight(0.6, 0.9, 0.1) > 0.6
    assert adaptive_weight(0.6, 0.1, 0.9) < 0.6
    flat = {f"m{i}": 1.0 - i / 100 for i in range(20)}  # dense: everything alike
    peaked = {"m3": 1.0, "m4": 0.1}  # keywords: one memory picked out
    fusion = plan_fusion("adaptive", 0.6, 60.0, flat, peaked)
    assert fusion.vector_weight < 0.2
    assert fusion.why("m3") == {
        "method": "adaptive",
        "vector_weight": round(fusion.vector_weight, 4),
    }


def test_adaptive_keeps_a_lone_signal_alone():
    # no keyword hits: the caller passes vector_weight 1; adaptive must not change it
    assert plan_fusion("adaptive", 1.0, 60.0, {"a": 1.0}, {"a": 0.0}).vector_weight == 1.0
    assert plan_fusion("adaptive", 0.0, 60.0, {}, {"a": 1.0}).vector_weight == 0.0


def test_an_unknown_fusion_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="linear, rrf, adaptive"):
        plan_fusion("borda", 0.6, 60.0, {}, {})


@settings(max_examples=200, deadline=None)
@given(
    weight=st.floats(0.0, 1.0),
    k=st.floats(1.0, 200.0),
    vector_rank=st.one_of(st.none(), st.integers(1, 300)),
    keyword_rank=st.one_of(st.none(), st.integers(1, 300)),
)
def test_rrf_is_in_zero_one_and_never_rises_as_a_rank_worsens(weight, k, vector_rank, keyword_rank):
    def own(v: int | None, kw: int | None) -> float:
        fusion = Fusion(
            "rrf",
            weight,
            k,
            {} if v is None else {"m": v},
            {} if kw is None else {"m": kw},
        )
        return fusion.own("m", 0.0, 0.0)

    value = own(vector_rank, keyword_rank)
    assert 0.0 <= value <= 1.0 + 1e-12
    if vector_rank is not None:
        assert own(vector_rank + 1, keyword_rank) <= value
        assert own(None, keyword_rank) <= value
    if keyword_rank is not None:
        assert own(vector_rank, keyword_rank + 1) <= value


@settings(max_examples=200, deadline=None)
@given(
    weight=st.floats(0.0, 1.0),
    vector=st.lists(st.floats(0.0, 1.0), max_size=30),
    keyword=st.lists(st.floats(0.0, 1.0), max_size=30),
)
def test_the_adaptive_weight_is_a_share(weight, vector, keyword):
    sims = {f"v{i}": s for i, s in enumerate(vector)}
    keywords = {f"k{i}": s for i, s in enumerate(keyword)}
    fusion = plan_fusion("adaptive", weight, 60.0, sims, keywords)
    assert 0.0 <= fusion.vector_weight <= 1.0


# --- through the retrieve use case -----------------------------------------------------


def _fill(service, principal):
    for text in TEXTS:
        service.store(principal, StoreMemoryCommand(user_id="u1", content=text))


def _ask(service, principal, query="allergic to peanuts, epipen"):
    command = RetrieveCommand(user_id="u1", query=query, time_decay=1.0, top_k=10)
    return service.retrieve(principal, command).results


def test_rrf_retrieval_explains_its_ranks_and_orders_by_them(service, principal):
    _fill(service, principal)
    rrf = rewire(service, dataclasses.replace(service.policy, fusion="rrf"))
    results = _ask(rrf, principal)
    assert results[0].content == TEXTS[0]
    k = rrf.policy.rrf_k
    for result in results:
        fusion = result.why["fusion"]
        assert fusion["method"] == "rrf"
        w = fusion["vector_weight"]
        expected = 0.0
        if fusion["vector_rank"] is not None:
            expected += w / (k + fusion["vector_rank"])
        if fusion["keyword_rank"] is not None:
            expected += (1 - w) / (k + fusion["keyword_rank"])
        assert result.why["relevance"] == pytest.approx(expected * (k + 1), abs=1e-4)
    relevances = [r.why["relevance"] for r in results]
    assert relevances == sorted(relevances, reverse=True)  # same age: relevance orders


def test_the_default_is_linear_with_the_share_the_lexical_strength_sets(service, principal):
    _fill(service, principal)
    assert service.policy.fusion == "linear"
    for result in _ask(service, principal):
        why = result.why
        assert why["fusion"]["method"] == "linear"
        w = lexical_weight(service.policy.vector_weight, why["fusion"]["lexical_coverage"])
        assert why["fusion"]["vector_weight"] == pytest.approx(w, abs=1e-4)
        expected = w * why["similarity_scaled"] + (1 - w) * why["keyword"]
        assert why["relevance"] == pytest.approx(expected, abs=1e-3)


def test_without_the_lexical_strength_linear_is_the_plain_weighted_sum(service, principal):
    _fill(service, principal)
    plain = rewire(service, dataclasses.replace(service.policy, lexical_strength=0))
    for result in _ask(plain, principal):
        why = result.why
        assert "fusion" not in why
        w = plain.policy.vector_weight
        expected = w * why["similarity_scaled"] + (1 - w) * why["keyword"]
        assert why["relevance"] == pytest.approx(expected, abs=1e-3)


def test_adaptive_retrieval_shows_the_query_weight(service, principal):
    _fill(service, principal)
    adaptive = rewire(service, dataclasses.replace(service.policy, fusion="adaptive"))
    results = _ask(adaptive, principal)
    weights = {r.why["fusion"]["vector_weight"] for r in results}
    assert len(weights) == 1  # one share per query
    w = weights.pop()
    assert 0.0 <= w <= 1.0
    for result in results:
        why = result.why
        expected = w * why["similarity_scaled"] + (1 - w) * why["keyword"]
        assert why["relevance"] == pytest.approx(expected, abs=1e-3)


def test_the_fusion_setting_is_read_and_checked():
    assert Settings.from_env({"HINDSIGHT_FUSION": "rrf", "HINDSIGHT_RRF_K": "20"}).rrf_k == 20
    with pytest.raises(ConfigurationError, match="FUSION"):
        Settings.from_env({"HINDSIGHT_FUSION": "borda"})
