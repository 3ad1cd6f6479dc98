"""Forget: delete one memory, or erase a user and everything derived from them."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from hindsight.core.errors import ForbiddenError
from hindsight.core.models import EpisodicMemory, ListQuery, MemoryKind, Principal, SemanticMemory
from hindsight.core.usecases.common import index_document, load_readable, require_write

if TYPE_CHECKING:
    from hindsight.core.service import MemoryService

logger = logging.getLogger(__name__)

# facts citing a deleted episode are found by listing the user's facts; large pages keep
# that to a few requests on stores that filter by kind after reading (DynamoDB)
FACT_PAGE = 500


def forget_memory(service: MemoryService, principal: Principal, memory_id: str) -> dict[str, Any]:
    """Delete a memory. Facts that came only from a deleted episode go with it; facts
    with other sources stay, with the deleted id removed from their sources."""
    memory = load_readable(service.records, principal, memory_id)
    require_write(principal, memory.scope)
    tenant_id = principal.tenant_id
    service.records.delete(tenant_id, memory_id)
    service.index.delete(tenant_id, [memory_id])
    deleted_facts: list[str] = []
    updated_facts: list[str] = []
    if isinstance(memory, EpisodicMemory):
        cursor = None
        derived: list[SemanticMemory] = []
        while True:
            page = service.records.list(
                tenant_id,
                memory.user_id,
                ListQuery(kinds=frozenset({MemoryKind.SEMANTIC}), include_expired=True),
                FACT_PAGE,
                cursor,
            )
            derived += [f for f in page.items if memory_id in f.source_memory_ids]
            cursor = page.next_cursor
            if not cursor:
                break
        for fact in derived:
            remaining = [s for s in fact.source_memory_ids if s != memory_id]
            if not remaining:
                service.records.delete(tenant_id, fact.memory_id)
                service.index.delete(tenant_id, [fact.memory_id])
                deleted_facts.append(fact.memory_id)
                continue
            changed = fact.model_copy(
                update={"source_memory_ids": remaining, "updated_at": service.clock.now()}
            )
            service.records.update(changed)
            vectors = service.records.get_vectors(tenant_id, [fact.memory_id])
            if fact.memory_id in vectors:
                service.index.upsert([index_document(changed, vectors[fact.memory_id])])
            updated_facts.append(fact.memory_id)
    logger.info("memory forgotten memory_id=%s derived_deleted=%d", memory_id, len(deleted_facts))
    return {
        "status": "success",
        "memory_id": memory_id,
        "deleted_facts": deleted_facts,
        "updated_facts": updated_facts,
    }


def erase_user(service: MemoryService, principal: Principal, user_id: str) -> dict[str, Any]:
    """Erase every memory, marker and cursor of a user (all scopes of the tenant)."""
    if "*" not in principal.write_scopes:
        raise ForbiddenError(
            "erasing a user deletes memories in every scope; use a key that may write all "
            "scopes (write_scopes ['*'])"
        )
    deleted = service.records.erase_user(principal.tenant_id, user_id)
    service.index.delete_user(principal.tenant_id, user_id)
    logger.info("user erased tenant=%s deleted=%d", principal.tenant_id, deleted)
    return {"status": "success", "user_id": user_id, "deleted": deleted}
