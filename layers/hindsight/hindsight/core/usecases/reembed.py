"""Changing the embedding model: a migration to a new index generation, then one switch.

``hindsight reindex --re-embed`` runs ``ReEmbedMemories`` with the newly configured model.
The index being served is left alone while a new one is built beside it (embedded: a new
index directory; AWS: a new OpenSearch index behind the same alias), so retrieval keeps
answering from the old vectors with queries embedded by the old model. The steps:

1. ``begin``: a new generation for the model, or the one a previous run left half-built for
   the same model (its checkpoint says where it stopped: a run killed at any point resumes
   there instead of starting over).
2. Every memory, in (tenant, memory id) order, a batch at a time: embedded with the new
   model (long ones chunked for its window), the vector written to the record store (the
   record itself is read again just before, so a concurrent change is not undone), and the
   live ones written to the new generation. After each batch the checkpoint moves on.
3. Catch-up: what changed while it ran (stored, edited, approved, restored, archived,
   deleted) is brought in: records changed since the start, records whose vector is not of
   the new model yet, documents whose memory is gone.
4. ``switch``: one atomic step makes the new generation the served one (embedded: the
   manifest file replaced; AWS: one ``_aliases`` request). Servers notice it and embed
   queries with the new model from then on (``adapters/embedders/serving.py``).
5. A last catch-up for what was written between the previous one and the switch.

While it runs, a record re-indexed by the server (an approval, a restore) may already hold
a vector of the new model: the served index then keeps the document's old vector and takes
the rest of the change (``upsert`` of the adapters), so nothing is refused meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from hindsight.core.embedding import (
    DEFAULT_CHUNK_SIZES,
    MAX_CONTEXT_CHARS,
    ChunkSizes,
    context_fits,
    embed_memories,
)
from hindsight.core.indexing import index_document
from hindsight.core.models import EpisodicMemory, Memory, StoredVector
from hindsight.core.ports import Clock, Embedder, RecordStore, SearchIndex
from hindsight.core.usecases.store import session_turns_until

logger = logging.getLogger(__name__)

BATCH = 64
TURNS_BEFORE = 8  # turns of a session read to find the one a stored context was cut from
CATCH_UP_ROUNDS = 3
Key = tuple[str, str]  # (tenant_id, memory_id): the order of the migration and its cursor
Pair = tuple[Memory, StoredVector | None]
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class MigrationState:
    """A generation being built: for which model, since when, and how far it got."""

    generation: str
    model: str
    dimension: int
    started_at: datetime
    cursor: Key | None = None  # the last memory done; None: nothing yet
    done: int = 0


@runtime_checkable
class IndexMigration(Protocol):
    """The generations of one backend's search index (``adapters/embedded/generations.py``,
    ``adapters/aws/opensearch_index/migration.py``)."""

    def serving_model(self) -> str | None:
        """The embedding model of the generation served now (None: none recorded)."""

    def begin(
        self, model: str, dimension: int, embedder_spec: str, now: datetime
    ) -> MigrationState:
        """A new generation for ``model``, or the unfinished one for it (its checkpoint
        kept); an unfinished one for another model is dropped."""

    def target(self) -> SearchIndex | None:
        """The generation being built (after ``begin``); after ``switch``, the one served
        if this process may write it, else None (its server repairs it when it loads it:
        the records already hold the new vectors)."""

    def save_progress(self, cursor: Key, done: int) -> None:
        """Record durably that every memory up to ``cursor`` is in the new generation."""

    def target_keys(self) -> set[Key]:
        """(tenant, memory id) of every memory the new generation holds."""

    def switch(self) -> None:
        """Serve the new generation, atomically; the old one is retired."""


def _key(pair: Pair) -> Key:
    return (pair[0].tenant_id, pair[0].memory_id)


class ReEmbedMemories:
    """Operator task (no principal): migrate every memory to ``embedder``'s model."""

    def __init__(
        self,
        records: RecordStore,
        embedder: Embedder,
        migration: IndexMigration,
        clock: Clock,
        embedder_spec: str = "",
        chunk_sizes: ChunkSizes = DEFAULT_CHUNK_SIZES,
        batch: int = BATCH,
        context_tokens: int = 128,  # Policy.context_tokens; 0: a turn before of any length
    ) -> None:
        self.records = records
        self.embedder = embedder
        self.migration = migration
        self.clock = clock
        self.spec = embedder_spec or embedder.model_name
        self.chunk_sizes = chunk_sizes
        self.batch = batch
        self.context_tokens = context_tokens

    def __call__(self, progress: Progress | None = None) -> dict[str, Any]:
        """Build, catch up, switch; returns counts. ``progress(done, total)``."""
        model = self.embedder.model_name
        old_model = self.migration.serving_model()
        state = self.migration.begin(model, self.embedder.dimension, self.spec, self.clock.now())
        resumed = state.cursor is not None
        everything = sorted(self.records.iter_all(), key=_key)
        total = len(everything)
        todo = [p for p in everything if state.cursor is None or _key(p) > state.cursor]
        done = total - len(todo)
        if progress is not None:
            progress(done, total)
        for start in range(0, len(todo), self.batch):
            chunk = todo[start : start + self.batch]
            self._migrate([memory for memory, _ in chunk])
            done += len(chunk)
            self.migration.save_progress(_key(chunk[-1]), done)
            if progress is not None:
                progress(done, total)
        caught_up = self.catch_up(state.started_at)
        self.migration.switch()
        caught_up += self.catch_up(state.started_at, rounds=1)
        logger.info(
            "re-embedding done model=%s previous=%s memories=%d resumed=%s caught_up=%d",
            model,
            old_model,
            total,
            resumed,
            caught_up,
        )
        return {
            "status": "success",
            "memories": total,
            "re_embedded": len(todo),
            "resumed_after": total - len(todo) if resumed else 0,
            "caught_up": caught_up,
            "generation": state.generation,
            "embedding_model": model,
            "previous_embedding_model": old_model,
        }

    def catch_up(self, since: datetime, rounds: int = CATCH_UP_ROUNDS) -> int:
        """Bring in what changed while the migration ran; returns memories written."""
        written = 0
        for _ in range(rounds):
            everything = self.records.iter_all()
            stale = [m for m, v in everything if self._stale(m, v, since)]
            written += self._migrate(stale, reembed_all=False)
            dropped = self._drop_deleted({_key(pair) for pair in everything})
            if not stale and not dropped:
                break
        return written

    def _stale(self, memory: Memory, vector: StoredVector | None, since: datetime) -> bool:
        if vector is None or vector.model != self.embedder.model_name:
            return True
        return memory.updated_at >= since

    def _drop_deleted(self, stored: set[Key]) -> int:
        """Delete from the new generation what is no longer stored (at the last read; one
        deleted since is dropped by the next round or by the served index's writer)."""
        if self.migration.target() is None:
            return 0
        gone = self.migration.target_keys() - stored
        by_tenant: dict[str, list[str]] = {}
        for tenant_id, memory_id in gone:
            by_tenant.setdefault(tenant_id, []).append(memory_id)
        target = self.migration.target()
        for tenant_id, memory_ids in by_tenant.items():
            if target is not None:
                target.delete(tenant_id, memory_ids)
        return len(gone)

    def _migrate(self, memories: Sequence[Memory], reembed_all: bool = True) -> int:
        """Embed (where needed), write the vectors to the records, index the live ones."""
        fresh = self._reread(memories)
        if not fresh:
            return 0
        known = self._vectors_of(fresh)
        model = self.embedder.model_name
        pending = [m for m in fresh if reembed_all or _vector_model(known, m) != model]
        vectors = dict(known)
        if pending:
            trimmed = {_mkey(m): t for m in pending if (t := self._trimmed(m)) is not m}
            pending = [trimmed.get(_mkey(m), m) for m in pending]
            computed = embed_memories(self.embedder, pending, self.chunk_sizes)
            for memory, new_vector in zip(pending, computed, strict=True):
                if _mkey(memory) in trimmed:  # the record as just read, less its context
                    self.records.update(memory, new_vector)
                else:
                    self._write_vector(memory, new_vector)
                vectors[_mkey(memory)] = new_vector
            fresh = [trimmed.get(_mkey(m), m) for m in fresh]
        documents = [
            index_document(m, served)
            for m in fresh
            if m.archived_at is None
            and (served := vectors.get(_mkey(m))) is not None
            and served.model == model
        ]
        target = self.migration.target()
        if target is not None:
            target.upsert(documents)
        return len(fresh)

    def _trimmed(self, memory: Memory) -> Memory:
        """The memory less a stored turn before that is no longer context: one longer than
        ``context_tokens``, stored before that limit applied. The stored context is
        the turn's first ``MAX_CONTEXT_CHARS``; one cut there is judged by the whole turn,
        read from the session (kept as it is when that turn is gone)."""
        if not isinstance(memory, EpisodicMemory) or not memory.context or not self.context_tokens:
            return memory
        before = context = memory.context
        if len(context) >= MAX_CONTEXT_CHARS:
            before = self._turn_before(memory, context) or context
        if context_fits(self.embedder, before, self.context_tokens):
            return memory
        return memory.model_copy(update={"context": None})

    def _turn_before(self, memory: EpisodicMemory, context: str) -> str | None:
        """The whole text of the session's turn ``context`` was cut from, if still stored."""
        if not memory.session_id:
            return None
        turns = session_turns_until(self.records, memory, TURNS_BEFORE, include_expired=True)
        for turn in turns:
            if turn.memory_id != memory.memory_id and turn.content.startswith(context):
                return turn.content
        return None

    def _reread(self, memories: Sequence[Memory]) -> list[Memory]:
        """The records as they are now (a concurrent change must not be undone; a memory
        deleted meanwhile is left out)."""
        by_tenant: dict[str, list[str]] = {}
        for memory in memories:
            by_tenant.setdefault(memory.tenant_id, []).append(memory.memory_id)
        fresh: list[Memory] = []
        for tenant_id, memory_ids in by_tenant.items():
            fresh += self.records.get_many(tenant_id, memory_ids)
        return fresh

    def _vectors_of(self, memories: Iterable[Memory]) -> dict[Key, StoredVector | None]:
        found: dict[Key, StoredVector | None] = {}
        by_tenant: dict[str, list[str]] = {}
        for memory in memories:
            by_tenant.setdefault(memory.tenant_id, []).append(memory.memory_id)
            found[_mkey(memory)] = None
        for tenant_id, memory_ids in by_tenant.items():
            for memory_id, vector in self.records.get_vectors(tenant_id, memory_ids).items():
                found[(tenant_id, memory_id)] = vector
        return found

    def _write_vector(self, memory: Memory, vector: StoredVector) -> None:
        """The vector alone where the store can (no chance of undoing a concurrent change of
        the record), else the record as just read with its new vector."""
        replace_vector = getattr(self.records, "replace_vector", None)
        if replace_vector is not None:
            replace_vector(memory.tenant_id, memory.memory_id, vector)
        else:
            self.records.update(memory, vector)


def _mkey(memory: Memory) -> Key:
    return (memory.tenant_id, memory.memory_id)


def _vector_model(vectors: dict[Key, StoredVector | None], memory: Memory) -> str | None:
    vector = vectors.get(_mkey(memory))
    return None if vector is None else vector.model


class ServedIndex:
    """The generation served now, as the target of a repair after a switch: memories
    written with the old model while the switch happened are embedded again."""

    def __init__(self, index: SearchIndex, model: Callable[[], str | None]) -> None:
        self.index = index
        self._model = model

    def serving_model(self) -> str | None:
        return self._model()

    def begin(
        self, model: str, dimension: int, embedder_spec: str, now: datetime
    ) -> MigrationState:
        raise NotImplementedError("a served index is repaired, not migrated")

    def target(self) -> SearchIndex:
        return self.index

    def save_progress(self, cursor: Key, done: int) -> None:
        return None

    def target_keys(self) -> set[Key]:
        keys = getattr(self.index, "keys", None)
        return set(keys()) if keys is not None else set()

    def switch(self) -> None:
        return None


def repair_after_switch(
    records: RecordStore,
    index: SearchIndex,
    embedder: Embedder,
    clock: Clock,
    chunk_sizes: ChunkSizes = DEFAULT_CHUNK_SIZES,
    since: datetime | None = None,
) -> int:
    """Embed again, with the served model, every memory whose stored vector is of another
    model, index again those changed ``since`` (None: none), and drop what is gone;
    returns how many were written. The server runs it when it switches."""
    served = ServedIndex(index, lambda: embedder.model_name)
    use_case = ReEmbedMemories(records, embedder, served, clock, chunk_sizes=chunk_sizes)
    never = datetime.max.replace(tzinfo=clock.now().tzinfo)
    return use_case.catch_up(since or never, rounds=1)
