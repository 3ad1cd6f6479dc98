"""Leave-one-dataset-out: does each ranking rule earn its place on data it was not fitted on?

Reads ``bench/devsets.py``'s JSON (several files merged as ``devsets.py --merge`` merges
them) or, without ``--from``, runs ``devsets.py --quick`` first; bench/README.md gives the
procedure and the verdicts. What the code relies on: a family is the variants that change
one setting, with the default's value from the JSON's ``defaults`` (what a fresh service
has; the product's own when an older JSON lacks it), and a variant that changes several
settings belongs to none. A fold leaves out both languages of a dev set (the same
questions translated would leak it); ties go to the default; ``OFF`` holds each rule's
off value (a family without one, such as the dense share, is only fitted).

    .venv/bin/python bench/lodo.py --from bench/results/devsets.json
    .venv/bin/python bench/lodo.py                    # runs devsets.py --quick first

Writes ``bench/results/lodo.{json,md}`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import RESULTS_DIR, machine_header, markdown_table, write_json

# each rule's value that switches it off (Policy's comments say which); a setting not
# here (vector_weight: a share, not a rule) is fitted but has no off value
OFF: dict[str, Any] = {
    "lexical_strength": 0,
    "centering": 0.0,
    "session_pooling": 0.0,
    "turn_weight": 0.0,
    "session_context": "off",
    "context_tokens": 0,  # no length limit on the turn-before context
    "speaker_boost": 1.0,
    "assistant_weight": 1.0,
    "time_decay": 1.0,
}
DEFAULT = "default"
BASELINES = ("bm25", "dense")

Column = tuple[str, str]  # (dev set, language)


@dataclass(frozen=True)
class Figures:
    """One system's overall figures on one column."""

    recall: float
    hit: float
    questions: int

    @property
    def score(self) -> float:
        return (self.recall + self.hit) / 2


@dataclass(frozen=True)
class Family:
    """The variants that change one setting: (value, system) pairs, the default's first."""

    setting: str
    default: Any
    off: Any | None
    options: tuple[tuple[Any, str], ...]

    def system(self, value: Any) -> str:
        return next(system for v, system in self.options if v == value)


def changed_settings(spec: dict[str, Any]) -> dict[str, Any]:
    """What a variant (``devsets.py``'s JSON entry) sets: policy, stored, time_decay."""
    settings = {**spec.get("policy", {}), **spec.get("stored", {})}
    if spec.get("time_decay") is not None:
        settings["time_decay"] = spec["time_decay"]
    return settings


def defaults_of(results: dict[str, Any]) -> dict[str, Any]:
    """Each setting's default: the run's own record, else the product's (this checkout)."""
    if results.get("defaults"):
        return dict(results["defaults"])
    from hindsight.core.commands import RetrieveCommand
    from hindsight.core.policy import Policy

    policy = Policy()
    names = {n for spec in results["variants"].values() for n in changed_settings(spec)}
    values = {n: getattr(policy, n) for n in names if hasattr(policy, n)}
    values["time_decay"] = RetrieveCommand.model_fields["time_decay"].default
    return values


def families(results: dict[str, Any]) -> tuple[list[Family], list[str]]:
    """The one-setting families (in the variants' order) and the variants in none: those
    that change several settings, or one whose default is unknown (a setting that is
    no longer the product's)."""
    defaults = defaults_of(results)
    options: dict[str, list[tuple[Any, str]]] = {}
    combined: list[str] = []
    for name, spec in results["variants"].items():
        if name == DEFAULT:
            continue
        settings = changed_settings(spec)
        if len(settings) != 1 or next(iter(settings)) not in defaults:
            combined.append(name)  # several settings, or one without a known default
            continue
        ((setting, value),) = settings.items()
        found = options.setdefault(setting, [(defaults[setting], DEFAULT)])
        if all(value != v for v, _ in found):
            found.append((value, name))
    out = [
        Family(setting, defaults[setting], OFF.get(setting), tuple(found))
        for setting, found in options.items()
    ]
    return out, combined


def figures(results: dict[str, Any]) -> dict[str, dict[Column, Figures]]:
    """{system: {(set, language): overall figures}} over every set of the results."""
    out: dict[str, dict[Column, Figures]] = {}
    for set_name, data in results["sets"].items():
        for system, per_language in data["systems"].items():
            for language, groups in per_language.items():
                m = groups["overall"]
                out.setdefault(system, {})[(set_name, language)] = Figures(
                    m["recall@10"], m["hit@5"], m["questions"]
                )
    return out


def family_columns(family: Family, table: dict[str, dict[Column, Figures]]) -> list[Column]:
    """The columns on which every value of the family ran (in the default's order)."""
    systems = [table.get(system, {}) for _, system in family.options]
    return [c for c in table[DEFAULT] if all(c in s for s in systems)]


def choose(
    family: Family,
    table: dict[str, dict[Column, Figures]],
    fit_on: Sequence[Column],
) -> tuple[Any, dict[str, float]]:
    """The value with the best mean score over ``fit_on`` (ties: the earlier option, the
    default first), and every value's mean."""
    if not fit_on:
        raise ValueError(f"{family.setting}: no column left to fit on")
    means: dict[str, float] = {}
    best: tuple[Any, float] | None = None
    for value, system in family.options:
        mean = sum(table[system][c].score for c in fit_on) / len(fit_on)
        means[str(value)] = round(mean, 4)
        if best is None or mean > best[1] + 1e-9:
            best = (value, mean)
    assert best is not None
    return best[0], means


def one_question(figures: Figures) -> float:
    """What one question moves the score by on a column (+ the 4-decimal rounding)."""
    return 1 / figures.questions + 1e-4


def fold(
    family: Family, table: dict[str, dict[Column, Figures]], left_out: Column
) -> dict[str, Any]:
    """Fit on every column of the other dev sets; the left-out column's figures."""
    fit_on = [c for c in family_columns(family, table) if c[0] != left_out[0]]
    chosen, means = choose(family, table, fit_on)

    def at(value: Any) -> dict[str, float]:
        f = table[family.system(value)][left_out]
        return {"recall@10": f.recall, "hit@5": f.hit, "score": round(f.score, 4)}

    default = table[DEFAULT][left_out]
    out: dict[str, Any] = {
        "set": left_out[0],
        "language": left_out[1],
        "questions": default.questions,
        "fitted_on": [f"{s} {lang}" for s, lang in fit_on],
        "fit_means": means,
        "chosen": chosen,
        "at_chosen": at(chosen),
        "at_default": at(family.default),
    }
    tolerance = one_question(default)
    if family.off is not None:
        off = table[family.system(family.off)][left_out].score
        out["at_off"] = at(family.off)
        out["default_minus_off"] = round(default.score - off, 4)
        out["default_loses"] = off - default.score > tolerance
        out["default_wins"] = default.score - off > tolerance
        out["chosen_loses"] = off - table[family.system(chosen)][left_out].score > tolerance
    out["chosen_minus_default"] = round(out["at_chosen"]["score"] - default.score, 4)
    out["default_behind_chosen"] = out["chosen_minus_default"] > tolerance
    return out


def label(column: dict[str, Any]) -> str:
    return f"{column['set']} {column['language']}"


def verdicts(family: Family, folds: list[dict[str, Any]]) -> dict[str, str]:
    """In sample (the default against off: where it loses, where it wins), out of sample
    (the fitted value against off), and whether a value fitted without the column beats
    the default on it; each by more than one question of the column."""
    behind = [label(f) for f in folds if f["default_behind_chosen"]]
    tuned = (
        "the default is never more than one question behind the fitted value"
        if not behind
        else "the fitted value beats the default by more than one question on " + ", ".join(behind)
    )
    if family.off is None:
        return {
            "verdict": "no off value (fitted only)",
            "wins_on": "",
            "out_of_sample": "",
            "tuning": tuned,
        }
    lost = [label(f) for f in folds if f["default_loses"]]
    lost_fitted = [label(f) for f in folds if f["chosen_loses"]]
    off_chosen = [label(f) for f in folds if f["chosen"] == family.off]
    return {
        "verdict": "keep: loses on no left-out set" if not lost else "loses on " + ", ".join(lost),
        "wins_on": ", ".join(label(f) for f in folds if f["default_wins"]) or "none",
        "out_of_sample": (
            "the fitted value loses to off on no left-out set"
            if not lost_fitted
            else "the fitted value loses to off on " + ", ".join(lost_fitted)
        )
        + ("" if not off_chosen else "; the other sets choose off for " + ", ".join(off_chosen)),
        "tuning": tuned,
    }


def analyse(results: dict[str, Any]) -> dict[str, Any]:
    """Every family's folds and verdicts."""
    table = figures(results)
    found, combined = families(results)
    out: dict[str, Any] = {}
    for family in found:
        cols = family_columns(family, table)
        if len({s for s, _ in cols}) < 2:
            continue  # one dev set: nothing to leave out
        folds = [fold(family, table, c) for c in cols]
        out[family.setting] = {
            "default": family.default,
            "off": family.off,
            "values": {str(v): system for v, system in family.options},
            "folds": folds,
            **verdicts(family, folds),
        }
    return {"families": out, "not_in_a_family": combined}


# --- report --------------------------------------------------------------------------------


def _cell(m: dict[str, float] | None) -> str:
    return f"{m['recall@10']:.3f} / {m['hit@5']:.3f}" if m else "—"


def markdown(report: dict[str, Any]) -> str:
    fams = report["families"]
    summary = [
        [
            f"`{s}`",
            str(f["default"]),
            "—" if f["off"] is None else str(f["off"]),
            ", ".join(f["values"]),
            f["verdict"],
            f["wins_on"] or "—",
            f["out_of_sample"] or "—",
            f["tuning"],
        ]
        for s, f in fams.items()
    ]
    rows = []
    for setting, fam in fams.items():
        for f in fam["folds"]:
            rows.append(
                [
                    f"`{setting}`",
                    f"{label(f)} ({f['questions']})",
                    str(f["chosen"]),
                    _cell(f["at_chosen"]),
                    _cell(f["at_default"]),
                    _cell(f.get("at_off")),
                    "—"
                    if "default_minus_off" not in f
                    else f"{f['default_minus_off']:+.3f}"
                    + (" **loses**" if f["default_loses"] else ""),
                ]
            )
    lines = [
        "# Leave-one-dataset-out: each ranking rule on the dev set it was not fitted on",
        "",
        machine_header(report["machine"]),
        "",
        f"Results read: `{report['source']}` (devsets run: "
        f"`{_without_history(report['devsets_command'])}`).",
        "",
        "Per family (the variants that change one setting, with the default's value) and "
        "left-out column (dev set, language): the value with the best mean of (R@10 + H@5) / 2 "
        "over the other dev sets' columns (both languages of the left-out set left out; ties "
        "to the default), then the left-out column's R@10 / H@5 at that value, at the default "
        "and with the rule off. The default loses when off scores more than one question "
        "of the column (1 / questions) above it.",
        "",
        "## Verdicts",
        "",
        markdown_table(
            [
                "setting",
                "default",
                "off",
                "values",
                "default vs off (in sample)",
                "default beats off on",
                "fitted vs off (out of sample)",
                "fitted vs default",
            ],
            summary,
        ),
        "",
        "## Folds",
        "",
        markdown_table(
            [
                "setting",
                "left out (questions)",
                "chosen on the others",
                "chosen R@10 / H@5",
                "default",
                "off",
                "default − off (score)",
            ],
            rows,
        ),
        "",
    ]
    if report["not_in_a_family"]:
        lines += [
            "Variants in no family (several settings at once, or a setting without a "
            "default in this checkout): "
            + "; ".join(_without_history(v) for v in report["not_in_a_family"])
            + ".",
            "",
        ]
    return "\n".join(lines)


def _without_history(text: str) -> str:
    """Labels and notes of older results name the work session they came from ("before
    session 9: ..."); the report says what they are, not when."""
    return re.sub(r"\s*\(?(?:before )?session \d+\)?:?", "", text).strip()


# --- main ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--from",
        dest="sources",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="devsets.py results (several are merged); without it devsets.py --quick runs",
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "lodo", help="file prefix")
    args = parser.parse_args(argv)
    sources = args.sources
    if not sources:
        import devsets

        began = time.perf_counter()
        quick = RESULTS_DIR / "devsets-quick"
        devsets.main(["--quick", "--out", str(quick)])
        print(f"devsets.py --quick in {time.perf_counter() - began:.0f} s", flush=True)
        sources = [Path(f"{quick}.json")]
    if len(sources) == 1:
        results = dict(json.loads(sources[0].read_text()))
    else:
        import devsets

        results = devsets.merge(sources)
    report = {
        "benchmark": "leave-one-dataset-out over the ranking ablation",
        "source": " ".join(str(p) for p in sources),
        "devsets_command": results["command"],
        "machine": results["machine"],
        "defaults": defaults_of(results),
        **analyse(results),
    }
    write_json(Path(f"{args.out}.json"), report)
    text = markdown(report)
    Path(f"{args.out}.md").write_text(text)
    print(text)
    print(f"wrote {args.out}.json/.md", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
