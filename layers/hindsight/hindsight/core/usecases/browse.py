"""Browse: list a user's memories, read one memory, and where the user's reflection stands.

Filters every record store answers itself (kind, status, category, scope, session,
occurred time, stored since, order) go to the store; the others (emotion, stored until,
expiring before, text) are checked here on the pages the store returns. A listing that
checks some here reads at most ``SCAN_LIMIT`` memories a call: a page may then hold
fewer than ``limit`` items with ``has_more`` true, and ``next_cursor`` leads on from
the last memory read.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

from hindsight.core.access import load_readable, readable_scopes
from hindsight.core.commands import ListMemoriesCommand
from hindsight.core.errors import NotFoundError
from hindsight.core.models import ListQuery, Memory, MemoryKind, Page, Principal
from hindsight.core.ports import Clock, RecordStore
from hindsight.core.results import ListResult
from hindsight.core.usecases.reflect import REFLECTION_CURSOR
from hindsight.core.views import memory_view

SCAN_LIMIT = 2_000  # memories read at most by one listing with filters checked here
SCAN_PAGE = 200  # memories read from the store at a time while filtering here
WAITING_LIMIT = 50  # episodes counted at most by a reflection status


class ReflectionStatus(BaseModel):
    """Where a user's scheduled reflection stands (GET /v1/users/{user_id}/reflection)."""

    user_id: str
    cursor: datetime | None = Field(
        description="the stored time of the last episode reflection has distilled "
        "(null: never reflected); the next run reads episodes stored after it"
    )
    episodes_waiting: int = Field(
        description="episodes stored after the cursor, counted up to `waiting_limit`"
    )
    waiting_limit: int = Field(description="the count stops here (`episodes_waiting_more`)")
    episodes_waiting_more: bool = Field(description="more episodes than counted are waiting")


def _checked_here(command: ListMemoriesCommand) -> bool:
    return any(
        value is not None
        for value in (command.emotion, command.stored_until, command.expires_before, command.text)
    )


class _Admit:
    """The filters of a listing that the core checks on each memory."""

    def __init__(self, command: ListMemoriesCommand) -> None:
        self.emotion = command.emotion
        self.stored_until = command.stored_until
        self.expires_before = command.expires_before
        self.text = command.text.casefold() if command.text else None

    def __call__(self, memory: Memory) -> bool:
        if self.emotion is not None and getattr(memory, "emotion", None) != self.emotion:
            return False
        if self.stored_until is not None and memory.created_at >= self.stored_until:
            return False
        if self.expires_before is not None and (
            memory.expires_at is None or memory.expires_at >= self.expires_before
        ):
            return False
        return self.text is None or self.text in memory.content.casefold()


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
            created_after=_just_before(command.stored_since),
            include_expired=command.include_expired,
            now=self.clock.now(),
            oldest_first=command.order == "oldest",
        )
        if _checked_here(command):
            page = self._filtered_page(principal.tenant_id, command, query)
        else:
            page = self.records.list(
                principal.tenant_id, command.user_id, query, command.limit, command.cursor
            )
        return ListResult(
            results=[memory_view(m) for m in page.items],
            has_more=page.has_more,
            next_cursor=page.next_cursor,
        )

    def _filtered_page(
        self, tenant_id: str, command: ListMemoriesCommand, query: ListQuery
    ) -> Page:
        """Up to ``limit`` admitted memories, reading the store page by page.

        When a store page holds more admitted memories than are wanted, the same page is
        read again up to the last one kept, so that the store's own cursor leads on from
        exactly there.
        """
        admit = _Admit(command)
        kept: list[Memory] = []
        cursor = command.cursor
        scanned = 0
        while True:
            page = self.records.list(tenant_id, command.user_id, query, SCAN_PAGE, cursor)
            scanned += len(page.items)
            wanted = command.limit - len(kept)
            hits = [i for i, m in enumerate(page.items) if admit(m)]
            if len(hits) >= wanted:
                last = hits[wanted - 1]
                kept.extend(page.items[i] for i in hits[:wanted])
                if last + 1 == len(page.items):
                    return Page(items=kept, next_cursor=page.next_cursor)
                upto = self.records.list(tenant_id, command.user_id, query, last + 1, cursor)
                return Page(items=kept, next_cursor=upto.next_cursor)
            kept.extend(page.items[i] for i in hits)
            cursor = page.next_cursor
            if cursor is None or scanned >= SCAN_LIMIT:
                return Page(items=kept, next_cursor=cursor)

    def get_memory(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        memory = load_readable(self.records, principal, memory_id)
        if memory.is_expired(self.clock.now()):
            raise NotFoundError(f"memory {memory_id} has expired and is no longer available")
        return {"status": "success", "memory": memory_view(memory)}

    def reflection_status(self, principal: Principal, user_id: str) -> ReflectionStatus:
        """The user's reflection cursor and how many episodes wait for the next run
        (counted among the scopes the key may read)."""
        scopes = readable_scopes(principal, None)
        cursor = self.records.get_cursor(principal.tenant_id, user_id, REFLECTION_CURSOR)
        query = ListQuery(
            kinds=frozenset({MemoryKind.EPISODIC}),
            scopes=scopes,
            created_after=cursor,
            now=self.clock.now(),
        )
        page = self.records.list(principal.tenant_id, user_id, query, WAITING_LIMIT)
        return ReflectionStatus(
            user_id=user_id,
            cursor=cursor,
            episodes_waiting=len(page.items),
            waiting_limit=WAITING_LIMIT,
            episodes_waiting_more=page.has_more,
        )


def _just_before(moment: datetime | None) -> datetime | None:
    """``created_after`` is exclusive; ``stored_since`` includes its instant. Since the
    first instant of year 1 is since always: no bound."""
    if moment is None:
        return None
    try:
        return moment - timedelta(microseconds=1)
    except OverflowError:
        return None
