"""The schema of the embedded record store's SQLite file (``sqlite_record_store.py`` describes
its tables), and the migrations a file written by an older version gets on open."""

from __future__ import annotations

import sqlite3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    tenant_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    scope TEXT NOT NULL,
    status TEXT,
    category TEXT,
    session_id TEXT,
    occurred_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    body TEXT NOT NULL,
    PRIMARY KEY (tenant_id, memory_id)
);
CREATE INDEX IF NOT EXISTS memories_by_occurred
    ON memories (tenant_id, user_id, occurred_at, memory_id);
CREATE INDEX IF NOT EXISTS memories_by_created ON memories (tenant_id, user_id, created_at);
CREATE INDEX IF NOT EXISTS memories_by_kind_created ON memories (kind, created_at);
CREATE TABLE IF NOT EXISTS vectors (
    tenant_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    data BLOB NOT NULL,
    spans TEXT,
    PRIMARY KEY (tenant_id, memory_id)
);
CREATE TABLE IF NOT EXISTS dedup_markers (
    tenant_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    key TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    occurred_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id, key)
);
CREATE INDEX IF NOT EXISTS dedup_markers_by_memory ON dedup_markers (tenant_id, memory_id);
CREATE TABLE IF NOT EXISTS cursors (
    tenant_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id, name)
);
CREATE TABLE IF NOT EXISTS leases (
    tenant_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    holder TEXT NOT NULL,
    until INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id, name)
);
PRAGMA user_version = 1;
"""


def _add_spans_column(conn: sqlite3.Connection) -> None:
    """Files written before memories were chunked lack ``vectors.spans``: add it (NULL:
    every stored vector is a whole memory's)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(vectors)")}
    if "spans" not in columns:
        conn.execute("ALTER TABLE vectors ADD COLUMN spans TEXT")


def _add_hit_columns(conn: sqlite3.Connection) -> None:
    """Access tracking (``record_hits``): ``hit_count`` and ``last_hit_at`` on each memory,
    added to files written before it (0 and NULL: never hit)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(memories)")}
    if "hit_count" not in columns:
        conn.execute("ALTER TABLE memories ADD COLUMN hit_count INTEGER NOT NULL DEFAULT 0")
    if "last_hit_at" not in columns:
        conn.execute("ALTER TABLE memories ADD COLUMN last_hit_at INTEGER")


def create_or_migrate(conn: sqlite3.Connection) -> None:
    """WAL mode, every table and index, and the columns older files lack."""
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(_SCHEMA)
    _add_spans_column(conn)
    _add_hit_columns(conn)
