"""States of one attribute as a score factor (``core/retrieval/state_factor.py``): the newest state
takes its group's best score, an older one a lower one, nothing else moves; in English
and Chinese, and where it must not fire (no update, a question about the past)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hindsight.core.retrieval.ranking import Row
from hindsight.core.retrieval.score_parts import Parts
from hindsight.core.retrieval.state_factor import NEWEST, UPDATED, with_state_factors
from hindsight.core.retrieval.states import order_states
from tests.unit.test_updates_states import T0, episode, vector

NOW = T0 + timedelta(days=160)
CASES = {
    "en": ("I live in Beijing, near the river.", "I moved last month, I live in Shanghai now."),
    "zh": ("我住在北京，离河边很近。", "我上个月搬家了，现在住在上海。"),
}
NOT_UPDATES = {
    "en": ("I live in Beijing, near the river.", "My sister lives in Shanghai now."),
    "zh": ("我住在北京，离河边很近。", "我妹妹现在住在上海。"),
}


def row(memory, score: float) -> Row:  # type: ignore[no-untyped-def]
    parts = Parts(0.8, score, 0.0, 0.0, score, None, score)
    parts.fused = parts.score = score
    return Row(score, memory, parts)


def rescored(older: str, newer: str, reorder: bool = True) -> list[Row]:
    old = episode("old", older, 0, speaker="user")
    noise = episode("noise", "We had ramen downtown, the broth was great.", 30, speaker="user")
    new = episode("new", newer, 150, speaker="user")
    vectors = {"old": vector(1, 0.5, 0), "new": vector(1, 0, 0.3), "noise": vector(0, 1, 1)}
    window = [row(old, 0.9), row(noise, 0.7), row(new, 0.4)]
    states = order_states([r.memory for r in window], vectors, NOW, reorder)
    memories = {r.memory.memory_id: r.memory for r in window}
    updated_by = {o: memories[n] for o, n in states.updated_by.items()}
    return with_state_factors(window, states.order, updated_by)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_newest_state_takes_the_groups_best_score(language: str) -> None:
    out = rescored(*CASES[language])
    assert [(r.memory.memory_id, r.score) for r in out] == [
        ("new", 0.9),
        ("noise", 0.7),
        ("old", 0.4),
    ]
    new, noise, old = (r.parts.why() for r in out)
    assert new["state"] == {"factor": 2.25, "reason": NEWEST}
    assert old["state"]["factor"] == pytest.approx(0.4 / 0.9, abs=1e-6)
    assert old["state"]["reason"] == UPDATED and old["state"]["updated_by"] == "new"
    assert "state" not in noise
    assert new["score"] == new["fused_score"] * new["state"]["factor"] == 0.9


@pytest.mark.parametrize("language", ["en", "zh"])
def test_where_the_state_factor_must_not_fire(language: str) -> None:
    rates = []
    for older, newer, reorder in (
        (*NOT_UPDATES[language], True),  # another person's state: no update
        (*CASES[language], False),  # a question about the past keeps relevance order
    ):
        out = rescored(older, newer, reorder)
        untouched = [r.memory.memory_id for r in out] == ["old", "noise", "new"]
        rates.append(untouched and all(r.parts.state is None for r in out))
    assert sum(rates) / len(rates) == 1.0
