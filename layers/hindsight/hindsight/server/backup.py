"""Backing up the embedded store while it serves: SQLite's online backup of the records.

The record store (``<data dir>/hindsight.db``) is the source of truth: every memory, its
vectors, the dedup markers and the reflection cursors. The search index under
``<data dir>/index`` is derived from it and rebuilt at start when missing (from the
stored vectors, without embedding anything again), so a backup is the database alone.

``backup_embedded_store`` copies the database with SQLite's online backup API through
a connection of its own: one read transaction over the whole copy, so the copy is one
consistent moment of the store even while a server writes to it (in WAL mode a reader
blocks no writer). The copy is made under a temporary name, switched to a single file
(rollback journal, no ``-wal``), checked (``PRAGMA integrity_check``) and only then
renamed into place; an existing file is never overwritten.

Restore: stop the server, put the copy at ``<data dir>/hindsight.db`` (with no
``hindsight.db-wal`` or ``-shm`` beside it), delete ``<data dir>/index``, start the
server: it rebuilds the index from the records.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hindsight.core.errors import ConfigurationError

RECORDS_FILE = "hindsight.db"  # backends.build_embedded_service's record store


class BackupError(ConfigurationError):
    """The backup cannot be made as asked; the message says what to change."""


@dataclass(frozen=True)
class BackupReport:
    source: str
    destination: str
    memories: int
    bytes: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def backup_target(destination: Path) -> Path:
    """The file to write: ``destination`` itself, or a dated name inside a directory."""
    if destination.is_dir():
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        destination = destination / f"hindsight-{stamp}.db"
    if destination.exists():
        raise BackupError(
            f"{destination} already exists; a backup never overwrites one — choose another "
            "name, or a directory (the file is then named by the time)"
        )
    if not destination.parent.is_dir():
        raise BackupError(f"{destination.parent} is not a directory; create it first")
    return destination


def _copy(source: Path, partial: Path) -> int:
    """Online backup of ``source`` into ``partial``; the number of memories copied."""
    reader = sqlite3.connect(source, timeout=60.0)
    writer = sqlite3.connect(partial)
    try:
        reader.backup(writer)  # all pages in one step: one consistent read transaction
        writer.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
        check = writer.execute("PRAGMA integrity_check").fetchone()[0]
        if check != "ok":
            raise BackupError(f"the copy failed its integrity check ({check}); retry")
        return int(writer.execute("SELECT count(*) FROM memories").fetchone()[0])
    finally:
        writer.close()
        reader.close()


def backup_embedded_store(data_dir: Path, destination: Path) -> BackupReport:
    """Copy the embedded store of ``data_dir`` to ``destination`` (a file or directory)."""
    source = Path(data_dir) / RECORDS_FILE
    if not source.is_file():
        raise BackupError(
            f"no embedded store at {source}; pass the data directory the server uses "
            "(--data-dir or HINDSIGHT_DATA_DIR)"
        )
    target = backup_target(Path(destination))
    partial = target.with_name(target.name + ".partial")
    started = time.perf_counter()
    try:
        memories = _copy(source, partial)
        os.replace(partial, target)
    except sqlite3.Error as exc:
        raise BackupError(f"the backup of {source} failed ({exc}); retry") from exc
    finally:
        partial.unlink(missing_ok=True)
    return BackupReport(
        source=str(source.resolve()),
        destination=str(target.resolve()),
        memories=memories,
        bytes=target.stat().st_size,
        seconds=round(time.perf_counter() - started, 3),
    )
