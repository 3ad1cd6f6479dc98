"""The embedded record store's rows: a memory to its ``memories`` columns and back, a vector
to its ``vectors`` row, and the SQL of a listing (``sqlite_record_store.py`` runs them)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import TypeAdapter

from hindsight.adapters.paging import decode_page_cursor, epoch_us, from_epoch_us
from hindsight.adapters.vector_codec import spans_text, vector_bytes
from hindsight.core.models import (
    EpisodicMemory,
    ListQuery,
    Memory,
    StoredVector,
    listed_status,
)

_MEMORY: TypeAdapter[Memory] = TypeAdapter(Memory)
_CHUNK = 500  # ids per IN (...) list, well under SQLite's parameter limit


def chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def marks(count: int) -> str:
    return ",".join("?" * count)


# what a read selects to build a memory: the body, and the counts kept beside it
MEMORY_COLUMNS = "body, hit_count, last_hit_at"


def memory_from_row(body: str, hit_count: int, last_hit_us: int | None) -> Memory:
    memory = _MEMORY.validate_json(body)
    memory.hit_count = hit_count
    memory.last_hit_at = None if last_hit_us is None else from_epoch_us(last_hit_us)
    return memory


def memory_columns(memory: Memory) -> dict[str, Any]:
    return {
        "tenant_id": memory.tenant_id,
        "memory_id": memory.memory_id,
        "user_id": memory.user_id,
        "kind": memory.kind.value,
        "scope": memory.scope,
        "status": status.value if (status := listed_status(memory)) is not None else None,
        "category": memory.category,
        "session_id": memory.session_id if isinstance(memory, EpisodicMemory) else None,
        "occurred_at": epoch_us(memory.occurred_at),
        "created_at": epoch_us(memory.created_at),
        "expires_at": None if memory.expires_at is None else epoch_us(memory.expires_at),
        "body": memory.model_dump_json(),
    }


def write_vector(conn: sqlite3.Connection, memory: Memory, vector: StoredVector) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO vectors (tenant_id, memory_id, model, dim, data, spans) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (
            memory.tenant_id,
            memory.memory_id,
            vector.model,
            vector.dim,
            vector_bytes(vector),
            spans_text(vector),
        ),
    )


def list_sql(
    columns: str,
    tenant_id: str,
    user_id: str,
    query: ListQuery,
    limit: int,
    cursor: str | None,
) -> tuple[str, tuple[Any, ...]]:
    """The SQL and parameters that select up to ``limit`` rows of ``columns`` of the user's
    memories that ``query`` admits, in list order, after ``cursor``."""
    clauses = ["tenant_id = ?", "user_id = ?"]
    params: list[Any] = [tenant_id, user_id]

    def within(column: str, values: frozenset[Any] | None) -> None:
        if values is not None:
            clauses.append(f"{column} IN ({marks(len(values))})")
            params.extend(str(v) for v in sorted(values))

    within("kind", query.kinds)
    within("status", query.statuses)
    within("category", query.categories)
    within("scope", query.scopes)
    if query.session_id is not None:
        clauses.append("session_id = ?")
        params.append(query.session_id)
    if query.since is not None:
        clauses.append("occurred_at >= ?")
        params.append(epoch_us(query.since))
    if query.until is not None:
        clauses.append("occurred_at < ?")
        params.append(epoch_us(query.until))
    if query.created_after is not None:
        clauses.append("created_at > ?")
        params.append(epoch_us(query.created_after))
    if query.now is not None and not query.include_expired:
        clauses.append("(expires_at IS NULL OR expires_at > ?)")
        params.append(epoch_us(query.now))
    direction = "ASC" if query.oldest_first else "DESC"
    if cursor is not None:
        occurred_us, memory_id = decode_page_cursor(cursor, query.oldest_first)
        clauses.append(f"(occurred_at, memory_id) {'>' if query.oldest_first else '<'} (?, ?)")
        params.extend((occurred_us, memory_id))
    sql = (
        f"SELECT {columns} FROM memories "
        f"WHERE {' AND '.join(clauses)} "
        f"ORDER BY occurred_at {direction}, memory_id {direction} LIMIT ?"
    )
    return sql, (*params, limit)
