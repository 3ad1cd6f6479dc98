"""The update-pairs sets: does a newer memory really change an older one?

    .venv/bin/python bench/datasets/update_pairs_data.py           # writes data/updates/pairs.json
    .venv/bin/python bench/datasets/update_pairs_data.py --shapes  # data/updates/shapes.json

The precision set: per language, attribute and split, an older statement of an attribute
of the user and newer memories in five categories (negatives ``unrelated``, ``consistent``,
``other_person``; updates ``update_cue``, ``update_plain``), from the sentences of
``data/updates/pair_templates_{en,zh}.json``, checked (placeholders, cue words, disjoint
``fit`` and ``held`` halves) and drawn seeded, so the file is reproducible. The
update-shapes set: pairs written one by one (``data/updates/shapes_sentences.json``), its
updates split into ``update_cue`` / ``update_plain`` by the same ``CUES``. Both share one
format and run on ``bench/update_pairs.py``; bench/data/updates/README.md describes the
categories, fields and checks.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from datasets.tables import load_tables

DATA = Path(__file__).resolve().parents[1] / "data" / "updates"
OUT = DATA / "pairs.json"
SEED = 40
LANGS = ("en", "zh")
SPLITS = ("fit", "held")
NEGATIVE = ("unrelated", "consistent", "other_person")
POSITIVE = ("update_cue", "update_plain")
CATEGORIES = NEGATIVE + POSITIVE
NOISE_PER_PAIR = 3

SHAPES_OUT = DATA / "shapes.json"
SHAPES_SEED = 41
# the precision set's negatives, then those only the shapes set has
SHAPES_NEGATIVE = (*NEGATIVE, "restated", "question", "hypothetical", "past_only")
UPDATE = "update"  # a shapes pair written as one kind; split into update_cue / update_plain by CUES
# the hand-written shapes: per language, the question of each attribute and the pairs
# (attribute, kind, older, newer), the kind one of SHAPES_NEGATIVE or UPDATE
SHAPES_SENTENCES = DATA / "shapes_sentences.json"

# what this set calls a cue word: a word that says a state changed. ``update_cue``
# memories must hold one and ``update_plain`` memories none; the negatives may (that is
# the trap). The set's own definition, independent of any rule under test.
CUES = {
    "en": re.compile(
        r"\b(?:now|nowadays|these days|currently|moved|move|relocated|switched|switch|"
        r"changed|no longer|anymore|instead|new|since|quit|left|sold|replaced|broke up|"
        r"split up|gave up|given up|stopped|started|finally|took over|dropped|traded in|"
        r"transferred|rehomed|closed)\b",
        re.IGNORECASE,
    ),
    "zh": re.compile(
        r"现在|如今|目前|换成|换了|改成|改为|改到|改学|改养|改喝|改支持|不再|已经不|不学|"
        r"搬到|搬去|搬家|新的|最近|开始|辞职|离职|跳槽|分手|以后|取代|代替|放弃|转到|转学|卖了|"
        r"注销"
    ),
}

# everyday memories stored around each pair (none states an attribute of the sets')
NOISE = load_tables("update_pairs_data")["NOISE"]

_PLACEHOLDERS = {
    "older": ({"a"}, set()),
    "question": (set(), {"a", "b"}),
    "unrelated": (set(), {"a", "b"}),
    "consistent": ({"a"}, {"b"}),
    "other_person": ({"b"}, {"a"}),
    "update_cue": ({"b"}, set()),
    "update_plain": ({"b"}, set()),
}


class TemplateError(ValueError):
    """A template breaks a rule of the set (named in the message)."""


def load_templates(lang: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (DATA / f"pair_templates_{lang}.json").read_text(encoding="utf-8")
    )
    check_templates(lang, data)
    return data


def _fields(template: str) -> set[str]:
    return set(re.findall(r"{(\w+)}", template))


def check_templates(lang: str, data: dict[str, Any]) -> None:
    """Placeholders where each kind needs them, cue words as the categories say, and the
    two splits sharing no template and no value."""
    for attribute in data["attributes"]:
        name = attribute["attribute"]
        for split in SPLITS:
            _check_cell(lang, f"{lang}/{name}/{split}", attribute[split])
        fit, held = attribute["fit"], attribute["held"]
        if set(fit["values"]) & set(held["values"]):
            raise TemplateError(f"{lang}/{name}: the splits share values")
        for kind in _PLACEHOLDERS:
            if set(fit[kind]) & set(held[kind]):
                raise TemplateError(f"{lang}/{name}: the splits share a {kind} template")
    shared = data["shared_unrelated"]
    if set(shared["fit"]) & set(shared["held"]):
        raise TemplateError(f"{lang}: the splits share an unrelated memory")


def _check_cell(lang: str, where: str, cell: dict[str, Any]) -> None:
    for kind, (needed, banned) in _PLACEHOLDERS.items():
        for template in cell[kind]:
            fields = _fields(template)
            if not needed <= fields or fields & banned:
                raise TemplateError(f"{where}/{kind}: placeholders of {template!r}")
    for template in cell["update_cue"]:
        if not CUES[lang].search(template.format(a="", b="")):
            raise TemplateError(f"{where}: no cue word in {template!r}")
    for template in cell["update_plain"]:
        found = CUES[lang].search(template.format(a="", b=""))
        if found:
            raise TemplateError(f"{where}: cue word {found.group()!r} in {template!r}")
    if len(set(cell["values"])) < 2:
        raise TemplateError(f"{where}: needs two values at least")


def _sentence(template: str, lang: str, **values: str) -> str:
    """The template filled in; an English sentence starting with a lower-case value
    ("swimming this morning...") gets a capital, a brand like "iPhone" keeps its case."""
    text = template.format(**values)
    if lang == "en" and text[:1].islower() and not text[1:2].isupper():
        text = text[0].upper() + text[1:]
    return text


def _pairs(lang: str, data: dict[str, Any], rng: random.Random) -> list[dict[str, Any]]:
    pairs: list[dict[str, Any]] = []
    for index, attribute in enumerate(data["attributes"]):
        name = attribute["attribute"]
        for split in SPLITS:
            cell = attribute[split]
            shared = data["shared_unrelated"][split]
            newer: list[tuple[str, str]] = [(c, t) for c in CATEGORIES for t in cell[c]]
            # one shared everyday memory per cell, in turn, as a further unrelated pair
            newer.insert(len(cell["unrelated"]), ("unrelated", shared[index % len(shared)]))
            for number, (category, template) in enumerate(newer):
                a, b = rng.sample(cell["values"], 2)
                older = cell["older"][number % len(cell["older"])]
                question = cell["question"][number % len(cell["question"])]
                newer_text = _sentence(template, lang, a=a, b=b)
                pairs.append(
                    {
                        "id": f"{lang}-{split}-{name}-{number}",
                        "lang": lang,
                        "split": split,
                        "category": category,
                        "negative": category in NEGATIVE,
                        "attribute": name,
                        "older": _sentence(older, lang, a=a),
                        "newer": newer_text,
                        "newer_has_cue": bool(CUES[lang].search(newer_text)),
                        "older_value": a,
                        "newer_value": b if category in ("other_person", *POSITIVE) else None,
                        "question": question,
                        "noise": rng.sample(NOISE[lang], NOISE_PER_PAIR),
                    }
                )
    return pairs


def build() -> dict[str, Any]:
    rng = random.Random(SEED)
    pairs = [p for lang in LANGS for p in _pairs(lang, load_templates(lang), rng)]
    return {
        "seed": SEED,
        "categories": {"negative": list(NEGATIVE), "positive": list(POSITIVE)},
        "pairs": pairs,
    }


def build_shapes() -> dict[str, Any]:
    """The update-shapes set from ``SHAPES_SENTENCES``, checked (known kinds, a question
    per attribute, no pair twice), each pair with its everyday memories."""
    rng = random.Random(SHAPES_SEED)
    sentences = json.loads(SHAPES_SENTENCES.read_text(encoding="utf-8"))
    questions: dict[str, dict[str, str]] = sentences["questions"]
    written: dict[str, list[list[str]]] = sentences["pairs"]
    pairs: list[dict[str, Any]] = []
    for lang, rows in written.items():
        seen: set[tuple[str, str]] = set()
        for number, (attribute, category, older, newer) in enumerate(rows):
            if category != UPDATE and category not in SHAPES_NEGATIVE:
                raise ValueError(f"{lang} #{number}: unknown category {category!r}")
            if attribute not in questions[lang]:
                raise ValueError(f"{lang} #{number}: no question for {attribute!r}")
            if (older, newer) in seen:
                raise ValueError(f"{lang} #{number}: the pair is there twice")
            seen.add((older, newer))
            kind = category
            if category == UPDATE:
                kind = "update_cue" if CUES[lang].search(newer) else "update_plain"
            pairs.append(
                {
                    "id": f"{lang}-shapes-{attribute}-{number}",
                    "lang": lang,
                    "split": "shapes",
                    "category": kind,
                    "negative": category != UPDATE,
                    "attribute": attribute,
                    "older": older,
                    "newer": newer,
                    "newer_has_cue": bool(CUES[lang].search(newer)),
                    "older_value": None,
                    "newer_value": None,
                    "question": questions[lang][attribute],
                    "noise": rng.sample(NOISE[lang], NOISE_PER_PAIR),
                }
            )
    return {"seed": SHAPES_SEED, "categories": {"negative": list(SHAPES_NEGATIVE)}, "pairs": pairs}


def _write(data: dict[str, Any], out: Path, group: tuple[str, ...]) -> None:
    """``data`` to ``out``, then the number of pairs per ``group`` of fields."""
    pairs = data["pairs"]
    out.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    counts = Counter("/".join(p[field] for field in group) for p in pairs)
    negatives = sum(p["negative"] for p in pairs)
    print(f"wrote {len(pairs)} pairs ({negatives / len(pairs):.0%} negatives) to {out}")
    for key in sorted(counts):
        print(f"  {key}: {counts[key]}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--shapes", action="store_true", help=f"write the update-shapes set ({SHAPES_OUT.name})"
    )
    args = parser.parse_args(argv)
    if args.shapes:
        _write(build_shapes(), SHAPES_OUT, ("lang", "category"))
    else:
        _write(build(), OUT, ("lang", "split", "category"))


if __name__ == "__main__":
    main()
