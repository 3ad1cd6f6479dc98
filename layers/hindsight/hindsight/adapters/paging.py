"""Keyset paging every record store shares: exact microsecond keys and opaque cursors.

A page of a user's memories is ordered by (occurred_at, memory_id); its cursor is the
last key, so a page never repeats or skips an item whatever is written meanwhile.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from hindsight.core.errors import InvalidRequestError
from hindsight.core.models import ListQuery, Memory, Page

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
INVALID_CURSOR = "cursor is invalid; pass next_cursor exactly as returned"


def epoch_us(moment: datetime) -> int:
    """Exact integer microseconds since the epoch: sortable, comparable, lossless."""
    return (moment - EPOCH) // timedelta(microseconds=1)


def from_epoch_us(value: int) -> datetime:
    """The moment ``epoch_us`` made ``value`` from (UTC)."""
    return EPOCH + timedelta(microseconds=value)


def encode_page_cursor(occurred_us: int, memory_id: str, oldest_first: bool) -> str:
    """Opaque keyset cursor: urlsafe base64 of JSON of the last (occurred_at, memory_id)."""
    payload = json.dumps([occurred_us, memory_id, "asc" if oldest_first else "desc"])
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def decode_page_cursor(cursor: str, oldest_first: bool) -> tuple[int, str]:
    """The (occurred_us, memory_id) a cursor continues after; InvalidRequestError if bad."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        occurred_us, memory_id, direction = json.loads(base64.urlsafe_b64decode(padded))
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidRequestError(INVALID_CURSOR) from exc
    valid = (
        isinstance(occurred_us, int)
        and isinstance(memory_id, str)
        and direction == ("asc" if oldest_first else "desc")
    )
    if not valid:
        raise InvalidRequestError(INVALID_CURSOR)
    return occurred_us, memory_id


def page_of(memories: Iterable[Memory], query: ListQuery, limit: int, cursor: str | None) -> Page:
    keyed = sorted(
        ((epoch_us(m.occurred_at), m.memory_id, m) for m in memories),
        key=lambda item: (item[0], item[1]),
        reverse=not query.oldest_first,
    )
    if cursor is not None:
        after = decode_page_cursor(cursor, query.oldest_first)
        if query.oldest_first:
            keyed = [item for item in keyed if (item[0], item[1]) > after]
        else:
            keyed = [item for item in keyed if (item[0], item[1]) < after]
    limit = max(1, limit)
    chosen = keyed[:limit]
    next_cursor = None
    if len(keyed) > limit:
        last = chosen[-1]
        next_cursor = encode_page_cursor(last[0], last[1], query.oldest_first)
    return Page(items=[item[2] for item in chosen], next_cursor=next_cursor)
