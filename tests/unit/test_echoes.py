"""A user's own statement outranks an assistant's echo of it (``core/retrieval/echoes.py``): where
the rule must fire and where it must not, as rates, in English and Chinese."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight.core.models import EpisodicMemory
from hindsight.core.retrieval.echoes import with_echo_factors
from hindsight.core.retrieval.ranking import Row
from hindsight.core.retrieval.score_parts import Parts

T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)


def turn(
    memory_id: str, content: str, speaker: str | None, minutes: float, session: str | None
) -> EpisodicMemory:
    moment = T0 + timedelta(minutes=minutes)
    return EpisodicMemory(
        memory_id=memory_id,
        tenant_id="t1",
        user_id="u1",
        content=content,
        speaker=speaker,
        session_id=session,
        occurred_at=moment,
        created_at=moment,
        updated_at=moment,
    )


def row(memory: EpisodicMemory, score: float) -> Row:
    parts = Parts(0.8, score, 0.0, 0.0, score, None, score)
    parts.score = score
    return Row(score, memory, parts)


# (statement, echo, query): the echo names what the user said, in the same conversation
FIRES = {
    "en": [
        (
            "I just moved to Lisbon last month",
            "Welcome to Lisbon! You will love it.",
            "where does the user live",
        ),
        ("I adopted a cat called Miso", "Miso sounds adorable!", "what is my cat called"),
        ("My new job at Initech starts Monday", "Congratulations on Initech!", "where do I work"),
        ("I drive a Tesla now", "Enjoy the Tesla!", "what car do I drive"),
    ],
    "zh": [
        ("我上个月刚搬到里斯本", "欢迎来到里斯本！你会喜欢的。", "用户住在哪里"),
        ("我养了一只猫叫米索", "米索听起来好可爱！", "我的猫叫什么"),
        ("我下周一去腾讯上班", "恭喜你加入腾讯！", "我在哪里上班"),
        ("我现在开特斯拉", "祝你开特斯拉开心！", "我开什么车"),
    ],
}


def _fires(statement: str, echo: str, query: str, **change: object) -> bool:
    session = change.get("session", "s1")
    said = turn("said", statement, change.get("speaker", "user"), 0, session)  # type: ignore[arg-type]
    echoed = turn(
        "echo",
        echo,
        "assistant",
        change.get("minutes", 1),  # type: ignore[arg-type]
        change.get("echo_session", session),  # type: ignore[arg-type]
    )
    noise = turn("noise", "the printer is broken again", "user", 5, session)  # type: ignore[arg-type]
    window = [row(echoed, 0.9), row(noise, 0.6), row(said, 0.5)]
    out = with_echo_factors(window, query)
    scores = [r.score for r in out]
    assert scores == sorted(scores, reverse=True)  # the order is the score
    assert next(r for r in out if r.memory.memory_id == "noise").score == 0.6  # never moved
    return out[0].memory.memory_id == "said"


def rate(cases: list[tuple[str, str, str]], **change: object) -> float:
    return sum(_fires(*case, **change) for case in cases) / len(cases)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_statement_takes_the_echos_score(language: str) -> None:
    assert rate(FIRES[language]) == 1.0
    assert rate(FIRES[language], session=None) == 1.0  # flat turns, within the hour


@pytest.mark.parametrize("language", ["en", "zh"])
def test_where_the_rule_must_not_fire(language: str) -> None:
    cases = FIRES[language]
    assert rate(cases, echo_session="s2") == 0.0  # another conversation
    assert rate(cases, session=None, minutes=24 * 60) == 0.0  # a day later, no session
    assert rate(cases, minutes=-5) == 0.0  # the assistant spoke first: no echo
    assert rate(cases, speaker="assistant") == 0.0  # two assistant turns
    assert rate(cases, speaker=None) == 0.0  # an agent's note, no speaker
    # the assistant's turn names nothing the user said
    unrelated = {"en": "Welcome! How can I help you today?", "zh": "你好！今天需要帮什么忙？"}
    assert rate([(s, unrelated[language], q) for s, _, q in cases]) == 0.0
    # the query asks for the assistant's words
    asks = {"en": "what did you say about it", "zh": "你当时说了什么"}
    assert rate([(s, e, asks[language]) for s, e, _ in cases]) == 0.0


def test_why_names_both_sides_and_the_factors() -> None:
    said = turn("said", "I just moved to Lisbon last month", "user", 0, "s1")
    echoed = turn("echo", "Welcome to Lisbon!", "assistant", 1, "s1")
    out = with_echo_factors([row(echoed, 0.8), row(said, 0.4)], "where does the user live")
    (top, first, first_parts), (low, second, second_parts) = out
    assert (first.memory_id, top, second.memory_id, low) == ("said", 0.8, "echo", 0.4)
    assert first_parts.why()["echo"]["factor"] == 2.0
    assert first_parts.why()["echo"]["echoed_by"] == "echo"
    assert second_parts.why()["echo"]["factor"] == 0.5
    assert second_parts.why()["echo"]["echoes"] == "said"
    assert first_parts.why()["score"] == 0.8
