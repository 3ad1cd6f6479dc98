"""Would a query-level gate answer "nothing" where min_score's cut of each result cannot?

min_score drops every result under it, so a question whose store holds the answer loses
the answering memories that score low (rank 5-10) as well. A gate decides per query
instead: nothing comes back when the query looks unanswerable by this user's store,
otherwise every result does. This fits a logistic "the store holds the answer" on
query-level evidence of bench/calibrate.py's rows (no new retrieval): the calibrated
logit of the query's best result, the best cosine's margin over the empty-text floor and
the floor; weights of more evidence kept at 0 or above, the floor free. Label: the
question asked of its own user (1) or of another user (0). Fitted on the calibration's
fit rows (``--locomo-only``: LoCoMo 0-4 only), the threshold put at the fitted negatives'
``--empty`` quantile, and checked per held-out set: recall@10 before and after, negatives
rightly empty.

    .venv/bin/python bench/answerability.py [--locomo-only] [--empty 0.9]

Not built into the service: fitted on every set, the gate still costs long-memory recall
(its needles sit in long pastes, whose best result looks like a negative's); see the
README's "Relevance scores and min_score".
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate import _recall, bounded_logistic, fit_rows, split
from calibration_data import Query, load_rows

from hindsight.core.policy import CALIBRATION

NAMES = ("best_logit", "best_margin", "floor")
BOUNDED = (True, True, False)  # the floor may take either sign


def evidence(query: Query) -> list[float]:
    results = query["results"]
    if not results:
        return [-30.0, 0.0, 0.0]
    first = results[0]["features"]
    return [
        max(CALIBRATION.logit(r["features"]) for r in results),
        max(r["features"]["similarity_margin"] for r in results),
        first["similarity_floor"],
    ]


def fit(queries: Sequence[Query]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights over standardised evidence (mean, deviation, weights with the intercept)."""
    x = np.asarray([evidence(q) for q in queries])
    y = np.asarray([1.0 if q["kind"] == "own" else 0.0 for q in queries])
    mean, deviation = x.mean(0), x.std(0) + 1e-9
    weights = bounded_logistic((x - mean) / deviation, y, BOUNDED)
    return mean, deviation, weights


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo-only", action="store_true", help="fit on LoCoMo 0-4 only")
    parser.add_argument("--empty", type=float, default=0.9, help="fitted negatives left empty")
    args = parser.parse_args(argv)
    queries = load_rows()
    sets = split(queries)
    fitted = sets["locomo fit (0-4)"] if args.locomo_only else fit_rows(queries)
    mean, deviation, weights = fit(fitted)
    print("weights:", dict(zip(("intercept", *NAMES), np.round(weights, 3).tolist(), strict=True)))

    def score(query: Query) -> float:
        return float(weights[0] + ((np.asarray(evidence(query)) - mean) / deviation) @ weights[1:])

    threshold = float(np.quantile([score(q) for q in fitted if q["kind"] == "cross"], args.empty))
    print(f"threshold {threshold:.3f} (fitted negatives' {args.empty} quantile)")
    print("| set | R@10 | R@10 gated | negatives rightly empty |")
    print("|---|---|---|---|")
    for name, qs in sets.items():
        own = [q for q in qs if q["kind"] == "own"]
        cross = [q for q in qs if q["kind"] == "cross"]
        before = sum(_recall(q, q["results"], 10) for q in own) / len(own)
        after = sum(_recall(q, q["results"] if score(q) > threshold else [], 10) for q in own)
        empty = sum(1 for q in cross if score(q) <= threshold) / max(1, len(cross))
        print(f"| {name} | {before:.4f} | {after / len(own):.4f} | {empty:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
