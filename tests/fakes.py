"""Fakes for the ports that have no in-process real implementation worth using in unit tests."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np


class FixedClock:
    """A clock that stands still until told to move."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
        self.mono = 1_000.0

    def now(self) -> datetime:
        return self.current

    def monotonic(self) -> float:
        return self.mono

    def advance(self, **delta: float) -> None:
        step = timedelta(**delta)
        self.current += step
        self.mono += step.total_seconds()


class SequentialIds:
    def __init__(self) -> None:
        self._counter = itertools.count(1)

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._counter):06d}"


class HashingEmbedder:
    """Deterministic bag-of-character-n-grams embedder: similar strings, similar vectors.

    Not a language model: it only knows shared characters, which is all unit tests need.
    """

    def __init__(self, dimension: int = 64, model_name: str = "test-hashing-64") -> None:
        self._dimension = dimension
        self._model_name = model_name

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        return self._dimension

    def _one(self, text: str) -> np.ndarray:
        vector = np.zeros(self._dimension, dtype=np.float32)
        lowered = text.lower()
        grams = re.findall(r"[a-z0-9]+", lowered) + [c for c in lowered if ord(c) > 0x2E80]
        grams += [lowered[i : i + 2] for i in range(len(lowered) - 1) if ord(lowered[i]) > 0x2E80]
        for gram in grams:
            digest = hashlib.blake2b(gram.encode(), digest_size=8).digest()
            vector[int.from_bytes(digest[:4], "little") % self._dimension] += 1.0
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            vector[0] = 1.0
            norm = 1.0
        return vector / norm

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return np.stack([self._one(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)
