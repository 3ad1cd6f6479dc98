"""The calibrated probability (``why["probability"]``): its logistic math, its inputs in
``why``, and ``min_score``, which compares it.

The unit tier's hashing embedder is not the model the calibration was fitted for, so the
scores here are small and the server's default ``min_score`` does not apply unless the
embedder claims the calibrated model's name; the bundled model's behaviour is in
tests/contract/test_relevance_contract.py.
"""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
from pydantic import ValidationError

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.commands import ContextCommand, RetrieveCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.policy import CALIBRATION, FEATURES, Calibration, Policy
from hindsight.core.retrieval.ranking import Parts, coverage
from hindsight.core.service import MemoryService
from hindsight.core.text import tokenize
from tests.fakes import FixedClock, HashingEmbedder, ScriptedReflector, SequentialIds
from tests.unit.test_retrieve_reads_few_records import WORDS, page
from tests.unit.test_retrieve_reads_few_records import services as services

PRINCIPAL = Principal(tenant_id="acme")


def calibration(**weights: float) -> Calibration:
    values = dict.fromkeys(FEATURES, 0.0)
    values.update(weights)
    intercept = values.pop("intercept", 0.0)
    return Calibration(model="m", intercept=intercept, **values)


def test_the_probability_is_the_logistic_of_the_weighted_sum() -> None:
    c = calibration(intercept=-1.0, similarity_margin=2.0, keyword_coverage=0.5)
    features = {"similarity_margin": 0.8, "keyword_coverage": 1.0}
    assert c.logit(features) == pytest.approx(-1.0 + 1.6 + 0.5)
    assert c.probability(features) == pytest.approx(1 / (1 + math.exp(-1.1)))
    assert c.probability({}) == pytest.approx(1 / (1 + math.e))


def test_the_probability_stays_in_0_1_and_grows_with_a_positive_weight() -> None:
    c = calibration(similarity_margin=1e6)
    assert c.probability({"similarity_margin": 1.0}) == pytest.approx(1.0)
    assert c.probability({"similarity_margin": -1.0}) == pytest.approx(0.0, abs=1e-20)
    floor = {"similarity_floor": 0.8}
    lower = CALIBRATION.probability({**floor, "similarity_margin": 0.0})
    assert 0.0 < lower < CALIBRATION.probability({**floor, "similarity_margin": 0.05}) < 1.0


def test_every_feature_of_parts_has_a_weight_and_the_reverse() -> None:
    parts = Parts(0.8, 1.0, 0.5, 3.2, 0.8, None, 0.8)
    assert set(parts.features()) == set(FEATURES)
    assert {f.name for f in dataclasses.fields(Calibration)} == {"model", "intercept", *FEATURES}


def test_min_score_is_validated_in_the_request() -> None:
    for bad in (-0.1, 1.5):
        with pytest.raises(ValidationError, match="min_score"):
            RetrieveCommand(user_id="u1", query="q", min_score=bad)
        with pytest.raises(ValidationError, match="min_score"):
            ContextCommand(user_id="u1", session_id="s", min_score=bad)
    assert RetrieveCommand(user_id="u1", query="q", min_score=0).min_score == 0.0


def store(service: MemoryService, content: str) -> str:
    return service.store(PRINCIPAL, StoreMemoryCommand(user_id="u1", content=content)).memory_id


def ask(service: MemoryService, query: str, **options: object):  # type: ignore[no-untyped-def]
    command = RetrieveCommand(user_id="u1", query=query, **options)  # type: ignore[arg-type]
    return service.retrieve(PRINCIPAL, command)


def test_the_score_orders_and_why_holds_the_probability_and_its_inputs(service) -> None:  # type: ignore[no-untyped-def]
    store(service, "a peanut allergy since childhood")
    store(service, "my sister lives in Berlin")
    results = ask(service, "peanut allergy", min_score=0).results
    assert len(results) == 2
    assert results[0].score >= results[1].score
    for result in results:
        why = result.why
        assert 0.0 <= why["probability"] < 1.0
        assert result.score == why["score"] == why["fused_score"]
        inputs = {k: v for k, v in why["calibration"].items() if k != "logit"}
        assert set(inputs) == set(FEATURES)
        assert why["calibration"]["logit"] == pytest.approx(CALIBRATION.logit(inputs), abs=1e-2)
        assert "fused_score" in why
    # the memory holding the query's words holds all of them
    assert results[0].why["calibration"]["keyword_coverage"] == 1.0


def test_a_lone_memory_is_the_best_candidate_not_the_worst(service) -> None:  # type: ignore[no-untyped-def]
    # the field report: the only memory scaled to 0 when its cosine sat under the floor
    store(service, "I am allergic to peanuts")
    why = ask(service, "what can't I eat", min_score=0).results[0].why
    assert why["similarity_scaled"] == 1.0
    assert why["relevance"] > 0.0


def test_min_score_leaves_out_the_less_probable(service) -> None:  # type: ignore[no-untyped-def]
    for n, words in enumerate(["peanut allergy", "peanut butter", "tennis club", "piano"]):
        store(service, f"{words} {n}")
    everything = ask(service, "peanut allergy", min_score=0).results
    probabilities = sorted((r.why["probability"] for r in everything), reverse=True)
    assert len(probabilities) == 4 and probabilities[0] > probabilities[-1]
    cut = probabilities[1]
    kept = ask(service, "peanut allergy", min_score=cut)
    assert {r.memory_id for r in kept.results} == {
        r.memory_id for r in everything if r.why["probability"] >= cut
    }
    assert kept.has_more is False
    nothing = ask(service, "peanut allergy", min_score=1)
    assert nothing.results == [] and nothing.has_more is False


def test_the_default_applies_only_to_the_model_it_was_fitted_for() -> None:
    def built(model_name: str, min_score: float) -> MemoryService:
        ports = local_ports(
            InMemoryRecordStore(),
            InMemorySearchIndex(),
            HashingEmbedder(model_name=model_name),
            ScriptedReflector(),
            clock=FixedClock(),
            ids=SequentialIds(),
        )
        service = assemble(ports, Policy(min_score=min_score))
        store(service, "piano lessons on Tuesday")
        return service

    for model, expected in (("test-hashing-64", 1), (CALIBRATION.model, 0)):
        score = ask(built(model, 0.0), "piano lessons").results[0].why["probability"]
        assert score < 0.999
        service = built(model, score + 0.001)  # a default just above the memory's score
        # cut only where the default applies
        assert len(ask(service, "piano lessons").results) == expected
        assert len(ask(service, "piano lessons", min_score=0).results) == 1


@pytest.mark.parametrize("seed", range(12))
def test_lazy_reading_with_min_score_equals_reading_everything(seed, request) -> None:  # type: ignore[no-untyped-def]
    lazy, eager, _records = request.getfixturevalue("services")
    rng = random.Random(100 + seed)
    query = " ".join(rng.sample(WORDS, rng.randint(1, 3)))
    base = RetrieveCommand(user_id="u1", query=query, top_k=20, min_score=0)
    found = lazy.retrieve(PRINCIPAL, base).results
    scores = sorted((r.why["probability"] for r in found), reverse=True)
    least = scores[min(len(scores) - 1, rng.randrange(1, 20))]
    command = base.model_copy(update={"min_score": least, "top_k": rng.choice([1, 5, 10])})
    lazy_cursor = eager_cursor = None
    for _ in range(4):
        lazy_rows, lazy_more, lazy_cursor = page(
            lazy, command.model_copy(update={"cursor": lazy_cursor})
        )
        eager_rows, eager_more, eager_cursor = page(
            eager, command.model_copy(update={"cursor": eager_cursor})
        )
        assert lazy_rows == eager_rows
        assert lazy_more == eager_more
        assert all(row[2]["probability"] >= least for row in lazy_rows)
        if not lazy_more:
            break


def test_coverage_counts_the_query_terms_a_memory_holds_short_or_long() -> None:
    terms = frozenset(tokenize("hiking in the cities 花生过敏"))
    short = "We went hiking around many cities. 用户对花生过敏"
    assert coverage(terms, short) == 1.0
    assert coverage(terms, "We went hiking.") == pytest.approx(1 / len(terms))
    # a long memory is searched as text, with the same answer
    padding = "Nothing to see in this line of the log. " * 100
    assert len(padding) > 2_000
    assert coverage(terms, padding + short) == 1.0
    assert coverage(terms, padding + "We went hiking.") == pytest.approx(1 / len(terms))
    assert coverage(frozenset(), short) == 0.0
