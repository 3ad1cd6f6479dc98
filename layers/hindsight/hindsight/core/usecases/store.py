"""Store episodic memories: validate, screen secrets, date, embed, deduplicate, write, index.

Everything is checked before anything is written. Writing goes through the write policy
(``MemoryWriter``): the record store is the source of truth, and nothing is left
half-written (stored but neither findable nor repairable).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from hindsight.core.access import require_write
from hindsight.core.commands import StoreMemoryCommand
from hindsight.core.embedding import (
    DEFAULT_CHUNK_SIZES,
    MAX_CONTEXT_CHARS,
    ChunkSizes,
    context_fits,
    embed_memories,
)
from hindsight.core.errors import InvalidRequestError, PayloadTooLargeError
from hindsight.core.models import EpisodicMemory, ListQuery, Memory, MemoryKind, Principal
from hindsight.core.ports import (
    Clock,
    Embedder,
    IdGenerator,
    KeyExpander,
    MemoryWriter,
    NewRecord,
    RecordStore,
)
from hindsight.core.results import StoreOutcome
from hindsight.core.secrets import DEFAULT_SECRET_SCREEN, RedactionCount, SecretScreen
from hindsight.core.temporal import resolve_time_expressions
from hindsight.core.text import content_hash

logger = logging.getLogger(__name__)

MAX_FUTURE_SKEW = timedelta(days=1)


class StoreMemories:
    """Store each command as an episodic memory; one outcome per command, in order."""

    def __init__(
        self,
        records: RecordStore,
        writer: MemoryWriter,
        embedder: Embedder,
        clock: Clock,
        ids: IdGenerator,
        dedup_window_seconds: float,
        max_content_chars: int = 100_000,
        chunk_sizes: ChunkSizes = DEFAULT_CHUNK_SIZES,
        secrets: SecretScreen = DEFAULT_SECRET_SCREEN,
        keys: KeyExpander | None = None,
        session_context: str = "replies",
        context_tokens: int = 128,  # 0: a turn before of any length
    ) -> None:
        self.records = records
        self.writer = writer
        self.embedder = embedder
        self.clock = clock
        self.ids = ids
        self.dedup_window_seconds = dedup_window_seconds
        self.max_content_chars = max_content_chars
        self.chunk_sizes = chunk_sizes
        self.secrets = secrets
        self.keys = keys
        self.session_context = session_context
        self.context_tokens = context_tokens

    def __call__(
        self,
        principal: Principal,
        commands: Sequence[StoreMemoryCommand],
        memory_ids: Sequence[str] | None = None,
    ) -> list[StoreOutcome]:
        """``memory_ids``: the ids the memories get, one per command (a job names them
        when it is accepted, so that running it again finds what it wrote); default new."""
        for position, command in enumerate(commands):
            self.check_length(command.content, position if len(commands) > 1 else None)
        screened = [
            self.screen_secrets(principal, command, position if len(commands) > 1 else None)
            for position, command in enumerate(commands)
        ]
        commands = [command for command, _ in screened]
        named = memory_ids or [self.ids.new_id("mem") for _ in commands]
        memories = [
            self._build_memory(principal, command, memory_id)
            for command, memory_id in zip(commands, named, strict=True)
        ]
        memories = self.with_session_context(memories)
        memories = self.with_search_keys(memories)
        vectors = embed_memories(self.embedder, memories, self.chunk_sizes)
        ids = self.writer.add(
            [
                NewRecord(memory, vector, f"{memory.user_id}|{memory.scope}|{memory.content_hash}")
                for memory, vector in zip(memories, vectors, strict=True)
            ],
            self.dedup_window_seconds,
        )
        outcomes = [
            StoreOutcome(
                status="success",
                memory_id=memory.memory_id,
                event_time=memory.event_time,
                redacted=redacted,
            )
            if memory_id == memory.memory_id
            else StoreOutcome(
                status="skipped", reason="duplicate", memory_id=memory_id, redacted=redacted
            )
            for memory, memory_id, (_, redacted) in zip(memories, ids, screened, strict=True)
        ]
        stored = sum(1 for outcome in outcomes if outcome.status == "success")
        logger.info(
            "memories stored tenant=%s stored=%d skipped=%d",
            principal.tenant_id,
            stored,
            len(memories) - stored,
        )
        return outcomes

    def check_length(self, content: str, item: int | None = None) -> None:
        """PayloadTooLargeError (413) for content over the limit: nothing is cut silently."""
        if len(content) <= self.max_content_chars:
            return
        where = "content" if item is None else f"items[{item}].content"
        raise PayloadTooLargeError(
            f"{where} is {len(content):,} characters; the limit is {self.max_content_chars:,} "
            "(HINDSIGHT_MAX_CONTENT_CHARS). Split the text into several memories, or raise "
            "the limit on the server"
        )

    def screen_secrets(
        self, principal: Principal, command: StoreMemoryCommand, item: int | None = None
    ) -> tuple[StoreMemoryCommand, list[RedactionCount] | None]:
        """The command with secrets in its texts replaced (or ``SecretsRefusedError``, 422,
        when the caller's policy is refuse): before anything is embedded or written."""
        texts = (command.content, command.agent_action, command.outcome)
        where = "content" if item is None else f"items[{item}]"
        screened = self.secrets.screen(texts, principal.secrets, where)
        if not screened.counts:
            return command, None
        content, agent_action, outcome = screened.texts
        changed = command.model_copy(
            update={"content": content, "agent_action": agent_action, "outcome": outcome}
        )
        return changed, screened.redacted

    def _build_memory(
        self, principal: Principal, command: StoreMemoryCommand, memory_id: str
    ) -> EpisodicMemory:
        now = self.clock.now()
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
            memory_id=memory_id,
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
            pinned=command.pinned,
        )

    def with_search_keys(self, memories: Sequence[EpisodicMemory]) -> list[EpisodicMemory]:
        """Each memory with the search keys its content is about (``KeyExpander``): a query
        naming the topic ("dietary restrictions") then finds a memory that never names it
        ("I'm allergic to peanuts"). Derived from the content only, not the turn before."""
        if self.keys is None:
            return list(memories)
        expander = self.keys
        return [
            memory.model_copy(update={"search_keys": expander.keys(memory.content)})
            for memory in memories
        ]

    def with_session_context(self, memories: Sequence[EpisodicMemory]) -> list[EpisodicMemory]:
        """Give each reply in a session the turn it answers as search context.

        A reply ("Yes, twice, both times in Lisbon") seldom repeats what it answers; searched
        together with the turn before it, it is found by the question's words and meaning.
        The turn before is the previous memory of the same (user, scope, session) in this
        batch, else the newest stored one that occurred no later than this one
        (docs/decisions.md, "Ranking"). Only the turn before is used: the one after is not
        known yet when a turn is stored.

        With ``session_context`` "replies" (the default) a turn is a reply
        when it and the turn before have speakers and they differ. A memory without a
        speaker (an agent's note, a fact stated on its own) or one going on with its own
        speaker's turn mostly says what it means by itself, and the turn before pulls it
        towards another subject (the figures: docs/decisions.md). "all" gives every session
        memory its turn before; "off" none.

        A turn before of more than ``context_tokens`` (128) tokens is not a remark the turn
        depends on but an answer or a document of its own (an assistant's long reply, a
        pasted file); as context it would outweigh the turn and pull its vector towards
        another subject, so the turn is searched by itself (the figures: docs/decisions.md).
        """
        if self.session_context == "off":
            return list(memories)
        previous: dict[tuple[str, str, str], tuple[str, str | None]] = {}
        out: list[EpisodicMemory] = []
        for memory in memories:
            if not memory.session_id:
                out.append(memory)
                continue
            key = (memory.user_id, memory.scope, memory.session_id)
            before = previous.get(key)
            previous[key] = (memory.content, memory.speaker)
            if self.session_context == "replies" and not memory.speaker:
                out.append(memory)  # no speaker, no reply: the stored turn before is not read
                continue
            before = before or self._stored_turn_before(memory)
            if before and self._answers(memory, before):
                memory = memory.model_copy(update={"context": before[0][:MAX_CONTEXT_CHARS]})
            out.append(memory)
        return out

    def _answers(self, memory: EpisodicMemory, before: tuple[str, str | None]) -> bool:
        """Whether ``memory`` is searched with the turn ``before`` it (text, speaker)."""
        text, speaker_before = before
        if self.session_context != "all":
            if not memory.speaker or not speaker_before:
                return False
            if memory.speaker.strip().casefold() == speaker_before.strip().casefold():
                return False
        return context_fits(self.embedder, text, self.context_tokens)

    def _stored_turn_before(self, memory: EpisodicMemory) -> tuple[str, str | None] | None:
        turns = session_turns_until(self.records, memory, 1, now=memory.created_at)
        if not turns:
            return None
        turn = turns[0]
        return turn.content, turn.speaker if isinstance(turn, EpisodicMemory) else None


def session_turns_until(
    records: RecordStore,
    memory: EpisodicMemory,
    limit: int,
    *,
    now: datetime | None = None,
    include_expired: bool = False,
) -> Sequence[Memory]:
    """The newest ``limit`` stored turns of ``memory``'s session (same user and scope) that
    occurred no later than it (itself included, once stored): where its turn before is."""
    query = ListQuery(
        kinds=frozenset({MemoryKind.EPISODIC}),
        scopes=frozenset({memory.scope}),
        session_id=memory.session_id,
        until=memory.occurred_at + timedelta(microseconds=1),
        now=now,
        include_expired=include_expired,
    )
    return records.list(memory.tenant_id, memory.user_id, query, limit=limit).items
