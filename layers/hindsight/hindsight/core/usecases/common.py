"""Pieces every use case shares: scope checks, index documents, embedding."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from hindsight.core.errors import ForbiddenError, NotFoundError, UnavailableError
from hindsight.core.models import (
    GLOBAL_SCOPE,
    EpisodicMemory,
    IndexDocument,
    Memory,
    Principal,
    SemanticMemory,
    StoredVector,
)
from hindsight.core.ports import Embedder


def readable_scopes(principal: Principal, requested: Iterable[str] | None) -> frozenset[str] | None:
    """The scopes a read may touch; None means every scope of the tenant.

    Asking for a scope the key may not read is an error, not a silent empty answer.
    """
    if requested:
        wanted = frozenset(requested)
        denied = sorted(s for s in wanted if not principal.can_read(s))
        if denied:
            raise ForbiddenError(
                f"this API key may not read scope(s) {', '.join(denied)}; "
                "ask for scopes your key allows or use a key that allows them"
            )
        return wanted
    if "*" in principal.read_scopes:
        return None
    return frozenset(principal.read_scopes | {GLOBAL_SCOPE})


def require_write(principal: Principal, scope: str) -> None:
    if not principal.can_write(scope):
        allowed = ", ".join(sorted(principal.write_scopes)) or "none"
        raise ForbiddenError(
            f"this API key may not write scope '{scope}' (it may write: {allowed}); "
            "omit scope to use the key's default or use a key that allows it"
        )


def load_readable(service_records, principal: Principal, memory_id: str) -> Memory:  # type: ignore[no-untyped-def]
    """A memory the principal may read, or NotFoundError / ForbiddenError."""
    memory = service_records.get(principal.tenant_id, memory_id)
    if memory is None:
        raise NotFoundError(f"memory {memory_id} was not found; check the id")
    if not principal.can_read(memory.scope):
        raise ForbiddenError(
            f"this API key may not read scope '{memory.scope}' of memory {memory_id}"
        )
    return memory


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


def embed_documents(embedder: Embedder, texts: Sequence[str]) -> list[StoredVector]:
    try:
        matrix = np.asarray(embedder.embed_documents(list(texts)), dtype=np.float32)
    except (RuntimeError, OSError, MemoryError) as exc:
        raise UnavailableError(
            f"the embedding model {embedder.model_name} failed ({exc}); retry later"
        ) from exc
    return [StoredVector(model=embedder.model_name, values=row) for row in matrix]


def embed_query(embedder: Embedder, text: str) -> StoredVector:
    try:
        values = np.asarray(embedder.embed_query(text), dtype=np.float32)
    except (RuntimeError, OSError, MemoryError) as exc:
        raise UnavailableError(
            f"the embedding model {embedder.model_name} failed ({exc}); retry later"
        ) from exc
    return StoredVector(model=embedder.model_name, values=values)


_NEUTRAL: dict[tuple[int, str], np.ndarray] = {}


def neutral_vector(embedder: Embedder) -> np.ndarray:
    """The embedding of an empty passage: what "unrelated" looks like for this model.

    Cosine similarities are not comparable across models (multilingual-e5 puts unrelated
    texts near 0.75, MiniLM near 0.1); a query's similarity to this vector is the floor
    from which its relevance is measured.
    """
    key = (id(embedder), embedder.model_name)
    if key not in _NEUTRAL:
        _NEUTRAL[key] = embed_documents(embedder, [""])[0].values
    return _NEUTRAL[key]
