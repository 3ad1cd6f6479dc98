"""The learned reflector's precision rules, each measured where it must not fire.

    nice -n 5 .venv/bin/python bench/extraction_rules.py [--split test|dev]

Each rule of ``adapters/reflectors/learned/precision.py`` and the folding of near-duplicates
is switched off in turn (``switched_off``) on the held-back dialogues (``--split dev``: the
dev ones the rules were written on); docs/reflection.md gives the measures and figures.
Writes ``bench/results/extraction_rules.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extraction import episodes_of, run_system
from extraction_data import (
    REPO,
    ZH_DEV_FILE,
    Dialogue,
    dev_split,
    issue_matches,
    load_zh,
    speaker_turns,
    test_split,
)

import hindsight.adapters.reflectors.learned.precision as precision
import hindsight.adapters.reflectors.learned.reflector as learned_reflector
from hindsight.adapters.reflectors.learned import LearnedReflector

OUT = REPO / "bench" / "results" / "extraction_rules.json"
_NEVER = re.compile(r"(?!x)x")


@contextmanager
def switched_off(rule: str) -> Iterator[Callable[[str], bool]]:
    """The rule off for the block; yields the rule's test on a fact's content."""
    saved = (precision._OTHERS, precision._LISTENER, precision.points_elsewhere)
    speakerless = precision.speakerless
    fold = learned_reflector.fold_near_duplicates
    tests: dict[str, Callable[[str], bool]] = {
        "someone else": lambda t: bool(saved[0].match(t)),
        "the listener": lambda t: bool(saved[1].search(t)),
        "points elsewhere": saved[2],
    }
    if rule == "someone else":
        precision._OTHERS = _NEVER
    elif rule == "the listener":
        precision._LISTENER = _NEVER
    elif rule == "points elsewhere":
        precision.points_elsewhere = lambda text: False
    elif rule == "no speaker (English)":
        precision.speakerless = lambda text: False
    elif rule == "near-duplicates":
        learned_reflector.fold_near_duplicates = list  # type: ignore[assignment]
    try:
        yield tests.get(rule, lambda t: False)
    finally:
        precision._OTHERS, precision._LISTENER, precision.points_elsewhere = saved
        precision.speakerless = speakerless
        learned_reflector.fold_near_duplicates = fold


_BY_DIFFERENCE = ("near-duplicates", "no speaker (English)")


def _right(score: dict[str, Any]) -> int:
    return round(score["precision"] * score["extracted"])


def measure(rule: str, dialogues: Sequence[Dialogue]) -> dict[str, Any]:
    reflector = LearnedReflector(static=True)
    with_rule = run_system(reflector, dialogues)["issue"]
    fires = right_fires = right = 0
    with switched_off(rule) as fires_on:
        without = run_system(reflector, dialogues)["issue"]
        for dialogue in dialogues:
            for speaker, utterances in speaker_turns(dialogue):
                gold = dialogue.gold.get(speaker, [])
                facts = reflector.reflect("u", episodes_of([u.text for u in utterances]), [])
                for fact in facts.facts:
                    ok = any(issue_matches(fact.content, g) for g in gold)
                    right += ok
                    if fires_on(fact.content):
                        fires += 1
                        right_fires += ok
    if rule in _BY_DIFFERENCE:
        # read on the statement, not on the third-person fact: counted as what the rule
        # changes (right facts: those matching an annotated fact, with and without it)
        fires = without["extracted"] - with_rule["extracted"]
        right_fires = _right(without) - _right(with_rule)
    return {
        "facts_it_removes": fires,
        "right_facts_it_removes": right_fires,
        "negative_rate": round(right_fires / right, 3) if right else None,
        "without_rule": {k: without[k] for k in ("recall", "precision", "extracted")},
        "with_rule": {k: with_rule[k] for k in ("recall", "precision", "extracted")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=["test", "dev"], default="test")
    args = parser.parse_args()
    sets = {
        "en": test_split() if args.split == "test" else dev_split(),
        "zh": load_zh() if args.split == "test" else load_zh(ZH_DEV_FILE),
    }
    rules = (
        "someone else",
        "the listener",
        "points elsewhere",
        "no speaker (English)",
        "near-duplicates",
    )
    results: dict[str, Any] = {
        lang: {rule: measure(rule, dialogues) for rule in rules} for lang, dialogues in sets.items()
    }
    for lang, by_rule in results.items():
        for rule, r in by_rule.items():
            print(lang, rule, json.dumps(r), flush=True)
    results["split"] = args.split
    results["command"] = (
        f"nice -n 5 .venv/bin/python bench/extraction_rules.py --split {args.split}"
    )
    results["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    OUT.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
