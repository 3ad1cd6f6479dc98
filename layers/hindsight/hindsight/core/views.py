"""Public (wire) views of domain models: what a caller sees of a stored memory."""

from __future__ import annotations

from typing import Any

from hindsight.core.models import EpisodicMemory, Memory, SemanticMemory


def iso(value: Any) -> Any:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def memory_view(memory: Memory) -> dict[str, Any]:
    """A memory as the API shows it (no tenant id, no internal hashes)."""
    view: dict[str, Any] = {
        "memory_id": memory.memory_id,
        "kind": memory.kind.value,
        "user_id": memory.user_id,
        "scope": memory.scope,
        "content": memory.content,
        "category": memory.category,
        "metadata": memory.metadata,
        "occurred_at": iso(memory.occurred_at),
        "created_at": iso(memory.created_at),
        "updated_at": iso(memory.updated_at),
        "expires_at": iso(memory.expires_at),
        "hit_count": memory.hit_count,
        "last_hit_at": iso(memory.last_hit_at),
        "pinned": memory.pinned,
        "archived_at": iso(memory.archived_at),
    }
    if isinstance(memory, EpisodicMemory):
        view.update(
            session_id=memory.session_id,
            speaker=memory.speaker,
            participants=memory.participants,
            emotion=memory.emotion,
            agent_action=memory.agent_action,
            outcome=memory.outcome,
            event_time=[
                {"start": iso(r.start), "end": iso(r.end), "expression": r.expression}
                for r in memory.event_time
            ],
        )
    elif isinstance(memory, SemanticMemory):
        view.update(
            confidence=memory.confidence.value,
            status=memory.status.value,
            topic=memory.topic,
            source_memory_ids=memory.source_memory_ids,
            supersedes=memory.supersedes,
            superseded_by=memory.superseded_by,
            reflector=memory.reflector,
            mention_count=memory.mention_count,
        )
    return view
