"""The calibration before the refit, on the same rows: bench/results/calibration.before.json.

The coefficients of commit b44c3aa (a log of the fused score floored at
``MIN_FUSED`` = 0.05 with a negative weight, terms for memories found by meaning alone, no
small stores in the fit), applied to the features the rows recorded (they were collected
with that code), and summarised as ``bench/calibrate.py --report`` summarises the current
one; its report then shows both.

    .venv/bin/python bench/calibration_before.py
"""

from __future__ import annotations

import gzip
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate import THRESHOLDS, cut, lone_memories, monotonicity, reliability, split
from calibration_data import ROWS, SMALL_ROWS
from harness import RESULTS_DIR, write_json

BEFORE = {
    "intercept": -26.779,
    "similarity": 14.8154,
    "similarity_margin": -1.3903,
    "similarity_relative": 2.7113,
    "keyword_relative": 3.0222,
    "keyword_coverage": 3.1969,
    "session": 6.1692,
    "log_factor": 6.4132,
    "log_fused": -2.6071,
    "dense_only": -5.3508,
    "dense_only_margin": 10.32,
    "dense_only_relative": 8.2252,
}
MIN_FUSED = 0.05


def probability(recorded: dict[str, float], fused: float) -> float:
    features = dict(recorded)
    features.setdefault("log_fused", math.log(max(fused, MIN_FUSED)))
    dense_only = 1.0 if features["keyword_relative"] <= 0.0 else 0.0
    features.setdefault("dense_only", dense_only)
    features.setdefault("dense_only_margin", dense_only * features["similarity_margin"])
    features.setdefault("dense_only_relative", dense_only * features["similarity_relative"])
    logit = BEFORE["intercept"] + sum(
        w * features[n] for n, w in BEFORE.items() if n != "intercept"
    )
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


def main() -> int:
    queries: list[dict[str, Any]] = []
    for path in (ROWS, SMALL_ROWS):
        queries += json.loads(gzip.decompress(path.read_bytes()))
    for query in queries:
        for result in query["results"]:
            result["p"] = probability(result["features"], result["fused"])
    sets = split(queries)
    write_json(
        RESULTS_DIR / "calibration.before.json",
        {
            "calibration": "Before: commit b44c3aa's coefficients (bench/calibration_before.py).",
            "coefficients": BEFORE,
            "reliability": {
                n: {k: v for k, v in reliability(qs).items() if k != "table"}
                for n, qs in sets.items()
            },
            "sweep": {n: {str(t): cut(qs, False, t) for t in THRESHOLDS} for n, qs in sets.items()},
            "lone_memories": lone_memories(queries),
            "monotonicity": {n: monotonicity(qs) for n, qs in sets.items()},
        },
    )
    print("wrote bench/results/calibration.before.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
