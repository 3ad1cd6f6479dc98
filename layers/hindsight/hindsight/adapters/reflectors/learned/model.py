"""The statement classifier: logistic regression over an embedding and the cheap signals.

Weights live in ``weights.npz`` next to this file (written by ``training/train_extractor.py``):

- ``w``, ``b``: is this statement a lasting fact about its speaker? (one logit);
- ``platt``: two numbers (a, c) mapping the logit to a calibrated probability,
  ``1 / (1 + exp(-(a * logit + c)))``, fitted on held-out dialogues;
- ``platt_zh`` (optional): the same for Chinese statements, fitted on Chinese dev
  dialogues (the classifier learns from English only and is less sure of the same content
  in Chinese: without it, Chinese probabilities were far too low);
- ``threshold``: the probability from which a statement becomes a fact;
- ``threshold_zh`` (optional): the same for Chinese statements, chosen on the Chinese dev
  dialogues (they state their facts more plainly: a higher bar keeps precision);
- ``category_w``, ``category_b``: one logistic head per category of ``CATEGORIES``
  (the highest logit wins);
- ``embedding_model``, ``dimension``: the vectors it was trained on (others are refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from hindsight.adapters.reflectors.learned.segments import FEATURE_NAMES, signals
from hindsight.adapters.reflectors.rule_based.clauses import is_zh

WEIGHTS_FILE = "weights.npz"
STATIC_WEIGHTS_FILE = "weights_static.npz"  # over mean word embeddings (``static.py``)
CATEGORIES = ("biography", "preference", "constraint", "relationship", "plan", "habit")


@dataclass(frozen=True)
class StatementModel:
    """Trained weights; ``probabilities`` scores statements from their vectors."""

    w: np.ndarray
    b: float
    platt: tuple[float, float]
    threshold: float
    category_w: np.ndarray
    category_b: np.ndarray
    embedding_model: str
    dimension: int
    platt_zh: tuple[float, float] | None = None
    threshold_zh: float | None = None

    def threshold_of(self, statement: str) -> float:
        """The probability from which this statement becomes a fact (its language's)."""
        if self.threshold_zh is not None and is_zh(statement):
            return self.threshold_zh
        return self.threshold

    def features(self, vectors: np.ndarray, statements: list[str]) -> np.ndarray:
        """Each statement's vector followed by its cheap signals, one row each."""
        if vectors.shape != (len(statements), self.dimension):
            raise ValueError(
                f"expected {len(statements)} vectors of dimension {self.dimension} "
                f"({self.embedding_model}); got shape {vectors.shape}"
            )
        cheap = (
            np.stack([signals(s) for s in statements])
            if statements
            else np.zeros((0, len(FEATURE_NAMES)), dtype=np.float32)
        )
        return np.hstack([np.asarray(vectors, dtype=np.float32), cheap])

    def probabilities(self, vectors: np.ndarray, statements: list[str]) -> np.ndarray:
        """The calibrated probability that each statement is a lasting fact of its speaker."""
        logits = self.features(vectors, statements) @ self.w + self.b
        a, c = (np.full(len(statements), value, dtype=np.float32) for value in self.platt)
        if self.platt_zh is not None:
            chinese = np.asarray([is_zh(s) for s in statements], dtype=bool)
            a[chinese], c[chinese] = self.platt_zh
        return 1.0 / (1.0 + np.exp(-(a * logits + c)))

    def categories(self, vectors: np.ndarray, statements: list[str]) -> list[str]:
        """The most likely category of each statement (``CATEGORIES``)."""
        scores = self.features(vectors, statements) @ self.category_w + self.category_b
        return [CATEGORIES[i] for i in np.argmax(scores, axis=1)]


def from_arrays(arrays: dict[str, np.ndarray]) -> StatementModel:
    """A model from the arrays ``save`` writes (or the shipped file holds)."""
    return StatementModel(
        w=np.asarray(arrays["w"], dtype=np.float32),
        b=float(arrays["b"]),
        platt=(float(arrays["platt"][0]), float(arrays["platt"][1])),
        threshold=float(arrays["threshold"]),
        category_w=np.asarray(arrays["category_w"], dtype=np.float32),
        category_b=np.asarray(arrays["category_b"], dtype=np.float32),
        embedding_model=str(arrays["embedding_model"]),
        dimension=int(arrays["dimension"]),
        platt_zh=(
            (float(arrays["platt_zh"][0]), float(arrays["platt_zh"][1]))
            if "platt_zh" in arrays
            else None
        ),
        threshold_zh=float(arrays["threshold_zh"]) if "threshold_zh" in arrays else None,
    )


@lru_cache(maxsize=2)
def shipped_model(name: str = WEIGHTS_FILE) -> StatementModel:
    """Weights shipped in the package: ``WEIGHTS_FILE`` (over e5 vectors) or
    ``STATIC_WEIGHTS_FILE``."""
    source = resources.files("hindsight.adapters.reflectors.learned").joinpath(name)
    with source.open("rb") as handle, np.load(handle) as data:
        return from_arrays({name: data[name] for name in data.files})
