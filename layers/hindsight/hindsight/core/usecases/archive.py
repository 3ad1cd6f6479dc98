"""The archive: unused episodes leave the hot search index but stay in the record store.

``archive_pass`` (the maintenance run, ``hindsight maintain`` and its schedule, the AWS
maintenance function) goes through every user with episodes and archives what
``core/lifecycle.py`` says is archivable: the record gets ``archived_at`` (the record
stores file it under status ``archived``, so ``status=archived`` lists it) and its index
documents are deleted (on AWS the stream indexer deletes them as well, from the record's
change). The vector stays with the record, so ``restore`` puts the memory back in the
index as it was, and counts the restore as a use (its ``last_hit_at``), so the next run
does not archive it again at once. Forget and erase-user delete archived memories like any
other (they are records). Index rebuilds leave archived memories out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from hindsight.core.access import load_readable, require_write
from hindsight.core.indexing import index_document
from hindsight.core.lifecycle import archivable, protected_sources
from hindsight.core.list_all import list_all
from hindsight.core.models import EpisodicMemory, ListQuery, Principal
from hindsight.core.policy import Policy
from hindsight.core.ports import Clock, RecordStore, SearchIndex
from hindsight.core.usecases.fan_out import CURSOR_TENANT, FIRST_RUN_SINCE
from hindsight.core.views import memory_view

logger = logging.getLogger(__name__)


@runtime_checkable
class Compactable(Protocol):
    """An adapter with files to compact (the embedded store and index); returns counts."""

    def compact(self) -> dict[str, int]: ...


@runtime_checkable
class Upgradable(Protocol):
    """An adapter holding data an older version laid out otherwise (a DynamoDB table made
    before an index): each run brings a share of it in step; returns counts."""

    def upgrade(self) -> dict[str, int]: ...


class ArchiveMemories:
    """Archive unused episodes (operator task, no principal); restore one (a caller's)."""

    def __init__(
        self, records: RecordStore, index: SearchIndex, clock: Clock, policy: Policy
    ) -> None:
        self.records = records
        self.index = index
        self.clock = clock
        self.policy = policy

    def archive_pass(self, renew: Callable[[], None] | None = None) -> dict[str, int]:
        """Archive every archivable episode of every user; returns counts."""
        counts = {"users": 0, "episodes": 0, "archived": 0}
        for tenant_id, user_id in self.records.users_with_episodes_since(FIRST_RUN_SINCE):
            if tenant_id == CURSOR_TENANT:
                continue
            if renew is not None:
                renew()
            episodes, archived = self._archive_user(tenant_id, user_id)
            counts["users"] += 1
            counts["episodes"] += episodes
            counts["archived"] += archived
        logger.info(
            "archive pass done users=%d episodes=%d archived=%d",
            counts["users"],
            counts["episodes"],
            counts["archived"],
        )
        return counts

    def maintain(self, renew: Callable[[], None] | None = None) -> dict[str, int]:
        """The maintenance run: the archive pass, then compaction of the adapters that
        keep files (the embedded store: SQLite files and the index's HNSW graphs) and the
        upgrade of those holding an older layout (``Upgradable``)."""
        counts = self.archive_pass(renew)
        tasks: list[Callable[[], dict[str, int]]] = []
        for adapter in (self.records, self.index):
            if isinstance(adapter, Compactable):
                tasks.append(adapter.compact)
            if isinstance(adapter, Upgradable):
                tasks.append(adapter.upgrade)
        for task in tasks:
            if renew is not None:
                renew()
            counts.update(task())
        return counts

    def _archive_user(self, tenant_id: str, user_id: str) -> tuple[int, int]:
        now = self.clock.now()
        memories = list_all(self.records, tenant_id, user_id, ListQuery(now=now))
        protected = protected_sources(memories)
        chosen = [m for m in memories if archivable(m, now, self.policy, protected)]
        for memory in chosen:
            self.records.update(memory.model_copy(update={"archived_at": now}))
        if chosen:
            self.index.delete(tenant_id, [m.memory_id for m in chosen])
        return sum(isinstance(m, EpisodicMemory) for m in memories), len(chosen)

    def restore(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        """Bring an archived memory back into the index (a live one is left as it is)."""
        memory = load_readable(self.records, principal, memory_id)
        require_write(principal, memory.scope)
        if memory.archived_at is None:
            return {"status": "success", "restored": False, "memory": memory_view(memory)}
        now = self.clock.now()
        restored = memory.model_copy(update={"archived_at": None})
        self.records.update(restored)
        self.records.record_hits(principal.tenant_id, {memory_id: 0}, now)  # a use, no hit
        vector = self.records.get_vectors(principal.tenant_id, [memory_id]).get(memory_id)
        if vector is not None:
            self.index.upsert([index_document(restored, vector)])
        restored.last_hit_at = now
        logger.info("memory restored tenant=%s memory_id=%s", principal.tenant_id, memory_id)
        return {"status": "success", "restored": True, "memory": memory_view(restored)}
