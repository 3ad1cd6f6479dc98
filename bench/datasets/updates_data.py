"""The knowledge-update dev set: a user's state changes among everyday chatter.

Each case is one user: a statement of an attribute of theirs (where they live, their job,
partner, car, manager, diet, phone, gym days, languages, pets, a favourite), everyday
noise, a later statement that replaces it (or, for additive cases, adds to it), more noise,
and questions asked after both: one about the present, and for some replacing cases one
about the past ("where did the user live in January?"). About a third of the updates carry
no cue word ("moved", "now", "换成"): only the time order tells them apart.

``python bench/datasets/updates_data.py`` writes ``bench/data/updates/cases.json`` (seeded, so the
file is reproducible); ``bench/updates.py`` runs it. Values are drawn from pools per case,
so the same template gives different cases; the maintainers' held-out set is of the same
kind but not these sentences.
"""

from __future__ import annotations

import json
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from datasets.tables import load_tables

OUT = Path(__file__).resolve().parents[1] / "data" / "updates" / "cases.json"
SEED = 20
TABLES = load_tables("updates_data")

# (attribute, kind, old statement, updates [cue..., no cue], current question, past question,
#  value pool); {a} is the old value, {b} the new one
EN: list[dict[str, Any]] = TABLES["EN"]

ZH: list[dict[str, Any]] = TABLES["ZH"]

NOISE = TABLES["NOISE"]


def _episodes(
    rng: random.Random, lang: str, old: str, new: str, start: datetime
) -> list[dict[str, Any]]:
    """Noise, the old statement, noise, the new statement, noise; times increasing."""
    noise = rng.sample(NOISE[lang], 9)
    texts = [
        *[(t, "noise") for t in noise[:2]],
        (old, "old"),
        *[(t, "noise") for t in noise[2:6]],
        (new, "new"),
        *[(t, "noise") for t in noise[6:]],
    ]
    when = start
    out = []
    for text, role in texts:
        gap = timedelta(days=rng.randint(40, 60)) if role == "new" else timedelta(days=3)
        when += gap + timedelta(hours=rng.randint(0, 12))
        out.append({"content": text, "role": role, "occurred_at": when.isoformat()})
    return out


def _cases(lang: str, templates: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    cases = []
    for template in templates:
        for number, update in enumerate(template["new"]):
            for repeat in range(2):
                a, b = rng.sample(template["values"], 2)
                start = datetime(2026, 1, 2, 9, tzinfo=UTC) + timedelta(days=rng.randint(0, 6))
                episodes = _episodes(
                    rng, lang, template["old"].format(a=a), update.format(a=a, b=b), start
                )
                last = datetime.fromisoformat(episodes[-1]["occurred_at"])
                case: dict[str, Any] = {
                    "id": f"{lang}-{template['attribute']}-{number}-{repeat}",
                    "lang": lang,
                    "attribute": template["attribute"],
                    "kind": "additive" if template.get("additive") else "replace",
                    "cue": number < len(template["new"]) - 1 or len(template["new"]) == 1,
                    "old_value": a,
                    "new_value": b,
                    "episodes": episodes,
                    "question": template["question"],
                    "as_of": (last + timedelta(days=5)).isoformat(),
                }
                if template.get("past") and repeat == 0:
                    case["past_question"] = template["past"]
                cases.append(case)
    return cases


def main() -> None:
    rng = random.Random(SEED)
    cases = _cases("en", EN, rng) + _cases("zh", ZH, rng)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"seed": SEED, "cases": cases}, ensure_ascii=False, indent=1))
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
