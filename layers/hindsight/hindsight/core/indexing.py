"""What the search index holds of a memory: the text it is searched by and its document."""

from __future__ import annotations

from collections.abc import Sequence

from hindsight.core.models import (
    EpisodicMemory,
    IndexChunk,
    IndexDocument,
    Memory,
    SemanticMemory,
    Span,
    StoredVector,
)
from hindsight.core.text import tokenize


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


def searched_text(memory: Memory) -> str:
    """Everything the keyword search matches a memory by: ``index_text`` and, for an
    episode, its store-time search keys (``IndexDocument.keys``)."""
    keys = memory.search_keys if isinstance(memory, EpisodicMemory) else []
    return "\n".join([index_text(memory), *keys])


def chunk_texts(memory: Memory, spans: Sequence[Span]) -> list[str]:
    """The text each chunk of a long memory is searched by.

    The content within the chunk's span; the session context (the turn before) goes before
    the first chunk and what the agent did and its outcome after the last, as in
    ``index_text`` for a memory searched whole.
    """
    texts = [memory.content[start:end] for start, end in spans]
    if isinstance(memory, EpisodicMemory) and texts:
        if memory.context:
            texts[0] = f"{memory.context}\n{texts[0]}"
        extras = [p for p in (memory.agent_action, memory.outcome) if p]
        if extras:
            texts[-1] = "\n".join([texts[-1], *extras])
    return texts


def index_document(memory: Memory, vector: StoredVector) -> IndexDocument:
    event_start = event_end = None
    session_id = emotion = None
    status = None
    keys: tuple[str, ...] = ()
    if isinstance(memory, EpisodicMemory):
        session_id, emotion = memory.session_id, memory.emotion
        keys = tuple(memory.search_keys)
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
        keys=keys,
        chunks=tuple(
            IndexChunk(text=text, values=row, span=span)
            for text, row, span in zip(
                chunk_texts(memory, vector.spans), vector.rows, vector.spans, strict=True
            )
        )
        if vector.chunked
        else (),
    )


def piece_terms(document: IndexDocument) -> list[list[str]]:
    """The keyword terms of each piece of a document (``IndexDocument.pieces``): its text's
    terms, then those of the memory's store-time search keys (``IndexDocument.keys``) that
    the piece lacks, once each. Every piece carries them, so a key finds a long memory
    whichever chunk is best; a key already in the text adds nothing (counted twice, it
    would lift every memory that names its topic)."""
    keys = list(dict.fromkeys(tokenize(" ".join(document.keys)))) if document.keys else []
    out = []
    for _, text, _, _ in document.pieces():
        words = tokenize(text)
        present = set(words)
        out.append(words + [key for key in keys if key not in present])
    return out
