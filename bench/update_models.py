"""Can the bundled model read an update where the word rules miss it? Three experiments on
the update pairs (``bench/data/updates``), fitted on the fit half and the shapes set,
reported on the held-out half (docs/decisions.md, "An update needs evidence, part 3").

    nice -n 5 .venv/bin/python bench/update_models.py

1. Where the rule misses: the first check of ``states.same_attribute`` that fails, for each
   held-out update it does not find.
2. Attribute by meaning, zero-shot: the cosine of a statement (passage) to each attribute's
   question (query, the fit half's wording); top-1 attribute, and how many unrelated newer
   memories pass a cosine and margin that the attribute's own statements pass.
3. Attribute by meaning, learned: a logistic regression over the statement's vector (an
   attribute or none: the unrelated newer memories and the everyday noise), its attribute
   added to the rule's word patterns at p >= 0.7 and 0.9; updates found and false updates.
4. A pair classifier: logistic regression over (older * newer, |older - newer|, cosine);
   held-out recall and false updates at the threshold that keeps every fit negative out,
   and at 0.5.
"""

from __future__ import annotations

import collections
import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.models import EpisodicMemory
from hindsight.core.ports import Embedder
from hindsight.core.retrieval import states

DATA = Path(__file__).resolve().parent / "data" / "updates"
# the pairs' attribute names, as ``state_attributes.ATTRIBUTES`` names them
NAMES = {
    "car": "vehicle",
    "employer": "work",
    "favourite_food": "food",
    "hair_colour": "hair",
    "language_learning": "language",
    "pet": "pets",
    "school": "studies",
}
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def memory(key: str, text: str, at: datetime) -> EpisodicMemory:
    return EpisodicMemory(
        memory_id=key, tenant_id="t", user_id="u", content=text, speaker=None,
        occurred_at=at, created_at=at, updated_at=at,
    )  # fmt: skip


def statements(pair: dict) -> tuple[states.Statement, states.Statement]:
    older = memory("o", pair["older"], T0)
    newer = memory("n", pair["newer"], T0 + timedelta(days=89))
    return states.Statement.of(older), states.Statement.of(newer)


def miss_stage(pair: dict, cosine: float) -> str:
    older, newer = statements(pair)
    attribute = NAMES.get(pair["attribute"], pair["attribute"])
    if states.same_attribute(older, newer, cosine):
        return "found"
    if not states._comparable(older, newer, cosine):
        return "a wish or the past" if older.unreal or newer.unreal else "an addition or other"
    if attribute not in older.attributes:
        return "older: no attribute word"
    if attribute not in newer.attributes | states._ended_by(older, newer):
        return "newer: no attribute word"
    if states._subject(older.text, attribute) != states._subject(newer.text, attribute):
        return "another subject"
    if not states.attribute_values(older.text, attribute):
        return "older: no value read"
    if not states.attribute_values(newer.text, attribute):
        return "newer: no value read"
    return "other"


def labelled(pairs: list[dict]) -> list[tuple[str, str]]:
    """(statement, attribute or "none") of pairs: their states, unrelated news and noise."""
    rows = []
    for pair in pairs:
        attribute = NAMES.get(pair["attribute"], pair["attribute"])
        rows.append((pair["older"], attribute))
        if not pair["negative"]:
            rows.append((pair["newer"], attribute))
        if pair["category"] == "unrelated":
            rows.append((pair["newer"], "none"))
        rows += [(noise, "none") for noise in pair.get("noise", [])]
    return list(dict.fromkeys(rows))


def main() -> None:
    pairs = json.loads((DATA / "pairs.json").read_text())["pairs"]
    pairs += json.loads((DATA / "shapes.json").read_text())["pairs"]
    fit = [p for p in pairs if p["split"] in ("fit", "shapes")]
    held = [p for p in pairs if p["split"] == "held"]
    embedder = build_embedder("e5")
    texts = sorted({t for p in pairs for t in (p["older"], p["newer"], *p.get("noise", []))})
    vectors = dict(zip(texts, embedder.embed_documents(texts), strict=True))
    stages = collections.Counter(
        (p["lang"], miss_stage(p, cosine(vectors, p))) for p in held if not p["negative"]
    )
    print("1. held-out updates by the first check that fails:", dict(sorted(stages.items())))
    zero_shot(embedder, vectors, fit, held)
    learned_attribute(vectors, pairs, fit)
    pair_classifier(vectors, fit, held)


def cosine(vectors: dict[str, np.ndarray], pair: dict) -> float:
    return float(vectors[pair["older"]] @ vectors[pair["newer"]])


def zero_shot(
    embedder: Embedder, vectors: dict[str, np.ndarray], fit: list[dict], held: list[dict]
) -> None:
    questions = {(p["attribute"], p["lang"]): p["question"] for p in reversed(fit)}
    query = {key: embedder.embed_query(q) for key, q in questions.items()}
    attributes = sorted({a for a, _ in questions})
    for split, chosen in (("fit", fit), ("held", held)):
        right: collections.Counter[str] = collections.Counter()
        total: collections.Counter[str] = collections.Counter()
        own: list[bool] = []
        unrelated: list[bool] = []
        for pair in chosen:
            for text, stated in ((pair["older"], True), (pair["newer"], not pair["negative"])):
                if not stated and pair["category"] != "unrelated":
                    continue
                cos = {a: float(vectors[text] @ query[(a, pair["lang"])]) for a in attributes}
                margin = cos[pair["attribute"]] - max(
                    v for a, v in cos.items() if a != pair["attribute"]
                )
                passes = cos[pair["attribute"]] >= 0.80 and margin >= 0.02
                if stated:
                    total[pair["lang"]] += 1
                    right[pair["lang"]] += max(cos, key=cos.__getitem__) == pair["attribute"]
                    own.append(passes)
                else:
                    unrelated.append(passes)
        print(
            f"2. zero-shot, {split}: top-1 {dict(right)} of {dict(total)}; cosine >= 0.80 and "
            f"margin >= 0.02: own statements {np.mean(own):.3f}, unrelated {np.mean(unrelated):.3f}"
        )


def learned_attribute(vectors: dict[str, np.ndarray], pairs: list[dict], fit: list[dict]) -> None:
    rows = labelled(fit)
    model = LogisticRegression(C=100, max_iter=5000)
    model.fit(np.array([vectors[t] * 10 for t, _ in rows]), [a for _, a in rows])
    for threshold in (None, 0.7, 0.9):
        counts: collections.Counter[tuple[str, str, str]] = collections.Counter()
        for pair in pairs:
            older, newer = statements(pair)
            if threshold is not None:
                older, newer = (
                    dataclasses.replace(
                        s, attributes=s.attributes | learned(model, vectors, s.text, threshold)
                    )
                    for s in (older, newer)
                )
            kind = "false" if pair["negative"] else "found"
            counts[(pair["split"], kind, pair["lang"])] += states.same_attribute(
                older, newer, cosine(vectors, pair)
            )
        print(f"3. learned attribute at p >= {threshold}:", dict(sorted(counts.items())))


def pair_classifier(vectors: dict[str, np.ndarray], fit: list[dict], held: list[dict]) -> None:
    def features(pair: dict) -> np.ndarray:
        older, newer = vectors[pair["older"]], vectors[pair["newer"]]
        return np.concatenate([older * newer, np.abs(older - newer), [older @ newer]])

    x, y = np.array([features(p) for p in fit]), np.array([not p["negative"] for p in fit])
    x_held = np.array([features(p) for p in held])
    y_held = np.array([not p["negative"] for p in held])
    pair_model = LogisticRegression(C=10, max_iter=5000).fit(x, y)
    p_fit, p_held = pair_model.predict_proba(x)[:, 1], pair_model.predict_proba(x_held)[:, 1]
    for threshold in (float(p_fit[~y].max()) + 1e-9, 0.5):
        print(
            f"4. pair classifier at p >= {threshold:.3f}: held-out found "
            f"{int((p_held[y_held] >= threshold).sum())}/{int(y_held.sum())}, false "
            f"{int((p_held[~y_held] >= threshold).sum())}/{int((~y_held).sum())}"
        )


def learned(
    model: LogisticRegression, vectors: dict[str, np.ndarray], text: str, threshold: float
) -> frozenset[str]:
    probabilities = model.predict_proba([vectors[text] * 10])[0]
    best = int(probabilities.argmax())
    attribute = str(model.classes_[best])
    if probabilities[best] >= threshold and attribute != "none":
        return frozenset({attribute})
    return frozenset()


if __name__ == "__main__":
    main()
