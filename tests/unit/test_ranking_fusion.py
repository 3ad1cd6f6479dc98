"""Fusion of dense and keyword evidence (core/retrieval/fusion.py): the weighted sum of the
scaled scores."""

from __future__ import annotations

import dataclasses

import pytest

from hindsight.bootstrap import rewire
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.retrieval.fusion import lexical_weight, plan_fusion

TEXTS = [
    "The user is allergic to peanuts and carries an epipen",
    "Peanut butter cookies were served at the party",
    "I love hiking on weekends in the Alps",
    "We booked a cabin for the hiking trip",
    "My sister is allergic to cats",
    "nice weather today",
]


def test_linear_fusion_is_the_weighted_sum_and_explains_nothing_more():
    fusion = plan_fusion(0.6)
    assert fusion.own(0.5, 0.25) == pytest.approx(0.6 * 0.5 + 0.4 * 0.25)
    assert fusion.why() == {}


# --- through the retrieve use case -----------------------------------------------------


def _fill(service, principal):
    for text in TEXTS:
        service.store(principal, StoreMemoryCommand(user_id="u1", content=text))


def _ask(service, principal, query="allergic to peanuts, epipen"):
    command = RetrieveCommand(user_id="u1", query=query, time_decay=1.0, top_k=10)
    return service.retrieve(principal, command).results


def test_the_default_is_linear_with_the_share_the_lexical_strength_sets(service, principal):
    _fill(service, principal)
    for result in _ask(service, principal):
        why = result.why
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
