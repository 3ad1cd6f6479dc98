"""Change what may be changed of a stored memory: today its pin (``PATCH /v1/memories/{id}``).

A pinned memory is never archived for lack of use (``core/lifecycle.py``) and keeps its
full weight in ranking. Pinning is a property of the record only: the search index does
not hold it (ranking reads it from the record), so the change is one record update; on AWS
the stream indexer sees the change like any other. An archived memory can be pinned too:
it stays archived (``restore`` brings it back), and is never archived again once restored.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hindsight.core.access import load_readable, require_write
from hindsight.core.models import Principal
from hindsight.core.ports import Clock, RecordStore
from hindsight.core.views import memory_view

logger = logging.getLogger(__name__)


class PatchMemoryCommand(BaseModel):
    """The fields of a memory a caller may change; any other field is refused (422)."""

    model_config = ConfigDict(extra="forbid")

    pinned: bool = Field(
        description="true: never archived for lack of use (and full weight in ranking); "
        "false: archived like any other episode once unused"
    )


class PatchMemory:
    """Pin or unpin a memory the caller may write."""

    def __init__(self, records: RecordStore, clock: Clock) -> None:
        self.records = records
        self.clock = clock

    def __call__(
        self, principal: Principal, memory_id: str, command: PatchMemoryCommand
    ) -> dict[str, Any]:
        memory = load_readable(self.records, principal, memory_id)
        require_write(principal, memory.scope)
        changed = memory.pinned != command.pinned
        if changed:
            memory = memory.model_copy(
                update={"pinned": command.pinned, "updated_at": self.clock.now()}
            )
            self.records.update(memory)
            logger.info(
                "memory patched tenant=%s memory_id=%s pinned=%s",
                principal.tenant_id,
                memory_id,
                command.pinned,
            )
        return {"status": "success", "changed": changed, "memory": memory_view(memory)}
