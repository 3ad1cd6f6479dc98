"""Review: approve or reject a semantic memory waiting in the review queue."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from hindsight.core.errors import ConflictError
from hindsight.core.models import FactStatus, Principal, SemanticMemory
from hindsight.core.usecases.common import index_document, load_readable, require_write
from hindsight.core.views import memory_view

if TYPE_CHECKING:
    from hindsight.core.service import MemoryService

logger = logging.getLogger(__name__)


def review_fact(
    service: MemoryService, principal: Principal, memory_id: str, *, approve: bool
) -> dict[str, Any]:
    """Set a fact's status to approved or rejected; superseded facts cannot change."""
    memory = load_readable(service.records, principal, memory_id)
    if not isinstance(memory, SemanticMemory):
        raise ConflictError(
            f"memory {memory_id} is episodic; only semantic memories (facts) are reviewed"
        )
    require_write(principal, memory.scope)
    if memory.status == FactStatus.SUPERSEDED:
        raise ConflictError(
            f"fact {memory_id} was superseded by {memory.superseded_by}; review that fact instead"
        )
    target = FactStatus.APPROVED if approve else FactStatus.REJECTED
    if memory.status != target:
        memory = memory.model_copy(update={"status": target, "updated_at": service.clock.now()})
        service.records.update(memory)
        vectors = service.records.get_vectors(principal.tenant_id, [memory_id])
        if memory_id in vectors:
            service.index.upsert([index_document(memory, vectors[memory_id])])
        logger.info("fact reviewed memory_id=%s status=%s", memory_id, target.value)
    return {"status": "success", "memory": memory_view(memory)}
