"""Reading a user's memories page by page, for use cases that need all of a kind."""

from __future__ import annotations

from typing import Any

from hindsight.core.models import ListQuery
from hindsight.core.ports import RecordStore

# large pages: a few requests even on stores that filter by kind after reading (DynamoDB
# returned 49 requests for 10k memories with pages of 50)
PAGE = 500


def list_all(records: RecordStore, tenant_id: str, user_id: str, query: ListQuery) -> list[Any]:
    """Every memory of the user that passes ``query``, in the query's order."""
    items: list[Any] = []
    cursor: str | None = None
    while True:
        page = records.list(tenant_id, user_id, query, PAGE, cursor)
        items.extend(page.items)
        if not page.next_cursor:
            return items
        cursor = page.next_cursor
