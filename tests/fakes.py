"""Fakes for the ports that have no in-process real implementation worth using in unit tests."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from hindsight.core.models import EpisodicMemory


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

    def __init__(
        self, dimension: int = 64, model_name: str = "test-hashing-64", window_tokens: int = 512
    ) -> None:
        self._dimension = dimension
        self._model_name = model_name
        self._window_tokens = window_tokens

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def window_tokens(self) -> int:
        return self._window_tokens

    def count_tokens(self, text: str) -> int:
        """Words and Chinese characters, plus 2 (as if for special tokens)."""
        return len(re.findall(r"[^\W\u2e80-\u9fff]+|[\u2e80-\u9fff]|[^\w\s]", text)) + 2

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


class ScriptedReflector:
    """A reflector that returns facts a test scripted, keyed by a word in the episode."""

    label = "scripted (test)"

    def __init__(self) -> None:
        # trigger substring -> (content, category, confidence, topic)
        self.rules: dict[str, tuple[str, str, str, str]] = {}
        self.calls: list[list[str]] = []

    def when(
        self,
        trigger: str,
        content: str,
        category: str = "fact",
        confidence: str = "medium",
        topic: str = "",
    ) -> ScriptedReflector:
        self.rules[trigger] = (content, category, confidence, topic)
        return self

    def reflect(self, user_id, episodes, existing_facts):  # type: ignore[no-untyped-def]
        from hindsight.core.models import (
            Confidence,
            ExtractedFact,
            FactCategory,
            ReflectionOutput,
        )

        self.calls.append([e.memory_id for e in episodes])
        facts = []
        for trigger, (content, category, confidence, topic) in self.rules.items():
            sources = [e.memory_id for e in episodes if trigger in e.content]
            if sources:
                facts.append(
                    ExtractedFact(
                        content=content,
                        category=FactCategory(category),
                        confidence=Confidence(confidence),
                        source_memory_ids=sources,
                        topic=topic,
                    )
                )
        return ReflectionOutput(facts=facts, reflector=self.label)

    def summarize(self, episodes):  # type: ignore[no-untyped-def]
        from hindsight.core.models import SessionSummary

        return SessionSummary(
            intent=f"summary of {len(episodes)} turns",
            entities=["Beijing"],
            open_tasks=["book a hotel"],
            mood="calm",
            summarizer=self.label,
        )


EPISODE_T0 = datetime(2026, 6, 3, 9, 0, tzinfo=UTC)  # a Wednesday


def numbered_episode(
    number: int,
    content: str,
    *,
    step: timedelta = timedelta(hours=1),
    id_digits: int = 0,
    speaker: str | None = "user",
    **fields: object,
) -> EpisodicMemory:
    """Episode ``number`` of user u1 (tenant t1): ``mem_<number>`` (zero-padded to
    ``id_digits``), occurring ``number`` steps after ``EPISODE_T0``; ``fields`` set any
    other field (emotion, context, occurred_at, ...)."""
    when = EPISODE_T0 + number * step
    values: dict[str, object] = {
        "memory_id": f"mem_{number:0{id_digits}d}",
        "tenant_id": "t1",
        "user_id": "u1",
        "content": content,
        "speaker": speaker,
        "occurred_at": when,
        "created_at": when,
        "updated_at": when,
    }
    values.update(fields)
    return EpisodicMemory.model_validate(values)
