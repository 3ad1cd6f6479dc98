"""The update rule on the update-precision pairs (``bench/data/updates/pairs.json``) and the
update-shapes set (``bench/data/updates/shapes.json``), read offline: no negative pair may
be taken for an update, in either language, and the genuine updates found must not fall
below what the rule finds today (fit and held-out halves, and the shapes set)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight.core.models import EpisodicMemory
from hindsight.core.retrieval.states import Statement, same_attribute

DATA = Path(__file__).resolve().parents[2] / "bench" / "data" / "updates"
PAIRS = DATA / "pairs.json"
SHAPES = DATA / "shapes.json"
T0 = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
# related vectors: the rule's words alone decide
COSINE = 0.85
# the shapes set's genuine updates found today (36 English, 30 Chinese)
SHAPES_EN, SHAPES_ZH = 0.80, 0.90


def _statement(memory_id: str, text: str, days: int) -> Statement:
    moment = T0 + timedelta(days=days)
    return Statement.of(
        EpisodicMemory(
            memory_id=memory_id,
            tenant_id="t",
            user_id="u",
            content=text,
            occurred_at=moment,
            created_at=moment,
            updated_at=moment,
        )
    )


def _fired(pair: dict[str, object]) -> bool:
    older = _statement("a", str(pair["older"]), 0)
    newer = _statement("b", str(pair["newer"]), 60)
    return same_attribute(older, newer, COSINE)


@pytest.fixture(scope="module")
def pairs() -> list[dict[str, object]]:
    return list(json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_negative_pair_is_an_update(pairs: list[dict[str, object]], lang: str) -> None:
    negatives = [p for p in pairs if p["negative"] and p["lang"] == lang]
    assert len(negatives) == 200
    assert [p["id"] for p in negatives if _fired(p)] == []


@pytest.mark.parametrize(
    ("lang", "split", "floor"),
    [("en", "fit", 0.925), ("zh", "fit", 0.925), ("en", "held", 0.65), ("zh", "held", 0.475)],
)
def test_genuine_updates_are_found(
    pairs: list[dict[str, object]], lang: str, split: str, floor: float
) -> None:
    updates = [p for p in pairs if not p["negative"] and p["lang"] == lang and p["split"] == split]
    found = sum(_fired(p) for p in updates) / len(updates)
    assert found >= floor


@pytest.fixture(scope="module")
def shapes() -> list[dict[str, object]]:
    return list(json.loads(SHAPES.read_text(encoding="utf-8"))["pairs"])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_negative_shape_is_an_update(shapes: list[dict[str, object]], lang: str) -> None:
    negatives = [p for p in shapes if p["negative"] and p["lang"] == lang]
    assert len(negatives) >= 28
    assert [p["id"] for p in negatives if _fired(p)] == []


@pytest.mark.parametrize(("lang", "floor"), [("en", SHAPES_EN), ("zh", SHAPES_ZH)])
def test_genuine_updates_of_other_shapes_are_found(
    shapes: list[dict[str, object]], lang: str, floor: float
) -> None:
    updates = [p for p in shapes if not p["negative"] and p["lang"] == lang]
    assert sum(_fired(p) for p in updates) / len(updates) >= floor
