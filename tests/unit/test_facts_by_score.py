"""Facts first only when they answer: an approved fact outranks an episode by its kind's
boost on the score, so it comes first when it is about as relevant to the query as the
best episode, and never when it is far less relevant (no tier puts every fact first).

Each rule is measured as a rate over cases in English and Chinese: where it must fire
(the fact restates the episode that answers) and where it must not (the fact is about
something else the query barely touches).
"""

from __future__ import annotations

import pytest

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.commands import ReflectCommand, RetrieveCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from tests.fakes import FixedClock, HashingEmbedder, ScriptedReflector, SequentialIds

PRINCIPAL = Principal(tenant_id="acme")

# (episodes, (trigger, fact), query): the fact restates the answering episode
ANSWERING = {
    "en": [
        (["tea with milk", "coffee black"], ("milk", "Likes tea with milk"), "tea with milk"),
        (
            ["I am allergic to peanuts", "we walked by the river"],
            ("peanuts", "The user is allergic to peanuts"),
            "allergic to peanuts",
        ),
        (
            ["I take guitar lessons", "the printer is broken"],
            ("guitar", "The user takes guitar lessons"),
            "guitar lessons",
        ),
        (
            ["my sister lives in Berlin", "ramen for lunch"],
            ("Berlin", "The user's sister lives in Berlin"),
            "sister lives in Berlin",
        ),
    ],
    "zh": [
        (["我对花生过敏", "今天天气不错"], ("花生", "用户对花生过敏"), "花生过敏"),
        (["我在上吉他课", "打印机坏了"], ("吉他", "用户在上吉他课"), "吉他课"),
        (["我妹妹住在柏林", "午饭吃了拉面"], ("柏林", "用户的妹妹住在柏林"), "妹妹住在柏林"),
        (["我喜欢喝奶茶", "咖啡不加糖"], ("奶茶", "用户喜欢喝奶茶"), "喜欢喝奶茶"),
    ],
}
# the fact is about something else and shares a word with the query: the best episode
# must stay first
OFF_TOPIC = {
    "en": [
        (
            ["I am allergic to peanuts", "we walked by the river"],
            ("river", "The user brought back peanuts from a business trip to Beijing"),
            "allergic to peanuts",
        ),
        (
            ["I take guitar lessons", "the printer is broken"],
            ("printer", "The user's son has piano lessons"),
            "guitar lessons",
        ),
        (
            ["my sister lives in Berlin", "ramen for lunch"],
            ("ramen", "The user flew to Berlin for a conference"),
            "sister lives in Berlin",
        ),
        (
            ["tea with milk", "the dentist on Monday"],
            ("dentist", "The user buys milk at the corner shop"),
            "tea with milk",
        ),
    ],
    "zh": [
        (["我对花生过敏", "下周去北京出差"], ("北京", "用户去北京出差时买了花生"), "花生过敏"),
        (["我在上吉他课", "打印机坏了"], ("打印机", "用户的儿子在上钢琴课"), "吉他课"),
        (["我妹妹住在柏林", "午饭吃了拉面"], ("拉面", "用户去柏林开会"), "妹妹住在柏林"),
        (["我喜欢喝奶茶", "周一去看牙医"], ("牙医", "用户在奶茶店打工"), "喜欢喝奶茶"),
    ],
}


def _first_kind(episodes: list[str], fact: tuple[str, str], query: str) -> tuple[str, list]:
    reflector = ScriptedReflector()
    ports = local_ports(
        InMemoryRecordStore(),
        InMemorySearchIndex(),
        HashingEmbedder(),
        reflector,
        clock=FixedClock(),
        ids=SequentialIds(),
    )
    service = assemble(ports, Policy())
    for content in episodes:
        service.store(PRINCIPAL, StoreMemoryCommand(user_id="u1", content=content))
    reflector.when(fact[0], fact[1], confidence="high", topic=fact[0])
    for created in service.reflect(PRINCIPAL, ReflectCommand(user_id="u1")).created:
        service.approve(PRINCIPAL, created["memory_id"])
    results = service.retrieve(PRINCIPAL, RetrieveCommand(user_id="u1", query=query)).results
    facts = [r for r in results if r.kind == "semantic"]
    assert facts and facts[0].why["relevance"] > 0.0, "the fact touches the query"
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)
    return results[0].kind, results


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_fact_about_as_relevant_as_the_best_episode_comes_first(language: str) -> None:
    firsts = [_first_kind(*case)[0] for case in ANSWERING[language]]
    assert firsts.count("semantic") / len(firsts) == 1.0, firsts


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_fact_far_less_relevant_than_the_best_episode_never_comes_first(language: str) -> None:
    firsts = [_first_kind(*case)[0] for case in OFF_TOPIC[language]]
    assert firsts.count("semantic") / len(firsts) == 0.0, firsts


def test_the_fact_comes_first_by_its_score_and_why_names_the_boost() -> None:
    kind, results = _first_kind(*ANSWERING["en"][0])
    fact = results[0]
    assert kind == "semantic" and fact.score > results[1].score
    assert fact.why["kind_boost"] == Policy().semantic_boost > 1.0
    assert fact.score == pytest.approx(
        fact.why["relevance"] * fact.why["kind_boost"] * fact.why["confidence_weight"], rel=1e-3
    )
