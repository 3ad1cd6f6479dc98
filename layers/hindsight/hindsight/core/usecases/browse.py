"""Browse: list a user's memories and read one memory."""

from __future__ import annotations

from typing import Any

from hindsight.core.access import load_readable, readable_scopes
from hindsight.core.commands import ListMemoriesCommand, ListResult
from hindsight.core.errors import NotFoundError
from hindsight.core.models import ListQuery, Principal
from hindsight.core.ports import Clock, RecordStore
from hindsight.core.views import memory_view


class BrowseMemories:
    """Read-only views of the record store, within the principal's scopes."""

    def __init__(self, records: RecordStore, clock: Clock) -> None:
        self.records = records
        self.clock = clock

    def list_memories(self, principal: Principal, command: ListMemoriesCommand) -> ListResult:
        scopes = readable_scopes(principal, [command.scope] if command.scope else None)
        query = ListQuery(
            kinds=frozenset({command.kind}) if command.kind else None,
            statuses=frozenset({command.status}) if command.status else None,
            categories=frozenset({command.category}) if command.category else None,
            scopes=scopes,
            session_id=command.session_id,
            since=command.since,
            until=command.until,
            include_expired=command.include_expired,
            now=self.clock.now(),
        )
        page = self.records.list(
            principal.tenant_id, command.user_id, query, command.limit, command.cursor
        )
        return ListResult(
            results=[memory_view(m) for m in page.items],
            has_more=page.has_more,
            next_cursor=page.next_cursor,
        )

    def get_memory(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        memory = load_readable(self.records, principal, memory_id)
        if memory.is_expired(self.clock.now()):
            raise NotFoundError(f"memory {memory_id} has expired and is no longer available")
        return {"status": "success", "memory": memory_view(memory)}
