"""What the embedded backend's two SQLite files share: how a connection is opened and how
a failure is told to the caller (``UnavailableError`` with the cause and what to do)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hindsight.core.errors import UnavailableError

BUSY_TIMEOUT_MS = 10_000


def open_connection(path: Path) -> sqlite3.Connection:
    """An autocommit connection (transactions are explicit) usable from any thread."""
    conn = sqlite3.connect(
        path,
        timeout=BUSY_TIMEOUT_MS / 1000,
        isolation_level=None,
        check_same_thread=False,
    )
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA synchronous=NORMAL")
    # deleted rows are overwritten with zeros, not left in free pages: an erased user's
    # content must not stay readable in the file (see ``scrub`` for what it misses)
    conn.execute("PRAGMA secure_delete=ON")
    return conn


def scrub(conn: sqlite3.Connection) -> None:
    """Rewrite the file from its live rows (``VACUUM``), then drop the write-ahead log:
    after an erase-user no byte of the user's rows may stay in the file.

    ``secure_delete`` zeroes a deleted row's cell and freed pages, but not the copies a
    page rebuild leaves behind: when SQLite packs a page, the old copy of a row that
    stays live remains in the page's unallocated gap, and deleting that row later zeroes
    only its current cell (tests/contract/test_erase_user_leftovers_contract.py). The
    rewrite of both files took 14 s at 100k memories on two cores (docs/decisions.md,
    "Storage and indexes"); other writes to the file wait meanwhile."""
    conn.execute("VACUUM")
    drop_old_log(conn)


def drop_old_log(conn: sqlite3.Connection) -> None:
    """Checkpoint and truncate the write-ahead log, whose older frames still hold rows
    deleted since (an erase-user's). Best effort: while a reader holds an older snapshot it
    waits up to the busy timeout, then the frames go with the next checkpoint."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def sqlite_advice(path: Path, exc: sqlite3.Error) -> str:
    """What to tell the caller when SQLite fails: the cause in words and what to do."""
    text = str(exc).lower()
    if "full" in text:
        return f"the disk holding the SQLite file {path} is full; free some space and retry"
    if "locked" in text or "busy" in text:
        return (
            f"the SQLite file {path} is locked by another writer; retry in a moment, "
            "and run only one Hindsight server per data directory"
        )
    if "unable to open" in text or "readonly" in text or "read-only" in text:
        return (
            f"cannot open the SQLite file {path} for writing; check the path exists and "
            "is writable (HINDSIGHT_DATA_DIR)"
        )
    if "malformed" in text or "not a database" in text:
        return (
            f"the SQLite file {path} is damaged ({exc}); restore it from a backup or move "
            "it aside to start empty"
        )
    return f"the SQLite file {path} failed ({exc}); check the file and the disk, then retry"


@contextmanager
def unavailable_on_failure(what: str, path: Path, db_path: Path) -> Iterator[None]:
    """SQLite and file-system errors as ``UnavailableError``; ``what`` at ``path`` names
    the thing that could not be created, ``db_path`` the SQLite file."""
    try:
        yield
    except sqlite3.Error as exc:
        raise UnavailableError(sqlite_advice(db_path, exc)) from exc
    except OSError as exc:
        raise UnavailableError(
            f"cannot create the {what} at {path} ({exc.strerror}); "
            "check that HINDSIGHT_DATA_DIR points to a writable directory"
        ) from exc
