"""Store episodic memories: validate, date, embed, deduplicate, write, index.

Everything is checked before anything is written. The record store is the source of
truth; if indexing fails after a write, the write is undone so that nothing is left
half-written (stored but unfindable).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from hindsight.core.commands import StoreMemoryCommand, StoreOutcome
from hindsight.core.errors import DuplicateMemoryError, HindsightError, InvalidRequestError
from hindsight.core.models import EpisodicMemory, ListQuery, MemoryKind, Principal
from hindsight.core.temporal import resolve_time_expressions
from hindsight.core.text import content_hash
from hindsight.core.usecases.common import (
    embed_documents,
    index_document,
    index_text,
    require_write,
)

if TYPE_CHECKING:
    from hindsight.core.service import MemoryService

logger = logging.getLogger(__name__)

MAX_FUTURE_SKEW = timedelta(days=1)
MAX_CONTEXT_CHARS = 600  # of the turn before; keeps the memory's own text in the model window


def _build_memory(
    service: MemoryService, principal: Principal, command: StoreMemoryCommand
) -> EpisodicMemory:
    now = service.clock.now()
    scope = command.scope or principal.default_scope
    require_write(principal, scope)
    occurred_at = command.occurred_at or now
    if occurred_at > now + MAX_FUTURE_SKEW:
        raise InvalidRequestError(
            "occurred_at is more than a day in the future; send the time the event "
            "happened (ISO 8601 with a timezone), or omit it for now"
        )
    expires_at = command.expires_at
    if command.ttl_seconds is not None:
        expires_at = now + timedelta(seconds=command.ttl_seconds)
    if expires_at is not None and expires_at <= now:
        raise InvalidRequestError(
            "expires_at is already past, so the memory could never be retrieved; "
            "send a future time or omit it"
        )
    return EpisodicMemory(
        memory_id=service.ids.new_id("mem"),
        tenant_id=principal.tenant_id,
        user_id=command.user_id,
        scope=scope,
        content=command.content,
        category=command.category,
        metadata=command.metadata,
        occurred_at=occurred_at,
        created_at=now,
        updated_at=now,
        expires_at=expires_at,
        session_id=command.session_id,
        speaker=command.speaker,
        participants=command.participants,
        emotion=command.emotion,
        agent_action=command.agent_action,
        outcome=command.outcome,
        event_time=resolve_time_expressions(command.content, occurred_at),
        content_hash=content_hash(command.content),
    )


def with_session_context(
    service: MemoryService, memories: Sequence[EpisodicMemory]
) -> list[EpisodicMemory]:
    """Give each episode of a session the turn before it as search context.

    A reply ("Yes, twice, both times in Lisbon") seldom repeats what it answers; searched
    together with the turn before it, it is found by the question's words and meaning.
    The turn before is the previous memory of the same (user, scope, session) in this
    batch, else the newest stored one that occurred no later than this one. On LoCoMo
    (bench/locomo.py) this raised evidence recall@10 from 0.72 to 0.78. Only the turn
    before is used: the one after is not known yet when a turn is stored.
    """
    previous: dict[tuple[str, str, str], str] = {}
    out: list[EpisodicMemory] = []
    for memory in memories:
        if not memory.session_id:
            out.append(memory)
            continue
        key = (memory.user_id, memory.scope, memory.session_id)
        before = previous[key] if key in previous else _stored_turn_before(service, memory)
        previous[key] = memory.content
        if before:
            memory = memory.model_copy(update={"context": before[:MAX_CONTEXT_CHARS]})
        out.append(memory)
    return out


def _stored_turn_before(service: MemoryService, memory: EpisodicMemory) -> str | None:
    page = service.records.list(
        memory.tenant_id,
        memory.user_id,
        ListQuery(
            kinds=frozenset({MemoryKind.EPISODIC}),
            scopes=frozenset({memory.scope}),
            session_id=memory.session_id,
            until=memory.occurred_at + timedelta(microseconds=1),
            now=memory.created_at,
        ),
        limit=1,
    )
    return page.items[0].content if page.items else None


def store_memories(
    service: MemoryService, principal: Principal, commands: Sequence[StoreMemoryCommand]
) -> list[StoreOutcome]:
    """Store each command as an episodic memory; one outcome per command, in order."""
    memories = [_build_memory(service, principal, command) for command in commands]
    memories = with_session_context(service, memories)
    vectors = embed_documents(service.embedder, [index_text(m) for m in memories])

    outcomes: list[StoreOutcome] = []
    written: list[EpisodicMemory] = []
    documents = []
    for memory, vector in zip(memories, vectors, strict=True):
        try:
            service.records.put(
                memory,
                vector,
                dedup_key=f"{memory.user_id}|{memory.scope}|{memory.content_hash}",
                dedup_window_seconds=service.policy.dedup_window_seconds,
            )
        except DuplicateMemoryError as duplicate:
            outcomes.append(
                StoreOutcome(
                    status="skipped", reason="duplicate", memory_id=duplicate.existing_memory_id
                )
            )
            continue
        except HindsightError:
            _undo(service, principal, written)
            raise
        written.append(memory)
        documents.append(index_document(memory, vector))
        outcomes.append(
            StoreOutcome(status="success", memory_id=memory.memory_id, event_time=memory.event_time)
        )

    if documents:
        try:
            service.index.upsert(documents)
        except HindsightError:
            _undo(service, principal, written)
            raise
    logger.info(
        "memories stored tenant=%s stored=%d skipped=%d",
        principal.tenant_id,
        len(written),
        len(memories) - len(written),
    )
    return outcomes


def _undo(service: MemoryService, principal: Principal, written: Sequence[EpisodicMemory]) -> None:
    """Compensate a failed store so that no record is left that the index does not know."""
    for memory in written:
        try:
            service.records.delete(principal.tenant_id, memory.memory_id)
        except HindsightError:
            logger.exception("undo failed memory_id=%s", memory.memory_id)
    if written:
        try:
            service.index.delete(principal.tenant_id, [m.memory_id for m in written])
        except HindsightError:
            logger.exception("undo of index failed")
