"""bench/lodo.py's leave-one-dataset-out selection: a setting's value is chosen on the other
dev sets only (neither the left-out column nor its other language moves the choice), ties
go to the default, the verdict allows one question of the left-out column, the families
hold the one-setting variants with the default's value."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import lodo  # noqa: E402

# (R@10, H@5) per system and (set, language); 100 questions a column unless said
SCORES: dict[str, dict[tuple[str, str], tuple[float, float]]] = {
    # centering 0.5 (default), 0.0 (off), 1.0
    "default": {
        ("alpha", "en"): (0.50, 0.50),
        ("alpha", "zh"): (0.50, 0.50),
        ("beta", "en"): (0.70, 0.70),
        ("gamma", "en"): (0.60, 0.60),
    },
    # off: a little better on beta and gamma, far worse on alpha
    "centering=0": {
        ("alpha", "en"): (0.10, 0.10),
        ("alpha", "zh"): (0.10, 0.10),
        ("beta", "en"): (0.72, 0.72),
        ("gamma", "en"): (0.62, 0.62),
    },
    # 1.0: far better on alpha (both languages), a little worse elsewhere
    "centering=1": {
        ("alpha", "en"): (0.95, 0.95),
        ("alpha", "zh"): (0.95, 0.95),
        ("beta", "en"): (0.69, 0.69),
        ("gamma", "en"): (0.59, 0.59),
    },
    # time decay off: the default's figures but one question better on beta
    "time_decay=1": {
        ("alpha", "en"): (0.50, 0.50),
        ("alpha", "zh"): (0.50, 0.50),
        ("beta", "en"): (0.71, 0.71),
        ("gamma", "en"): (0.60, 0.60),
    },
    # two settings at once: in no family
    "centering=0 + vector_weight=0.5": {
        ("alpha", "en"): (0.0, 0.0),
        ("alpha", "zh"): (0.0, 0.0),
        ("beta", "en"): (0.0, 0.0),
        ("gamma", "en"): (0.0, 0.0),
    },
}
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {"policy": {}, "time_decay": None, "stored": {}},
    "centering=0": {"policy": {"centering": 0.0}, "time_decay": None, "stored": {}},
    "centering=1": {"policy": {"centering": 1.0}, "time_decay": None, "stored": {}},
    "time_decay=1": {"policy": {}, "time_decay": 1.0, "stored": {}},
    "centering=0 + vector_weight=0.5": {
        "policy": {"centering": 0.0, "vector_weight": 0.5},
        "time_decay": None,
        "stored": {},
    },
}
DEFAULTS = {"centering": 0.5, "vector_weight": 0.6, "time_decay": 0.95}


def results(scores: dict[str, dict[tuple[str, str], tuple[float, float]]]) -> dict[str, Any]:
    """devsets.py's JSON shape from the figures above."""
    sets: dict[str, Any] = {}
    for system, columns in scores.items():
        for (name, language), (recall, hit) in columns.items():
            systems = sets.setdefault(name, {"seconds": 1.0, "systems": {}})["systems"]
            systems.setdefault(system, {})[language] = {
                "overall": {"questions": 100, "recall@10": recall, "hit@5": hit}
            }
    return {"variants": VARIANTS, "defaults": DEFAULTS, "sets": sets}


def folds_of(report: dict[str, Any], setting: str) -> dict[str, dict[str, Any]]:
    return {lodo.label(f): f for f in report["families"][setting]["folds"]}


def test_families_hold_one_setting_variants_and_the_default() -> None:
    found, combined = lodo.families(results(SCORES))
    by_setting = {f.setting: f for f in found}
    assert set(by_setting) == {"centering", "time_decay"}
    centering = by_setting["centering"]
    assert centering.options == ((0.5, "default"), (0.0, "centering=0"), (1.0, "centering=1"))
    assert (centering.default, centering.off) == (0.5, 0.0)
    assert by_setting["time_decay"].options == ((0.95, "default"), (1.0, "time_decay=1"))
    assert combined == ["centering=0 + vector_weight=0.5"]


def test_the_left_out_set_does_not_move_the_choice() -> None:
    folds = folds_of(lodo.analyse(results(SCORES)), "centering")
    # alpha (either language) favours 1.0 by far; the others favour 0.0 a little: left out,
    # alpha's own figures must not pull the choice to 1.0
    for column in ("alpha en", "alpha zh"):
        assert folds[column]["chosen"] == 0.0
        assert folds[column]["fitted_on"] == ["beta en", "gamma en"]
        assert folds[column]["at_chosen"]["score"] == 0.10
        assert folds[column]["at_default"]["score"] == 0.50
    # beta left out: alpha's two columns weigh in, and 1.0 wins on their mean
    assert folds["beta en"]["chosen"] == 1.0
    assert folds["beta en"]["fitted_on"] == ["alpha en", "alpha zh", "gamma en"]


def test_changing_the_left_out_figures_changes_no_choice() -> None:
    """Whatever the left-out set scores, the value chosen for it stays the same."""
    before = folds_of(lodo.analyse(results(SCORES)), "centering")
    changed = {system: dict(columns) for system, columns in SCORES.items()}
    changed["centering=1"][("gamma", "en")] = (1.0, 1.0)
    changed["centering=0"][("gamma", "en")] = (0.0, 0.0)
    after = folds_of(lodo.analyse(results(changed)), "centering")
    assert after["gamma en"]["chosen"] == before["gamma en"]["chosen"] == 1.0
    assert after["gamma en"]["fit_means"] == before["gamma en"]["fit_means"]
    # ... while the folds that fit on gamma see it
    assert after["beta en"]["fit_means"] != before["beta en"]["fit_means"]


def test_ties_go_to_the_default() -> None:
    tied = {system: dict(columns) for system, columns in SCORES.items()}
    tied["centering=1"] = dict(tied["default"])
    family = next(f for f in lodo.families(results(tied))[0] if f.setting == "centering")
    table = lodo.figures(results(tied))
    chosen, means = lodo.choose(family, table, [("alpha", "en"), ("alpha", "zh")])
    assert chosen == 0.5
    assert means["0.5"] == means["1.0"]


def test_the_verdict_allows_one_question() -> None:
    report = lodo.analyse(results(SCORES))
    decay = report["families"]["time_decay"]
    # off is one question better on beta (0.01 of 100): within the tolerance
    assert not folds_of(report, "time_decay")["beta en"]["default_loses"]
    assert decay["verdict"] == "keep: loses on no left-out set"
    assert decay["wins_on"] == "none"
    worse = {system: dict(columns) for system, columns in SCORES.items()}
    worse["time_decay=1"][("beta", "en")] = (0.73, 0.73)  # three questions better
    decay = lodo.analyse(results(worse))["families"]["time_decay"]
    assert decay["verdict"] == "loses on beta en"
    centering = report["families"]["centering"]
    assert centering["verdict"] == "loses on beta en, gamma en"
    assert centering["wins_on"] == "alpha en, alpha zh"
    assert "the other sets choose off for alpha en, alpha zh" in centering["out_of_sample"]


def test_a_setting_without_an_off_value_is_only_fitted() -> None:
    variants = {
        "default": VARIANTS["default"],
        "vector_weight=0.7": {"policy": {"vector_weight": 0.7}, "time_decay": None, "stored": {}},
    }
    scores = {"default": SCORES["default"], "vector_weight=0.7": SCORES["centering=1"]}
    data = {**results(scores), "variants": variants}
    family = lodo.analyse(data)["families"]["vector_weight"]
    assert family["off"] is None
    assert family["verdict"] == "no off value (fitted only)"
    assert all("at_off" not in f for f in family["folds"])
