"""The pool standing of a cosine (``ranking.pool_standing``): how far it stands out of the
candidates' cosines, an input of the calibration that compares across languages."""

from __future__ import annotations

import math

import pytest

from hindsight.core.policy import CALIBRATION, MONOTONE, POOL_LEAST
from hindsight.core.ranking import pool_standing


def test_a_cosine_is_measured_in_deviations_over_the_pool_mean() -> None:
    pool = [0.80, 0.82, 0.84, 0.86, 0.88]
    standing = pool_standing(pool)
    deviation = math.sqrt(sum((c - 0.84) ** 2 for c in pool) / len(pool))
    assert standing(0.84) == pytest.approx(0.0)
    assert standing(0.88) == pytest.approx(0.04 / deviation)
    assert standing(0.80) == pytest.approx(-0.04 / deviation)


def test_the_same_spread_stands_out_alike_wherever_the_pool_sits() -> None:
    # Chinese cosines of unrelated texts sit higher: a pool shifted up scores the same
    low = [0.70, 0.72, 0.71, 0.73, 0.80]
    high = [c + 0.12 for c in low]
    assert pool_standing(low)(0.80) == pytest.approx(pool_standing(high)(0.92))


def test_a_pool_too_small_or_all_alike_gives_no_standing() -> None:
    enough = [0.5 + 0.01 * n for n in range(POOL_LEAST)]
    assert pool_standing(enough)(max(enough)) > 1.0
    assert pool_standing(enough[:-1])(max(enough)) == 0.0
    assert pool_standing([0.8] * POOL_LEAST)(0.8) == 0.0
    assert pool_standing([])(0.5) == 0.0


def test_the_standing_weights_are_weights_of_more_evidence() -> None:
    assert {"similarity_z", "best_z"} <= set(MONOTONE)
    assert CALIBRATION.weights["similarity_z"] >= 0.0
    assert CALIBRATION.weights["best_z"] >= 0.0
