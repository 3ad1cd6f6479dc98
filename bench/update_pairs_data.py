"""The update-pairs precision set: does a newer memory really change an older one?

Each pair is one older statement of an attribute of the user ("I drive a Toyota Corolla")
and one newer memory, in five categories:

- ``unrelated``: the newer memory is about something else, often sharing a word with
  the attribute or with a change cue ("moved my desk", "switched the lights off",
  "换了一张升降桌", "新买了跑鞋");
- ``consistent``: about the same thing, giving no new value ("My Toyota needs new tyres",
  "杭州最近一直下雨");
- ``other_person``: the same attribute of someone else ("my sister lives in Rome",
  "我妈妈换了新手机");
- ``update_cue``: a new value of the user's attribute with a cue word ("moved", "now",
  "switched", "换成", "搬到");
- ``update_plain``: a new value without a cue word ("My flat in Munich is tiny but...").

The first three are negatives (the older statement still holds), the last two genuine
updates. Every pair carries the question a user would ask about the older statement's
attribute, and a ``split``: the ``fit`` and ``held`` halves come from disjoint templates
and disjoint value pools, so a rule tuned on ``fit`` is reported on ``held``.

The sentences are data: ``bench/data/updates/pair_templates_{en,zh}.json`` (per
attribute and split: a value pool, the older statement, the question, and the newer
memories of each category; plus shared unrelated memories per split). This script checks
them (placeholders, cue words, disjoint splits) and writes
``bench/data/updates/pairs.json``, seeded, so the file is reproducible::

    .venv/bin/python bench/update_pairs_data.py

``bench/update_pairs.py`` runs it.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "updates"
OUT = DATA / "pairs.json"
SEED = 40
LANGS = ("en", "zh")
SPLITS = ("fit", "held")
NEGATIVE = ("unrelated", "consistent", "other_person")
POSITIVE = ("update_cue", "update_plain")
CATEGORIES = NEGATIVE + POSITIVE
NOISE_PER_PAIR = 3

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
NOISE = {
    "en": [
        "Can you remind me to call the plumber on Thursday?",
        "The sunset over the harbour was gorgeous tonight.",
        "I finished the crossword in record time this morning.",
        "My neighbour's wind chimes kept me awake.",
        "We played Monopoly until midnight and nobody won.",
        "I need to send a thank-you card to my aunt.",
        "The library fine was only fifty pence, phew.",
        "It snowed a little overnight but it's already melting.",
        "I watered the tomatoes and they're finally ripening.",
        "The queue at the post office was out the door.",
        "I found a tenner in my winter coat pocket.",
        "Spent the evening sorting old photos into albums.",
    ],
    "zh": [
        "周四提醒我给水管工打电话。",
        "今晚港口的日落太美了。",
        "今天早上的填字游戏做得特别快。",
        "邻居家的风铃响了一夜，吵得睡不着。",
        "我们玩大富翁玩到半夜，谁也没赢。",
        "得给姑姑寄一张感谢卡。",
        "图书馆的罚款才五毛钱。",
        "昨晚下了点小雪，今天已经化了。",
        "给阳台的番茄浇了水。",
        "邮局排队排到了门外。",
        "在冬天的外套口袋里翻到了五十块钱。",
        "晚上把旧照片整理进了相册。",
    ],
}

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


def main() -> None:
    data = build()
    pairs = data["pairs"]
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    negatives = sum(p["negative"] for p in pairs)
    counts: dict[str, int] = {}
    for p in pairs:
        key = f"{p['lang']}/{p['split']}/{p['category']}"
        counts[key] = counts.get(key, 0) + 1
    print(f"wrote {len(pairs)} pairs ({negatives / len(pairs):.0%} negatives) to {OUT}")
    for key in sorted(counts):
        print(f"  {key}: {counts[key]}")


if __name__ == "__main__":
    main()
