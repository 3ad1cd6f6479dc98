"""The update-shapes set: update pairs in shapes the precision set's templates lack.

``bench/data/updates/pairs.json`` (``bench/update_pairs_data.py``) fills a few templates
per attribute; a rule fitted on its ``fit`` half can learn those templates. This set is
written sentence by sentence, each pair its own (``data/updates/shapes_sentences.json``),
in other phrasings: colloquial English
("these days I...", "I'm now at...", "we relocated to...") and Chinese ("搬到了",
"现在在...上班", "改喝...", "换了份工作，去了..."), genuine updates with and without a cue
word, and negatives of kinds the templates do not have:

- ``other_person``: the same attribute of someone else, often with a cue word ("My
  brother lives in Bristol now", "我妈改喝茶了");
- ``consistent``: the same thing again, elaborated, naming no new value;
- ``restated``: the older value said again, with a cue word ("Still in Leeds, still
  loving it", "现在还在腾讯上班");
- ``question``: a question about another value ("Should I move to Bristol?");
- ``hypothetical``: a wish, plan or condition ("If I moved to Galway...", "我想搬到大理");
- ``past_only``: a value that held long ago ("I lived in Edinburgh as a kid");
- ``unrelated``: about something else, sharing a word or a cue ("We moved the sofa").

Genuine updates are ``update_cue`` or ``update_plain`` by the precision set's own cue
words (``update_pairs_data.CUES``), so both sets define a cue alike. The pairs share the
precision set's format and run on its bench::

    .venv/bin/python bench/update_pairs_shapes.py   # writes bench/data/updates/shapes.json
    .venv/bin/python bench/update_pairs.py --pairs bench/data/updates/shapes.json \
        --out bench/results/update_shapes.json

Every pair has ``split`` ``shapes``. The set is a development set: rules may be fitted on
it, so its figures are reported apart from the precision set's held-out half.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from update_pairs_data import CUES, NOISE, NOISE_PER_PAIR

OUT = Path(__file__).resolve().parent / "data" / "updates" / "shapes.json"
SEED = 41
NEGATIVE = (
    "unrelated",
    "consistent",
    "other_person",
    "restated",
    "question",
    "hypothetical",
    "past_only",
)
UPDATE = "update"  # written as one kind; split into update_cue / update_plain by CUES

# the hand-written sentences: per language, the question of each attribute and the pairs
# (attribute, kind, older, newer), the kind one of NEGATIVE or UPDATE
SENTENCES = Path(__file__).resolve().parent / "data" / "updates" / "shapes_sentences.json"


def _category(lang: str, category: str, newer: str) -> str:
    if category != UPDATE:
        return category
    return "update_cue" if CUES[lang].search(newer) else "update_plain"


def build() -> dict[str, Any]:
    rng = random.Random(SEED)
    sentences = json.loads(SENTENCES.read_text(encoding="utf-8"))
    questions: dict[str, dict[str, str]] = sentences["questions"]
    written: dict[str, list[list[str]]] = sentences["pairs"]
    pairs: list[dict[str, Any]] = []
    for lang, rows in written.items():
        seen: set[tuple[str, str]] = set()
        for number, (attribute, category, older, newer) in enumerate(rows):
            if category != UPDATE and category not in NEGATIVE:
                raise ValueError(f"{lang} #{number}: unknown category {category!r}")
            if attribute not in questions[lang]:
                raise ValueError(f"{lang} #{number}: no question for {attribute!r}")
            if (older, newer) in seen:
                raise ValueError(f"{lang} #{number}: the pair is there twice")
            seen.add((older, newer))
            kind = _category(lang, category, newer)
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
    return {"seed": SEED, "categories": {"negative": list(NEGATIVE)}, "pairs": pairs}


def main() -> None:
    data = build()
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    counts: dict[str, int] = {}
    for p in data["pairs"]:
        key = f"{p['lang']}/{p['category']}"
        counts[key] = counts.get(key, 0) + 1
    print(f"wrote {len(data['pairs'])} pairs to {OUT}")
    for key in sorted(counts):
        print(f"  {key}: {counts[key]}")


if __name__ == "__main__":
    main()
