"""What the search index holds of a memory: the text it is searched by and its document."""

from __future__ import annotations

from hindsight.core.models import (
    EpisodicMemory,
    IndexDocument,
    Memory,
    SemanticMemory,
    StoredVector,
)


def index_text(memory: Memory) -> str:
    """The text a memory is searched by.

    Its content, plus what the agent did and its outcome; an episode's session context
    (the turn before it, see ``store.with_session_context``) goes first.
    """
    parts = [memory.content]
    if isinstance(memory, EpisodicMemory):
        if memory.context:
            parts.insert(0, memory.context)
        parts += [p for p in (memory.agent_action, memory.outcome) if p]
    return "\n".join(parts)


def index_document(memory: Memory, vector: StoredVector) -> IndexDocument:
    event_start = event_end = None
    session_id = emotion = None
    status = None
    if isinstance(memory, EpisodicMemory):
        session_id, emotion = memory.session_id, memory.emotion
        if memory.event_time:
            event_start = min(r.start for r in memory.event_time)
            event_end = max(r.end for r in memory.event_time)
    elif isinstance(memory, SemanticMemory):
        status = memory.status
    return IndexDocument(
        memory_id=memory.memory_id,
        tenant_id=memory.tenant_id,
        user_id=memory.user_id,
        kind=memory.kind,
        scope=memory.scope,
        text=index_text(memory),
        vector=vector,
        occurred_at=memory.occurred_at,
        created_at=memory.created_at,
        category=memory.category,
        emotion=emotion,
        status=status,
        expires_at=memory.expires_at,
        event_start=event_start,
        event_end=event_end,
        session_id=session_id,
    )
