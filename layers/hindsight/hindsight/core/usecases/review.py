"""Review: approve or reject a semantic memory waiting in the review queue."""

from __future__ import annotations

import logging
from typing import Any

from hindsight.core.access import load_readable, require_write
from hindsight.core.errors import ConflictError
from hindsight.core.models import FactStatus, Principal, SemanticMemory
from hindsight.core.ports import Clock, MemoryWriter, RecordStore
from hindsight.core.views import memory_view

logger = logging.getLogger(__name__)


class ReviewFacts:
    """Set a fact's status to approved or rejected; superseded facts cannot change."""

    def __init__(self, records: RecordStore, writer: MemoryWriter, clock: Clock) -> None:
        self.records = records
        self.writer = writer
        self.clock = clock

    def __call__(self, principal: Principal, memory_id: str, *, approve: bool) -> dict[str, Any]:
        memory = load_readable(self.records, principal, memory_id)
        if not isinstance(memory, SemanticMemory):
            raise ConflictError(
                f"memory {memory_id} is episodic; only semantic memories (facts) are reviewed"
            )
        require_write(principal, memory.scope)
        if memory.status == FactStatus.SUPERSEDED:
            raise ConflictError(
                f"fact {memory_id} was superseded by {memory.superseded_by}, a newer memory "
                "of what it says; review the fact that holds now instead"
            )
        target = FactStatus.APPROVED if approve else FactStatus.REJECTED
        if memory.status != target:
            memory = memory.model_copy(update={"status": target, "updated_at": self.clock.now()})
            self.writer.update(principal.tenant_id, [memory])
            logger.info("fact reviewed memory_id=%s status=%s", memory_id, target.value)
        return {"status": "success", "memory": memory_view(memory)}
