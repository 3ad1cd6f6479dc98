"""RecordStore on one SQLite file (WAL mode): the embedded backend's source of truth.

Schema (``PRAGMA user_version`` = 1); times are integer microseconds since the epoch (UTC),
so they sort and compare exactly:

- ``memories``: ``tenant_id``, ``memory_id`` (primary key pair), ``user_id``, ``kind``,
  ``scope``, ``status`` (facts only), ``category``, ``session_id`` (episodes only),
  ``occurred_at``, ``created_at``, ``expires_at`` (NULL: never), ``body`` (the whole
  memory as pydantic JSON). Indexed by (tenant, user, occurred_at, memory_id) for
  paging, (tenant, user, created_at) and (kind, created_at) for reflection.
- ``vectors``: ``tenant_id``, ``memory_id``, ``model``, ``dim``, ``data`` (float32 bytes,
  one row per chunk of a long memory) and ``spans`` (the chunks' spans as JSON, NULL for a
  memory embedded whole; ``adapters/vector_codec.py``; added to older files on open).
- ``dedup_markers``: ``tenant_id``, ``user_id``, ``key`` (primary key), ``memory_id``,
  ``occurred_at``; indexed by (tenant, memory_id) so deleting a memory frees its marker.
- ``cursors``: ``tenant_id``, ``user_id``, ``name`` (primary key), ``value``.
- ``leases``: ``tenant_id``, ``user_id``, ``name`` (primary key), ``holder``, ``until``
  (e.g. the lease one reflection of a user holds while it runs; added to older files on
  open by ``CREATE TABLE IF NOT EXISTS``).

Connections come from a small pool (reads run concurrently under WAL); writes are
serialised by a lock and ``BEGIN IMMEDIATE``, which also guards against a second
process writing the same file.
"""

from __future__ import annotations

import builtins
import logging
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from hindsight.adapters.backend_rules import already_exists
from hindsight.adapters.embedded import compaction
from hindsight.adapters.embedded.sqlite_files import (
    open_connection,
    scrub,
    unavailable_on_failure,
)
from hindsight.adapters.embedded.sqlite_record_rows import (
    MEMORY_COLUMNS,
    chunks,
    list_sql,
    marks,
    memory_columns,
    memory_from_row,
)
from hindsight.adapters.embedded.sqlite_record_rows import write_vector as _write_vector
from hindsight.adapters.embedded.sqlite_record_schema import create_or_migrate
from hindsight.adapters.paging import (
    encode_page_cursor,
    epoch_us,
    from_epoch_us,
)
from hindsight.adapters.vector_codec import decode_vector, spans_text, vector_bytes
from hindsight.core.errors import (
    DuplicateMemoryError,
    NotFoundError,
    UnavailableError,
)
from hindsight.core.models import (
    ListQuery,
    Memory,
    MemoryKind,
    Page,
    StoredVector,
)
from hindsight.core.ports import NewRecord

logger = logging.getLogger(__name__)

_IDLE_CONNECTIONS = 8


class SqliteRecordStore:
    """RecordStore in a SQLite database file; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._pool_lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._write_lock = threading.Lock()
        self._closed = False
        with self._translate():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connection() as conn:
                create_or_migrate(conn)

    # --- plumbing ------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        return open_connection(self.path)

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        if self._closed:
            raise UnavailableError(f"the SQLite store at {self.path} is closed; restart")
        with self._pool_lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._open()
        try:
            yield conn
        finally:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    conn.close()
                    conn = self._open()
            with self._pool_lock:
                if len(self._idle) < _IDLE_CONNECTIONS and not self._closed:
                    self._idle.append(conn)
                    conn = None
            if conn is not None:
                conn.close()

    def _translate(self) -> AbstractContextManager[None]:
        return unavailable_on_failure("SQLite store", self.path, self.path)

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._translate(), self._connection() as conn:
            yield conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One serialised IMMEDIATE transaction: committed on success, else rolled back."""
        with self._translate(), self._write_lock, self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # --- writes ----------------------------------------------------------------------
    def put(
        self,
        memory: Memory,
        vector: StoredVector | None = None,
        dedup_key: str | None = None,
        dedup_window_seconds: float = 0.0,
    ) -> None:
        with self._write() as conn:
            self._insert(conn, memory, vector, dedup_key, dedup_window_seconds)

    def put_many(
        self, records: Sequence[NewRecord], dedup_window_seconds: float = 0.0
    ) -> builtins.list[str]:
        """Put every record in one transaction: a batch is stored whole or not at all, even
        when the process dies in the middle of it (the write policy uses this where a store
        offers it). One id per record, in order: its own if written, the existing memory's
        if its dedup key claimed a recent duplicate (as ``put`` would raise); any other
        error writes none of them."""
        ids: builtins.list[str] = []
        with self._write() as conn:
            for record in records:
                try:
                    self._insert(
                        conn,
                        record.memory,
                        record.vector,
                        record.dedup_key,
                        dedup_window_seconds,
                    )
                except DuplicateMemoryError as duplicate:
                    ids.append(duplicate.existing_memory_id)
                    continue
                ids.append(record.memory.memory_id)
        return ids

    def _insert(
        self,
        conn: sqlite3.Connection,
        memory: Memory,
        vector: StoredVector | None,
        dedup_key: str | None,
        dedup_window_seconds: float,
    ) -> None:
        row = memory_columns(memory)
        row["hit_count"] = memory.hit_count  # an import keeps its counts; else 0
        row["last_hit_at"] = None if memory.last_hit_at is None else epoch_us(memory.last_hit_at)
        exists = conn.execute(
            "SELECT 1 FROM memories WHERE tenant_id = ? AND memory_id = ?",
            (memory.tenant_id, memory.memory_id),
        ).fetchone()
        if exists:
            raise already_exists(memory)
        if dedup_key is not None:
            self._claim_marker(conn, memory, row, dedup_key, dedup_window_seconds)
        conn.execute(
            f"INSERT INTO memories ({', '.join(row)}) VALUES ({marks(len(row))})",
            tuple(row.values()),
        )
        if vector is not None:
            _write_vector(conn, memory, vector)

    def _claim_marker(
        self,
        conn: sqlite3.Connection,
        memory: Memory,
        row: dict[str, Any],
        dedup_key: str,
        window_seconds: float,
    ) -> None:
        marked = conn.execute(
            "SELECT m.memory_id, m.occurred_at, m.expires_at FROM dedup_markers d "
            "JOIN memories m ON m.tenant_id = d.tenant_id AND m.memory_id = d.memory_id "
            "WHERE d.tenant_id = ? AND d.user_id = ? AND d.key = ?",
            (memory.tenant_id, memory.user_id, dedup_key),
        ).fetchone()
        if marked is not None:
            existing_id, occurred_us, expires_us = marked
            alive = expires_us is None or expires_us > row["created_at"]
            gap_seconds = abs(row["occurred_at"] - occurred_us) / 1_000_000
            if alive and gap_seconds < window_seconds:
                raise DuplicateMemoryError(existing_id)
        conn.execute(
            "INSERT OR REPLACE INTO dedup_markers (tenant_id, user_id, key, memory_id, "
            "occurred_at) VALUES (?, ?, ?, ?, ?)",
            (memory.tenant_id, memory.user_id, dedup_key, memory.memory_id, row["occurred_at"]),
        )

    def update(self, memory: Memory, vector: StoredVector | None = None) -> None:
        row = memory_columns(memory)
        assignments = ", ".join(f"{name} = ?" for name in row if name not in {"tenant_id"})
        values = [value for name, value in row.items() if name != "tenant_id"]
        with self._write() as conn:
            cursor = conn.execute(
                f"UPDATE memories SET {assignments} WHERE tenant_id = ? AND memory_id = ?",
                (*values, memory.tenant_id, memory.memory_id),
            )
            if cursor.rowcount == 0:
                raise NotFoundError(f"memory {memory.memory_id} does not exist")
            if vector is not None:
                _write_vector(conn, memory, vector)

    def replace_vector(self, tenant_id: str, memory_id: str, vector: StoredVector) -> bool:
        """Replace only a memory's stored vector (re-embedding, ``core/usecases/reembed.py``:
        the record itself is never rewritten); False if the memory is gone."""
        with self._write() as conn:
            found = conn.execute(
                "SELECT 1 FROM memories WHERE tenant_id = ? AND memory_id = ?",
                (tenant_id, memory_id),
            ).fetchone()
            if found is None:
                return False
            conn.execute(
                "INSERT OR REPLACE INTO vectors (tenant_id, memory_id, model, dim, data, spans) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    tenant_id,
                    memory_id,
                    vector.model,
                    vector.dim,
                    vector_bytes(vector),
                    spans_text(vector),
                ),
            )
        return True

    def delete(self, tenant_id: str, memory_id: str) -> bool:
        return self.delete_many(tenant_id, [memory_id]) == 1

    def delete_many(self, tenant_id: str, memory_ids: Sequence[str]) -> int:
        """Delete memories (with their vectors and dedup markers) in one transaction, so a
        batch's undo is whole even when the process dies in the middle of it; returns how
        many of them existed."""
        deleted = 0
        with self._write() as conn:
            for memory_id in memory_ids:
                cursor = conn.execute(
                    "DELETE FROM memories WHERE tenant_id = ? AND memory_id = ?",
                    (tenant_id, memory_id),
                )
                if cursor.rowcount == 0:
                    continue
                deleted += 1
                for table in ("vectors", "dedup_markers"):
                    conn.execute(
                        f"DELETE FROM {table} WHERE tenant_id = ? AND memory_id = ?",
                        (tenant_id, memory_id),
                    )
        return deleted

    def erase_user(self, tenant_id: str, user_id: str) -> int:
        owner = (tenant_id, user_id)
        with self._write() as conn:
            conn.execute(
                "DELETE FROM vectors WHERE tenant_id = ? AND memory_id IN "
                "(SELECT memory_id FROM memories WHERE tenant_id = ? AND user_id = ?)",
                (tenant_id, *owner),
            )
            deleted = conn.execute(
                "DELETE FROM memories WHERE tenant_id = ? AND user_id = ?", owner
            ).rowcount
            for table in ("dedup_markers", "cursors", "leases"):
                conn.execute(f"DELETE FROM {table} WHERE tenant_id = ? AND user_id = ?", owner)
        with self._translate(), self._write_lock, self._connection() as conn:
            scrub(conn)  # no copy of the user's rows left in the file
        return int(deleted)

    def set_cursor(self, tenant_id: str, user_id: str, name: str, value: datetime) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO cursors (tenant_id, user_id, name, value) "
                "VALUES (?, ?, ?, ?)",
                (tenant_id, user_id, name, epoch_us(value)),
            )

    def acquire_lease(
        self, tenant_id: str, user_id: str, name: str, holder: str, until: datetime, now: datetime
    ) -> bool:
        key = (tenant_id, user_id, name)
        with self._write() as conn:  # BEGIN IMMEDIATE: the check and the claim are one step
            held = conn.execute(
                "SELECT holder, until FROM leases WHERE tenant_id = ? AND user_id = ? AND name = ?",
                key,
            ).fetchone()
            if held is not None and held[0] != holder and held[1] > epoch_us(now):
                return False
            conn.execute(
                "INSERT OR REPLACE INTO leases (tenant_id, user_id, name, holder, until) "
                "VALUES (?, ?, ?, ?, ?)",
                (*key, holder, epoch_us(until)),
            )
            return True

    def release_lease(self, tenant_id: str, user_id: str, name: str, holder: str) -> None:
        with self._write() as conn:
            conn.execute(
                "DELETE FROM leases WHERE tenant_id = ? AND user_id = ? AND name = ? "
                "AND holder = ?",
                (tenant_id, user_id, name, holder),
            )

    # --- reads -----------------------------------------------------------------------
    def get(self, tenant_id: str, memory_id: str) -> Memory | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE tenant_id = ? AND memory_id = ?",
                (tenant_id, memory_id),
            ).fetchone()
        return None if row is None else memory_from_row(*row)

    def get_many(self, tenant_id: str, memory_ids: Sequence[str]) -> builtins.list[Memory]:
        found: dict[str, Memory] = {}
        unique = list(dict.fromkeys(memory_ids))
        with self._read() as conn:
            for chunk in chunks(unique):
                rows = conn.execute(
                    f"SELECT memory_id, {MEMORY_COLUMNS} FROM memories WHERE tenant_id = ? "
                    f"AND memory_id IN ({marks(len(chunk))})",
                    (tenant_id, *chunk),
                ).fetchall()
                found.update((row[0], memory_from_row(*row[1:])) for row in rows)
        return [found[mid] for mid in memory_ids if mid in found]

    def get_vectors(self, tenant_id: str, memory_ids: Sequence[str]) -> dict[str, StoredVector]:
        found: dict[str, StoredVector] = {}
        unique = list(dict.fromkeys(memory_ids))
        with self._read() as conn:
            for chunk in chunks(unique):
                rows = conn.execute(
                    f"SELECT memory_id, model, data, spans FROM vectors WHERE tenant_id = ? "
                    f"AND memory_id IN ({marks(len(chunk))})",
                    (tenant_id, *chunk),
                ).fetchall()
                found.update((row[0], decode_vector(*row[1:])) for row in rows)
        return found

    def list(
        self,
        tenant_id: str,
        user_id: str,
        query: ListQuery,
        limit: int,
        cursor: str | None = None,
    ) -> Page:
        limit = max(1, limit)
        rows = self._list_rows(
            f"occurred_at, memory_id, {MEMORY_COLUMNS}",
            tenant_id,
            user_id,
            query,
            limit + 1,
            cursor,
        )
        chosen = rows[:limit]
        next_cursor = None
        if len(rows) > limit:
            next_cursor = encode_page_cursor(chosen[-1][0], chosen[-1][1], query.oldest_first)
        return Page(items=[memory_from_row(*row[2:]) for row in chosen], next_cursor=next_cursor)

    def list_ids(
        self, tenant_id: str, user_id: str, query: ListQuery, limit: int
    ) -> builtins.list[str]:
        rows = self._list_rows("memory_id", tenant_id, user_id, query, max(1, limit), None)
        return [row[0] for row in rows]

    def _list_rows(
        self,
        columns: str,
        tenant_id: str,
        user_id: str,
        query: ListQuery,
        limit: int,
        cursor: str | None,
    ) -> builtins.list[Any]:
        sql, params = list_sql(columns, tenant_id, user_id, query, limit, cursor)
        with self._read() as conn:
            return conn.execute(sql, params).fetchall()

    def get_cursor(self, tenant_id: str, user_id: str, name: str) -> datetime | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT value FROM cursors WHERE tenant_id = ? AND user_id = ? AND name = ?",
                (tenant_id, user_id, name),
            ).fetchone()
        return None if row is None else from_epoch_us(row[0])

    def iter_all(
        self, tenant_id: str | None = None
    ) -> Sequence[tuple[Memory, StoredVector | None]]:
        sql = (
            "SELECT m.body, m.hit_count, m.last_hit_at, v.model, v.data, v.spans "
            "FROM memories m LEFT JOIN vectors v "
            "ON v.tenant_id = m.tenant_id AND v.memory_id = m.memory_id"
        )
        params: tuple[str, ...] = ()
        if tenant_id is not None:
            sql += " WHERE m.tenant_id = ?"
            params = (tenant_id,)
        sql += " ORDER BY m.tenant_id, m.memory_id"
        with self._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            (
                memory_from_row(body, hits, last_hit),
                None if data is None else decode_vector(model, data, spans),
            )
            for body, hits, last_hit, model, data, spans in rows
        ]

    def vector_keys(self) -> set[tuple[str, str]]:
        """(tenant_id, memory_id) of every memory that has a vector; cheap, no parsing.

        Not part of the RecordStore port: the embedded index uses it to check on start
        whether it is in step without reading every memory.
        """
        with self._read() as conn:
            rows = conn.execute(
                "SELECT v.tenant_id, v.memory_id FROM vectors v JOIN memories m "
                "ON m.tenant_id = v.tenant_id AND m.memory_id = v.memory_id "
                "WHERE m.status IS NOT 'archived'"  # archived: kept out of the index
            ).fetchall()
        return {(tenant, memory_id) for tenant, memory_id in rows}

    def users_with_episodes_since(self, since: datetime) -> builtins.list[tuple[str, str]]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT tenant_id, user_id FROM memories "
                "WHERE kind = ? AND created_at > ? ORDER BY tenant_id, user_id",
                (MemoryKind.EPISODIC.value, epoch_us(since)),
            ).fetchall()
        return [(tenant, user) for tenant, user in rows]

    def compact(self) -> dict[str, int]:
        """Maintenance: compact the database file (``compaction.py``)."""
        with self._translate(), self._write_lock, self._connection() as conn:
            counts = compaction.compact(conn)
        return {f"records_{name}": value for name, value in counts.items()}

    def record_hits(self, tenant_id: str, hits: Mapping[str, int], at: datetime) -> None:
        at_us = epoch_us(at)
        with self._write() as conn:
            conn.executemany(
                "UPDATE memories SET hit_count = hit_count + ?, "
                "last_hit_at = max(coalesce(last_hit_at, 0), ?) "
                "WHERE tenant_id = ? AND memory_id = ?",
                [(count, at_us, tenant_id, memory_id) for memory_id, count in hits.items()],
            )
