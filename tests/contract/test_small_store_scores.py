"""Small stores with the real bundled model (issue #12): a user holding one memory. The
one that answers the question is probable (``why.probability``), an unrelated one not, in
English and Chinese.

Measured (docs/decisions.md, "The calibration refitted with small stores"): the relative
parts of the score say nothing here (the only memory is the best there is), so the
calibration was refitted with stores of 1-20 memories and leans on the cosine's margin
and the words held.
Chinese separates less (the model's cosines of two unrelated Chinese texts sit high), so
there the answering memory must only outscore every unrelated one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.service import MemoryService
from tests.contract.conftest import service_on
from tests.contract.test_relevance_contract import bundled_embedder
from tests.fakes import ScriptedReflector

PRINCIPAL = Principal(tenant_id="t1")


@pytest.fixture(params=["memory", "sqlite"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    with service_on(
        request.param, tmp_path, bundled_embedder(), ScriptedReflector(), Policy()
    ) as built:
        yield built


def lone_score(service: MemoryService, content: str, query: str) -> float:
    user_id = f"u{abs(hash((content, query))) % 10**8}"
    service.store(PRINCIPAL, StoreMemoryCommand(user_id=user_id, content=content))
    command = RetrieveCommand(user_id=user_id, query=query, min_score=0)
    results = service.retrieve(PRINCIPAL, command).results
    assert len(results) == 1
    return float(results[0].why["probability"])


def test_a_lone_english_memory_scores_high_when_it_answers_and_low_when_unrelated(
    service: MemoryService,
) -> None:
    answering = lone_score(service, "I am allergic to peanuts", "what can't I eat")
    unrelated = [
        lone_score(service, "My sister lives in Berlin", "what can't I eat"),
        lone_score(service, "I am allergic to peanuts", "what is the capital of France"),
    ]
    assert answering >= 0.2  # before the refit: 0.02-0.1
    assert max(unrelated) <= 0.1
    assert answering > 4 * max(unrelated)


def test_a_lone_chinese_memory_that_answers_outscores_unrelated_ones(
    service: MemoryService,
) -> None:
    answering = lone_score(service, "用户对花生过敏", "饮食禁忌")
    unrelated = [
        lone_score(service, "我的护照明年三月到期", "饮食禁忌"),
        lone_score(service, "我周末在学做面包", "饮食禁忌"),
        lone_score(service, "I am going to Beijing next week for a business trip", "饮食禁忌"),
    ]
    assert answering >= 0.3
    assert answering > max(unrelated)
