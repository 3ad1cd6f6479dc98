"""The embedded search index's SQLite table and the migrations an older file gets on open.

``docs``: one row per memory, or per chunk of a long memory (``chunk`` 0, 1, ... with its
``span_start``/``span_end`` in the content; NULL spans for a memory searched whole).

Migrations, each run once on open:

- a file with a ``docs_fts`` table (an FTS5 table, whose per-row ``bm25()`` took ~40 ms on a
  100k-memory user where the in-process postings take under a millisecond, bench/scale.py):
  its terms are copied into ``docs.terms`` and the table is dropped;
- a ``docs`` table without a ``chunk`` column (unique by memory): its rows become chunk 0 of
  their memories.
"""

from __future__ import annotations

import logging
import sqlite3

logger = logging.getLogger(__name__)

COLUMNS = (
    "tenant_id",
    "memory_id",
    "user_id",
    "kind",
    "scope",
    "category",
    "emotion",
    "status",
    "session_id",
    "occurred_at",
    "created_at",
    "expires_at",
    "event_start",
    "event_end",
    "text",
    "model",
    "vector",
    "chunk",
    "span_start",
    "span_end",
)
_TERMS = "terms TEXT NOT NULL DEFAULT ''"  # also the column a migrated table gains
_CREATE_DOCS = f"""
CREATE TABLE IF NOT EXISTS docs (
    tenant_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    scope TEXT NOT NULL,
    category TEXT,
    emotion TEXT,
    status TEXT,
    session_id TEXT,
    occurred_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    event_start INTEGER,
    event_end INTEGER,
    text TEXT NOT NULL,
    model TEXT NOT NULL,
    vector BLOB NOT NULL,
    chunk INTEGER NOT NULL DEFAULT 0,
    span_start INTEGER,
    span_end INTEGER,
    {_TERMS},
    UNIQUE (tenant_id, memory_id, chunk)
)"""
_CREATE_OWNER_INDEX = "CREATE INDEX IF NOT EXISTS docs_by_owner ON docs (tenant_id, user_id)"

# a rewritten document replaces its row (new rowid: loaded after the others, as before)
INSERT_DOC = (
    f"INSERT OR REPLACE INTO docs ({', '.join(COLUMNS)}, terms) "
    f"VALUES ({', '.join('?' * (len(COLUMNS) + 1))})"
)


def create_or_migrate(conn: sqlite3.Connection) -> None:
    """Create the table and its index if missing, and migrate an older file's."""
    conn.execute(_CREATE_DOCS)
    conn.execute(_CREATE_OWNER_INDEX)
    if _has_fts_table(conn):
        _migrate_from_fts(conn)
    _migrate_to_chunks(conn)


def _has_fts_table(conn: sqlite3.Connection) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'docs_fts'").fetchone()
    return found is not None


def _migrate_from_fts(conn: sqlite3.Connection) -> None:
    """Move the terms of a ``docs_fts``-era file into ``docs.terms`` and drop ``docs_fts``."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _has_fts_table(conn):  # again inside: another process may have just migrated
            columns = {row[1] for row in conn.execute("PRAGMA table_info(docs)")}
            if "terms" not in columns:
                conn.execute(f"ALTER TABLE docs ADD COLUMN {_TERMS}")
            conn.execute(
                "UPDATE docs SET terms = COALESCE("
                "(SELECT f.terms FROM docs_fts f WHERE f.rowid = docs.rowid), '')"
            )
            conn.execute("DROP TABLE docs_fts")
            logger.info("search index migrated terms out of docs_fts")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _migrate_to_chunks(conn: sqlite3.Connection) -> None:
    """Give a ``docs`` table from before chunking (unique by memory) the chunk columns:
    its rows become chunk 0 of their memory, searched whole (NULL spans)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(docs)")}
    if "chunk" in columns:
        return
    kept = [name for name in COLUMNS if name in columns] + ["terms"]
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("ALTER TABLE docs RENAME TO docs_unchunked")
        conn.execute("DROP INDEX IF EXISTS docs_by_owner")
        conn.execute(_CREATE_DOCS)
        conn.execute(_CREATE_OWNER_INDEX)
        conn.execute(
            f"INSERT INTO docs ({', '.join(kept)}) SELECT {', '.join(kept)} "
            "FROM docs_unchunked ORDER BY rowid"
        )
        conn.execute("DROP TABLE docs_unchunked")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    logger.info("search index migrated to chunk rows")
