"""Reflect: distil a user's new episodic memories into semantic memories (facts).

Episodes created after the user's reflection cursor (or ``since``) are grouped by
scope, in chunks of ``batch_size`` in time order, and handed to the reflector; a long
episode goes as pieces of at most ``PIECE_CHARS`` characters, each with the episode's id. Each
extracted fact is merged with the user's existing facts (``hindsight.core.fact_merge``):
a repeat, a contradiction that supersedes, or a new fact pending review.

With ``dry_run`` nothing is written and the cursor stays where it was.

Concurrency. A reflection that writes holds its user's lease (``RecordStore.acquire_lease``,
atomic in every record store, so it holds across threads, processes and Lambda
invocations) from reading the cursor to moving it: a second reflection of the user waits
(up to ``LEASE_WAIT_SECONDS``) and then reflects on what the first left, so no episode is
turned into facts twice. The lease is renewed between reflector calls and expires by
itself if its holder dies. A reflection is not a lock on the user: an erase or a delete may
remove episodes while the reflector reads them, so the facts written are checked against
their sources afterwards and those whose every source is gone are deleted again.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta

from hindsight.core import chunking
from hindsight.core.commands import ReflectCommand
from hindsight.core.embedding import embed_documents
from hindsight.core.errors import ConflictError, ForbiddenError, HindsightError
from hindsight.core.fact_merge import FactMerger
from hindsight.core.list_all import list_all
from hindsight.core.models import (
    EpisodicMemory,
    FactStatus,
    ListQuery,
    MemoryKind,
    Principal,
    ReflectionOutput,
    ReflectorUsage,
    SemanticMemory,
    StoredVector,
)
from hindsight.core.ports import (
    Clock,
    Embedder,
    IdGenerator,
    MemoryWriter,
    NewRecord,
    RecordStore,
    Reflector,
    RunScopedReflector,
    VectorReusingReflector,
)
from hindsight.core.results import LlmUsage, ReflectResult
from hindsight.core.usecases.reflect_cursors import (
    REFLECTION_CURSOR,
    read_progress,
    write_progress,
)
from hindsight.core.views import memory_view

logger = logging.getLogger(__name__)

__all__ = ["REFLECTION_CURSOR", "ReflectOnMemories"]

REFLECTION_LEASE = "reflection"
# how long a reflection holds its user's lease without renewing it (it renews between
# reflector calls); a reflection that died frees the user after this
LEASE_SECONDS = 900.0
# how long a second reflection of the same user waits for the first before answering 409
LEASE_WAIT_SECONDS = 10.0
# a long episode (a pasted document) reaches the reflector in pieces of at most this many
# characters, each carrying the episode's id: what a reflector prompt shows of one episode
PIECE_CHARS = 2_000


def llm_usage(usages: list[ReflectorUsage]) -> LlmUsage | None:
    """The LLM's calls, tokens and failures over a run's reflector calls; None if no
    reflector call reported any (an offline reflector)."""
    if not usages:
        return None
    return LlmUsage(
        calls=sum(u.calls for u in usages),
        input_tokens=sum(u.input_tokens for u in usages),
        output_tokens=sum(u.output_tokens for u in usages),
        token_budget=usages[-1].token_budget,
        budget_exhausted=any(u.budget_exhausted for u in usages),
        failures=list(dict.fromkeys(f for u in usages for f in u.failures)),
    )


def in_pieces(episodes: list[EpisodicMemory], piece_chars: int) -> list[EpisodicMemory]:
    """Episodes with each long one replaced by its pieces (split at sentences and
    paragraphs, ``core/chunking.py``), in order; a piece keeps the episode's id, so facts
    drawn from it cite the episode."""
    out: list[EpisodicMemory] = []
    for episode in episodes:
        if len(episode.content) <= piece_chars:
            out.append(episode)
            continue
        for start, end in chunking.split(episode.content, len, piece_chars):
            out.append(episode.model_copy(update={"content": episode.content[start:end]}))
    return out


class ReflectOnMemories:
    """Reflect on one user's new episodes; writes facts through the write policy."""

    def __init__(
        self,
        records: RecordStore,
        writer: MemoryWriter,
        embedder: Embedder,
        reflector: Reflector,
        clock: Clock,
        ids: IdGenerator,
        batch_size: int,
        auto_approve_high_confidence: bool,
    ) -> None:
        self.records = records
        self.writer = writer
        self.embedder = embedder
        self.reflector = reflector
        self.clock = clock
        self.ids = ids
        self.batch_size = max(1, batch_size)
        self.auto_approve_high_confidence = auto_approve_high_confidence

    def __call__(self, principal: Principal, command: ReflectCommand) -> ReflectResult:
        if command.dry_run:  # writes nothing: needs no lease
            return self._reflect(principal, command, lambda: None)
        with self._lease(principal.tenant_id, command.user_id) as renew:
            return self._reflect(principal, command, renew)

    @contextmanager
    def _lease(self, tenant_id: str, user_id: str) -> Iterator[Callable[[], None]]:
        """Hold the user's reflection lease (waiting for another holder up to
        LEASE_WAIT_SECONDS); yields a function that renews it."""
        holder = uuid.uuid4().hex

        def take() -> bool:
            now = self.clock.now()
            until = now + timedelta(seconds=LEASE_SECONDS)
            return self.records.acquire_lease(
                tenant_id, user_id, REFLECTION_LEASE, holder, until, now
            )

        deadline, pause = time.monotonic() + LEASE_WAIT_SECONDS, 0.01
        while not take():
            if time.monotonic() >= deadline:
                raise ConflictError(
                    f"a reflection of user {user_id} is already running; retry when it has "
                    f"finished (one whose process died frees the user after "
                    f"{LEASE_SECONDS / 60:.0f} minutes)"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

        def renew() -> None:
            if not take():
                raise ConflictError(
                    f"this reflection of user {user_id} ran longer than its lease "
                    f"({LEASE_SECONDS / 60:.0f} minutes between reflector calls) and another "
                    "reflection took over; nothing was written, retry"
                )

        try:
            yield renew
        finally:
            try:
                self.records.release_lease(tenant_id, user_id, REFLECTION_LEASE, holder)
            except HindsightError:  # it expires by itself
                logger.warning("reflection lease not released user_id=%s", user_id)

    def _reflect(
        self, principal: Principal, command: ReflectCommand, renew: Callable[[], None]
    ) -> ReflectResult:
        tenant_id, user_id = principal.tenant_id, command.user_id
        now = self.clock.now()
        since = command.since or self.records.get_cursor(tenant_id, user_id, REFLECTION_CURSOR)
        episodes: list[EpisodicMemory] = list_all(
            self.records,
            tenant_id,
            user_id,
            ListQuery(
                kinds=frozenset({MemoryKind.EPISODIC}),
                created_after=since,
                now=now,
                oldest_first=True,
            ),
        )
        progress = read_progress(
            self.records,
            tenant_id,
            user_id,
            since,
            episodes,
            use_scope_cursors=command.since is None,
        )
        readable, partial = progress.to_reflect(principal)
        if partial and not readable:
            raise ForbiddenError(
                "this API key may not read any scope this user's new memories are in; "
                "reflect with a key that can read them"
            )
        merger = self._merger(tenant_id, user_id, now)
        # a reflector with per-run state (an LLM's token budget) gives one for this run
        reflector = (
            self.reflector.for_run()
            if isinstance(self.reflector, RunScopedReflector)
            else self.reflector
        )
        llm = llm_usage(self._distil(tenant_id, user_id, readable, merger, renew, reflector))

        cursor = max((e.created_at for e in readable), default=since)
        created = list(merger.created.values())
        if not command.dry_run:
            renew()
            self._write(merger)
            created, present = self._keep_sourced(tenant_id, created, readable)
            if present:
                write_progress(
                    self.records, tenant_id, user_id, progress, readable, partial=partial
                )

        logger.info(
            "reflection done tenant=%s episodes=%d created=%d updated=%d superseded=%d "
            "dry_run=%s llm_calls=%d input_tokens=%d output_tokens=%d llm_failures=%d "
            "budget_exhausted=%s",
            tenant_id,
            len(readable),
            len(created),
            len(merger.updated),
            len(merger.superseded),
            command.dry_run,
            llm.calls if llm else 0,
            llm.input_tokens if llm else 0,
            llm.output_tokens if llm else 0,
            len(llm.failures) if llm else 0,
            bool(llm and llm.budget_exhausted),
        )
        return ReflectResult(
            reflector=self.reflector.label,
            episodes_considered=len(readable),
            created=[memory_view(f) for f in created],
            updated=[memory_view(f) for f in merger.updated.values()],
            superseded=[memory_view(f) for f in merger.superseded.values()],
            pending=[
                memory_view(f)
                for f in [*created, *merger.updated.values()]
                if f.status == FactStatus.PENDING
            ],
            dry_run=command.dry_run,
            cursor=cursor if not command.dry_run else since,
            llm=llm,
        )

    def _distil(
        self,
        tenant_id: str,
        user_id: str,
        readable: list[EpisodicMemory],
        merger: FactMerger,
        renew: Callable[[], None],
        reflector: Reflector,
    ) -> list[ReflectorUsage]:
        """Hand the episodes to the reflector scope by scope, batch by batch, and merge
        what it extracts; the lease is renewed before each reflector call. Returns what
        each call reported of its LLM use."""
        usages: list[ReflectorUsage] = []
        by_scope: dict[str, list[EpisodicMemory]] = defaultdict(list)
        for episode in readable:
            by_scope[episode.scope].append(episode)
        for scope, scoped in by_scope.items():
            scoped.sort(key=lambda e: (e.occurred_at, e.memory_id))
            whole = {e.memory_id: e for e in scoped}
            pieces = in_pieces(scoped, PIECE_CHARS)
            for start in range(0, len(pieces), self.batch_size):
                chunk = pieces[start : start + self.batch_size]
                renew()
                existing = merger.live_facts(scope)
                output = self._reflect_chunk(tenant_id, user_id, chunk, whole, existing, reflector)
                if output.usage is not None:
                    usages.append(output.usage)
                if not output.facts:
                    continue
                by_id = {e.memory_id: whole[e.memory_id] for e in chunk}
                vectors = embed_documents(self.embedder, [f.content for f in output.facts])
                for extracted, vector in zip(output.facts, vectors, strict=True):
                    merger.merge(scope, extracted, vector, by_id, output.reflector)
            merger.retire_outdated(scope, scoped)
        return usages

    def _reflect_chunk(
        self,
        tenant_id: str,
        user_id: str,
        chunk: list[EpisodicMemory],
        whole: dict[str, EpisodicMemory],
        existing: list[SemanticMemory],
        reflector: Reflector,
    ) -> ReflectionOutput:
        """One reflector call; a reflector that reuses stored vectors gets those of the
        episodes handed over whole (a piece of a long episode is not what was embedded) and
        stored without the turn before as context (their vector is of both turns, never
        one statement's, so they are not read)."""
        if not isinstance(reflector, VectorReusingReflector):
            return reflector.reflect(user_id, chunk, existing)
        ids = [
            e.memory_id for e in chunk if not e.context and e.content == whole[e.memory_id].content
        ]
        vectors = self.records.get_vectors(tenant_id, list(dict.fromkeys(ids))) if ids else {}
        return reflector.reflect_with_vectors(user_id, chunk, existing, vectors)

    def _keep_sourced(
        self, tenant_id: str, created: list[SemanticMemory], readable: list[EpisodicMemory]
    ) -> tuple[list[SemanticMemory], bool]:
        """Delete again the new facts whose every source episode was deleted (or the user
        erased) while the reflector ran; (the facts that stand, whether the newest episode
        reflected on still exists, i.e. whether the cursor may move)."""
        if not readable:
            return created, False
        newest = max(readable, key=lambda e: (e.created_at, e.memory_id)).memory_id
        sources = {source for fact in created for source in fact.source_memory_ids}
        present = {
            m.memory_id for m in self.records.get_many(tenant_id, sorted(sources | {newest}))
        }
        orphans = [f.memory_id for f in created if not present.intersection(f.source_memory_ids)]
        if orphans:
            logger.info("reflection facts orphaned by a delete or erase count=%d", len(orphans))
            self.writer.delete(tenant_id, orphans)
        return [f for f in created if f.memory_id not in orphans], newest in present

    def _merger(self, tenant_id: str, user_id: str, now: datetime) -> FactMerger:
        """A merger holding the user's live (pending and approved) facts and their vectors."""
        live: list[SemanticMemory] = list_all(
            self.records,
            tenant_id,
            user_id,
            ListQuery(
                kinds=frozenset({MemoryKind.SEMANTIC}),
                statuses=frozenset({FactStatus.PENDING, FactStatus.APPROVED}),
                now=now,
            ),
        )
        vectors = self.records.get_vectors(tenant_id, [f.memory_id for f in live])

        def sources(ids: Sequence[str]) -> dict[str, tuple[EpisodicMemory, StoredVector | None]]:
            episodes = [
                m for m in self.records.get_many(tenant_id, ids) if isinstance(m, EpisodicMemory)
            ]
            stored = self.records.get_vectors(tenant_id, [e.memory_id for e in episodes])
            return {e.memory_id: (e, stored.get(e.memory_id)) for e in episodes}

        return FactMerger(
            tenant_id,
            user_id,
            now,
            live,
            dict(vectors),
            lambda: self.ids.new_id("fact"),
            self.auto_approve_high_confidence,
            sources,
        )

    def _write(self, merger: FactMerger) -> None:
        """Persist created, updated and superseded facts through the write policy, whole:
        if the updates fail (the index is down, or a fact was forgotten meanwhile), the
        facts created in this run are deleted again, so that no new fact is left beside
        the old one it supersedes; the cursor has not moved, so the next run retries."""
        created = list(merger.created.values())
        self.writer.add([NewRecord(f, merger.new_vectors[f.memory_id]) for f in created])
        try:
            self.writer.update(
                merger.tenant_id, [*merger.updated.values(), *merger.superseded.values()]
            )
        except HindsightError:
            if created:
                try:
                    self.writer.delete(merger.tenant_id, [f.memory_id for f in created])
                except HindsightError:
                    logger.exception("undo of created facts failed count=%d", len(created))
            raise
