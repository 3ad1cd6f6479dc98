"""Compacting the embedded store's SQLite files (``hindsight maintain``).

The write-ahead log is checkpointed and truncated, the query planner's statistics are
refreshed (``PRAGMA optimize``), and the file is rebuilt with ``VACUUM`` only where it
helps: when at least ``VACUUM_FREE_SHARE`` of its pages are free (after an archive pass,
a forget or an erase). VACUUM rewrites the whole file and holds the write lock meanwhile,
so it is not run for a few free pages.
"""

from __future__ import annotations

import sqlite3

VACUUM_FREE_SHARE = 0.2


def compact(conn: sqlite3.Connection) -> dict[str, int]:
    """Compact one database on an open connection (outside any transaction)."""
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    vacuumed = 0
    if pages and free / pages >= VACUUM_FREE_SHARE:
        conn.execute("VACUUM")
        vacuumed = 1
    conn.execute("PRAGMA optimize")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return {"pages": pages, "free_pages": free, "vacuumed": vacuumed}
