"""The order is the score, with the real bundled embedding model, on every backend pair:
an approved fact comes first only when it answers, and the user's own statement outranks
an assistant's echo of it. English and Chinese; each result list is sorted by its score.

The field reports: after a fact about a Beijing business trip was approved, "what can't
I eat" put it above "I am allergic to peanuts" (every fact at all relevant was ranked
ahead of every episode); "where does the user live" put the assistant's "Welcome to
Lisbon!" above the user's "I just moved to Lisbon last month".
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight.core.commands import ReflectCommand, RetrieveCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.service import MemoryService
from tests.contract.conftest import SERVICE_BACKENDS, service_on
from tests.contract.test_relevance_contract import bundled_embedder
from tests.fakes import ScriptedReflector

PRINCIPAL = Principal(tenant_id="t1")
NOW = datetime.now(UTC)


@pytest.fixture(params=SERVICE_BACKENDS)
def built(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple]:
    reflector = ScriptedReflector()
    with service_on(request.param, tmp_path, bundled_embedder(), reflector, Policy()) as service:
        yield service, reflector


def put(service: MemoryService, user: str, content: str, minutes_ago: int, **fields) -> str:  # type: ignore[no-untyped-def]
    command = StoreMemoryCommand(
        user_id=user, content=content, occurred_at=NOW - timedelta(minutes=minutes_ago), **fields
    )
    return service.store(PRINCIPAL, command).memory_id


def ranked(service: MemoryService, user: str, query: str) -> list:
    results = service.retrieve(PRINCIPAL, RetrieveCommand(user_id=user, query=query)).results
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True), scores
    return results


FACT_CASES = {
    "en": (
        ["I am allergic to peanuts", "I love hiking", "nice weather today"],
        "Next month I fly to Beijing for a business trip",
        ("Beijing", "The user is going on a business trip to Beijing next month"),
        "what can't I eat",
        "I am allergic to peanuts",
    ),
    "zh": (
        ["我对花生过敏", "我喜欢爬山", "今天天气不错"],
        "下个月我要去北京出差",
        ("北京", "用户下个月要去北京出差"),
        "我不能吃什么",
        "我对花生过敏",
    ),
}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_approved_fact_does_not_outrank_the_episode_that_answers(built, language) -> None:  # type: ignore[no-untyped-def]
    service, reflector = built
    episodes, trip, (trigger, fact), query, answer = FACT_CASES[language]
    user = f"eater-{language}"
    for n, content in enumerate([*episodes, trip]):
        put(service, user, content, 60 - n)
    reflector.when(trigger, fact, confidence="high", topic="trip")
    for created in service.reflect(PRINCIPAL, ReflectCommand(user_id=user)).created:
        service.approve(PRINCIPAL, created["memory_id"])
    results = ranked(service, user, query)
    assert results[0].content == answer
    fact_result = next(r for r in results if r.content == fact)
    assert fact_result.why["kind_boost"] > 1.0  # boosted, and still far below
    # the fact answers its own question first
    about = "business trip to Beijing" if language == "en" else "北京出差"
    assert ranked(service, user, about)[0].content == fact


ECHO_CASES = {
    "en": (
        "I just moved to Lisbon last month",
        "Welcome to Lisbon! You will love the pastéis de nata.",
        "where does the user live",
    ),
    "zh": ("我上个月刚搬到里斯本", "欢迎来到里斯本！你会爱上这里的蛋挞。", "用户住在哪里"),
}


@pytest.mark.parametrize("session", [None, "s1"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_users_statement_outranks_the_assistants_echo(built, language, session) -> None:  # type: ignore[no-untyped-def]
    service, _ = built
    statement, echo, query = ECHO_CASES[language]
    user = f"mover-{language}-{session}"
    put(service, user, statement, 10, speaker="user", session_id=session)
    put(service, user, echo, 9, speaker="assistant", session_id=session)
    results = ranked(service, user, query)
    assert [r.content for r in results] == [statement, echo]
    # asked for the assistant's words, the echo keeps its place by its own score
    asked = "what did you say about Lisbon" if language == "en" else "你当时说了里斯本什么"
    assert all("echo" not in r.why for r in ranked(service, user, asked))
