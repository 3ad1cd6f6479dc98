"""Builders of memories, vectors and index documents for the contract suites."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from hindsight.core.models import (
    EpisodicMemory,
    FactStatus,
    IndexDocument,
    MemoryKind,
    SemanticMemory,
    StoredVector,
    TimeRange,
)
from hindsight.core.text import content_hash
from tests.fakes import HashingEmbedder

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
EMBEDDER = HashingEmbedder()
MODEL = EMBEDDER.model_name


def at(minutes: float = 0.0, **delta: float) -> datetime:
    return T0 + timedelta(minutes=minutes, **delta)


def episode(
    memory_id: str,
    content: str = "the user talked about the weather",
    tenant_id: str = "t1",
    user_id: str = "u1",
    occurred_at: datetime = T0,
    **fields: Any,
) -> EpisodicMemory:
    fields.setdefault("created_at", occurred_at)
    fields.setdefault("updated_at", fields["created_at"])
    return EpisodicMemory(
        memory_id=memory_id,
        tenant_id=tenant_id,
        user_id=user_id,
        content=content,
        occurred_at=occurred_at,
        content_hash=content_hash(content),
        **fields,
    )


def fact(
    memory_id: str,
    content: str = "the user is allergic to peanuts",
    tenant_id: str = "t1",
    user_id: str = "u1",
    occurred_at: datetime = T0,
    **fields: Any,
) -> SemanticMemory:
    fields.setdefault("created_at", occurred_at)
    fields.setdefault("updated_at", fields["created_at"])
    return SemanticMemory(
        memory_id=memory_id,
        tenant_id=tenant_id,
        user_id=user_id,
        content=content,
        occurred_at=occurred_at,
        **fields,
    )


def text_vector(text: str, model: str = MODEL) -> StoredVector:
    return StoredVector(model=model, values=EMBEDDER.embed_query(text))


def unit_vector(values: np.ndarray, model: str = MODEL) -> StoredVector:
    values = np.asarray(values, dtype=np.float32)
    return StoredVector(model=model, values=values / np.linalg.norm(values))


def random_vectors(count: int, dim: int = 64, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((count, dim)).astype(np.float32)
    return data / np.linalg.norm(data, axis=1, keepdims=True)


def document(
    memory_id: str,
    text: str = "the user talked about the weather",
    tenant_id: str = "t1",
    user_id: str = "u1",
    vector: StoredVector | None = None,
    kind: MemoryKind = MemoryKind.EPISODIC,
    occurred_at: datetime = T0,
    **fields: Any,
) -> IndexDocument:
    if kind == MemoryKind.SEMANTIC:
        fields.setdefault("status", FactStatus.APPROVED)
    fields.setdefault("scope", "global")
    return IndexDocument(
        memory_id=memory_id,
        tenant_id=tenant_id,
        user_id=user_id,
        kind=kind,
        text=text,
        vector=vector or text_vector(text),
        occurred_at=occurred_at,
        created_at=fields.pop("created_at", occurred_at),
        **fields,
    )


def rich_episode(memory_id: str = "m-rich") -> EpisodicMemory:
    """An episode with every optional field set, for round-trip checks."""
    return episode(
        memory_id,
        content="下周三去北京出差 — meeting with Zoë at 3pm",
        scope="work",
        category="travel",
        session_id="s-9",
        speaker="user",
        participants=["user", "Zoë"],
        emotion="excited",
        agent_action="added to calendar",
        outcome="confirmed",
        metadata={"source": "chat", "n": 3, "nested": {"ok": True}},
        expires_at=at(days=30),
        event_time=[TimeRange(start=at(days=6), end=at(days=7), expression="下周三")],
        occurred_at=at(0.000001 * 60),
    )
