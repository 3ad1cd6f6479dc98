"""The refitted calibration: monotone in the evidence, computed only where it is needed,
and a ``min_score`` that keeps states of one thing together (``core/retrieval/score_cut.py``)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.models import (
    Confidence,
    EpisodicMemory,
    FactCategory,
    FactStatus,
    Principal,
    SemanticMemory,
    StoredVector,
)
from hindsight.core.policy import CALIBRATION, MONOTONE, QUERY_LEVEL, Calibration
from hindsight.core.retrieval.ranking import Parts, Row, mostly_chinese
from hindsight.core.retrieval.score_cut import with_state_groups
from hindsight.core.service import MemoryService
from tests.unit.test_calibrated_score import calibration

T0 = datetime(2026, 1, 10, 9, tzinfo=UTC)
PRINCIPAL = Principal(tenant_id="acme")

# --- monotone in the evidence ---------------------------------------------------------------


def test_no_weight_of_more_evidence_is_negative_and_a_negative_one_is_refused() -> None:
    assert all(CALIBRATION.weights[name] >= 0.0 for name in MONOTONE)
    assert set(MONOTONE) | QUERY_LEVEL | {"fact"} == set(CALIBRATION.weights)
    for name in MONOTONE:
        with pytest.raises(ValueError, match=name):
            calibration(**{name: -0.5})
    calibration(similarity_floor=-3.0, few=-1.0)  # query-level: either sign


def parts(similarity: float, keyword: float, session: float, factor: float, query: dict) -> Parts:
    """A candidate of one query (``query``: its floor, candidate count, language)."""
    floor, few, chinese = query["floor"], query["few"], query["chinese"]
    scaled = max(0.0, min(1.0, (similarity - floor) / 0.2))
    own = 0.6 * scaled + 0.4 * keyword
    relevance = 0.5 * own + 0.5 * max(own, session)
    part = Parts(similarity, scaled, keyword, keyword * 7.0, own, max(own, session), relevance)
    part.floor, part.margin, part.few, part.chinese = floor, similarity - floor, few, chinese
    part.coverage = keyword  # a memory holding more of the query's terms matches it more
    part.log_factor = math.log(factor)
    part.fused = relevance * factor
    return part


evidence = st.tuples(
    st.floats(0.6, 0.95), st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.5, 2.0)
)
queries = st.fixed_dictionaries(
    {"floor": st.floats(0.7, 0.9), "few": st.floats(0.0, 1.0), "chinese": st.booleans()}
)


@settings(max_examples=300, deadline=None)
@given(queries, evidence, evidence)
def test_a_candidate_with_more_of_every_evidence_is_at_least_as_probable(query, a, b) -> None:
    # the field report: the worst of a few candidates (fused ~0) scored ~0.9, above the best
    weaker = parts(*(min(x, y) for x, y in zip(a, b, strict=True)), query)
    stronger = parts(*(max(x, y) for x, y in zip(a, b, strict=True)), query)
    assert stronger.fused >= weaker.fused
    low = CALIBRATION.probability(weaker.features())
    high = CALIBRATION.probability(stronger.features())
    assert high >= low - 1e-12


@settings(max_examples=200, deadline=None)
@given(queries, evidence, st.floats(0.0, 3.0))
def test_the_probability_never_falls_as_the_fused_score_rises(query, a, more) -> None:
    part = parts(*a, query)
    features = part.features()
    before = CALIBRATION.probability(features)
    assert CALIBRATION.probability({**features, "fused": features["fused"] + more}) >= before
    assert features["fused"] == part.fused  # no floor under the fused score any more


def test_mostly_chinese_reads_the_query_s_letters() -> None:
    assert mostly_chinese("饮食禁忌")
    assert mostly_chinese("我在Google公司上班吗")
    assert not mostly_chinese("what can't I eat")
    assert not mostly_chinese("Caroline 的 painting from last week")
    assert not mostly_chinese("?!")


# --- the probability is computed for what is shown ------------------------------------------


def test_without_a_min_score_only_the_results_shown_are_calibrated(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(30):
        service.store(
            PRINCIPAL, StoreMemoryCommand(user_id="u1", content=f"piano lesson number {n} notes")
        )
    calls: list[int] = []
    logit = Calibration.logit

    def counting(self: Calibration, features):  # type: ignore[no-untyped-def]
        calls.append(1)
        return logit(self, features)

    monkeypatch.setattr(Calibration, "logit", counting)
    command = RetrieveCommand(user_id="u1", query="piano lesson notes", top_k=3, min_score=0)
    results = service.retrieve(PRINCIPAL, command).results
    assert len(results) == 3 and len(calls) == 3
    assert all(r.why["probability"] > 0.0 for r in results)
    assert all(r.score == r.why["score"] == r.why["fused_score"] for r in results)
    calls.clear()
    cut = service.retrieve(PRINCIPAL, command.model_copy(update={"min_score": 1e-6})).results
    assert [r.memory_id for r in cut] == [r.memory_id for r in results]
    assert [r.score for r in cut] == [r.score for r in results]
    assert len(calls) > 3  # a cut calibrates every candidate it reads


# --- min_score keeps states of one thing together -------------------------------------------


def episode(memory_id: str, content: str, days: float) -> EpisodicMemory:
    moment = T0 + timedelta(days=days)
    return EpisodicMemory(
        memory_id=memory_id,
        tenant_id="t1",
        user_id="u1",
        content=content,
        occurred_at=moment,
        created_at=moment,
        updated_at=moment,
    )


def fact(
    memory_id: str,
    content: str,
    days: float,
    status: FactStatus = FactStatus.APPROVED,
    **links: object,
) -> SemanticMemory:
    moment = T0 + timedelta(days=days)
    return SemanticMemory(
        memory_id=memory_id,
        tenant_id="t1",
        user_id="u1",
        content=content,
        occurred_at=moment,
        created_at=moment,
        updated_at=moment,
        category=FactCategory.FACT,
        confidence=Confidence.HIGH,
        status=status,
        **links,  # type: ignore[arg-type]
    )


def row(memory: EpisodicMemory | SemanticMemory, score: float) -> Row:
    return Row(score, memory, Parts(0.8, 0.5, 0.0, 0.0, 0.5, None, 0.5))


def vectors(table: dict[str, tuple[float, ...]]):  # type: ignore[no-untyped-def]
    def read(ids: list[str]) -> dict[str, StoredVector]:
        out = {}
        for memory_id in ids:
            raw = np.asarray(table[memory_id], dtype=np.float32)
            out[memory_id] = StoredVector(model="m", values=raw / np.linalg.norm(raw))
        return out

    return read


AS_OF = T0 + timedelta(days=200)


def test_a_newer_state_left_out_by_the_cut_comes_back_with_the_older_one() -> None:
    old = row(episode("old", "I live in Beijing, near the river.", 0), 0.9)
    new = row(episode("new", "I moved last month, I live in Shanghai now.", 150), 0.4)
    noise = row(episode("noise", "We had ramen downtown, the broth was great.", 30), 0.5)
    table = {"old": (1, 0.5, 0), "new": (1, 0, 0.3), "noise": (0, 1, 1)}
    kept = with_state_groups([old], [new, noise], vectors(table), AS_OF, "where do I live")
    assert [r.memory.memory_id for r in kept] == ["old", "new"]  # ranking order; states reorder
    # and the other way round: the current one passed, its older state follows it
    old, new = row(old.memory, 0.4), row(new.memory, 0.9)
    kept = with_state_groups([new], [old, noise], vectors(table), AS_OF, "where do I live")
    assert [r.memory.memory_id for r in kept] == ["new", "old"]


def test_nothing_comes_back_that_is_not_a_state_of_a_result() -> None:
    old = row(episode("old", "I live in Beijing, near the river.", 0), 0.9)
    noise = row(episode("noise", "We had ramen downtown, the broth was great.", 30), 0.5)
    table = {"old": (1, 0.5, 0), "noise": (0, 1, 1)}
    assert with_state_groups([old], [noise], vectors(table), AS_OF, "where do I live") == [old]
    assert with_state_groups([], [noise], vectors(table), AS_OF, "where") == []
    assert with_state_groups([old], [], vectors(table), AS_OF, "where") == [old]


def test_a_superseded_fact_and_its_replacement_stay_together() -> None:
    current = fact("f-new", "The user lives in Shanghai", 150, supersedes=["f-old"])
    older = fact(
        "f-old",
        "The user lives in Beijing",
        0,
        superseded_by="f-new",
        status=FactStatus.SUPERSEDED,
    )
    other = fact("f-other", "The user plays the cello", 10)
    table = {"f-new": (1, 0, 0), "f-old": (0, 1, 0), "f-other": (0, 0, 1)}
    for shown, left_out in ((current, older), (older, current)):
        kept = with_state_groups(
            [row(shown, 0.9)],
            [row(left_out, 0.3), row(other, 0.5)],
            vectors(table),
            AS_OF,
            "cello or city",
        )
        assert {r.memory.memory_id for r in kept} == {"f-new", "f-old"}
