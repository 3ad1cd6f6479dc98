"""Forget: delete one memory, or erase a user and everything derived from them."""

from __future__ import annotations

import logging
from typing import Any

from hindsight.core.access import load_readable, require_write
from hindsight.core.errors import ForbiddenError
from hindsight.core.list_all import list_all
from hindsight.core.models import EpisodicMemory, ListQuery, MemoryKind, Principal, SemanticMemory
from hindsight.core.ports import Clock, KeptAnswers, MemoryWriter, RecordStore
from hindsight.core.retrieval.centering import UserMeans

logger = logging.getLogger(__name__)


class ForgetMemories:
    """Delete memories through the write policy, keeping derived facts consistent."""

    def __init__(
        self,
        records: RecordStore,
        writer: MemoryWriter,
        clock: Clock,
        answers: KeptAnswers | None = None,
        means: UserMeans | None = None,
    ) -> None:
        self.records = records
        self.writer = writer
        self.clock = clock
        self.answers = answers
        # the retrieve use case's kept means (core/retrieval/centering.py): an erased
        # user's goes too
        self.means = means

    def forget_memory(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        """Delete a memory. Facts that came only from a deleted episode go with it; facts
        with other sources stay, with the deleted id removed from their sources."""
        memory = load_readable(self.records, principal, memory_id)
        require_write(principal, memory.scope)
        tenant_id = principal.tenant_id
        self.writer.delete(tenant_id, [memory_id])
        deleted_facts: list[str] = []
        updated_facts: list[str] = []
        if isinstance(memory, EpisodicMemory):
            facts: list[SemanticMemory] = list_all(
                self.records,
                tenant_id,
                memory.user_id,
                ListQuery(kinds=frozenset({MemoryKind.SEMANTIC}), include_expired=True),
            )
            for fact in (f for f in facts if memory_id in f.source_memory_ids):
                remaining = [s for s in fact.source_memory_ids if s != memory_id]
                if not remaining:
                    self.writer.delete(tenant_id, [fact.memory_id])
                    deleted_facts.append(fact.memory_id)
                    continue
                changed = fact.model_copy(
                    update={"source_memory_ids": remaining, "updated_at": self.clock.now()}
                )
                self.writer.update(tenant_id, [changed])
                updated_facts.append(fact.memory_id)
        logger.info(
            "memory forgotten memory_id=%s derived_deleted=%d", memory_id, len(deleted_facts)
        )
        return {
            "status": "success",
            "memory_id": memory_id,
            "deleted_facts": deleted_facts,
            "updated_facts": updated_facts,
        }

    def erase_user(self, principal: Principal, user_id: str) -> dict[str, Any]:
        """Erase every memory, marker and cursor of a user (all scopes of the tenant)."""
        if "*" not in principal.write_scopes:
            raise ForbiddenError(
                "erasing a user deletes memories in every scope; use a key that may write all "
                "scopes (write_scopes ['*'])"
            )
        # the kept answers first: a retry arriving before the memories go stores again, and
        # what it stores goes with them
        answers = self.answers.forget_user(principal.tenant_id, user_id) if self.answers else 0
        deleted = self.writer.erase_user(principal.tenant_id, user_id)
        if self.means is not None:
            self.means.forget(principal.tenant_id, user_id)
        logger.info(
            "user erased tenant=%s deleted=%d kept_answers=%d",
            principal.tenant_id,
            deleted,
            answers,
        )
        return {"status": "success", "user_id": user_id, "deleted": deleted}
