"""One writing process per embedded search index: an exclusive lock on a file beside it.

The embedded index lives in the memory of the process that opened it; the SQLite files
are only its durable copy. A second process writing the same data directory would keep a
second in-memory index that never sees the first one's writes, and each would answer
from, and save, a different picture. So ``EmbeddedSearchIndex`` takes an exclusive
operating-system lock on ``writer.lock`` in its directory (``flock``; ``msvcrt.locking``
on Windows) for as long as it is open, and a second process is refused with a message
naming the process that holds it. The lock belongs to the open file, so it ends with the
process however that ends (no stale lock to clean up after a crash).

Within one process, opening the same index again is coordinated instead of refused: the
newer instance takes over and the older one is closed first (its HNSW graphs saved, its
further calls answered with ``UnavailableError``). That is what a notebook re-running
``Hindsight.embedded()`` or a test restarting a server in-process needs.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from hindsight.core.errors import UnavailableError

logger = logging.getLogger(__name__)

LOCK_FILE = "writer.lock"

_guard = threading.Lock()
# index directory (resolved) -> how to close the instance of this process that holds it
_held_here: dict[str, Callable[[], None]] = {}


def _try_lock(handle: IO[str]) -> bool:
    """Take the exclusive lock without waiting; False if another open file holds it."""
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _unlock(handle: IO[str]) -> None:
    if sys.platform == "win32":
        import msvcrt

        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _holder(path: Path) -> str:
    """What the lock file says about the process holding it."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        text = ""
    return text or "a process that did not say which"


def _refusal(directory: Path, holder: str) -> str:
    data = directory.parent if directory.name == "index" else directory
    return (
        f"the Hindsight data in {data} is already open for writing by another process "
        f"({holder}). Only one process may write a data directory at a time: a second one "
        "would keep its own copy of the search index, and the two would go out of step. "
        "Stop that process, or send your requests to it (e.g. over HTTP to `hindsight "
        "serve`), or use another data directory (--data-dir or HINDSIGHT_DATA_DIR)"
    )


class WriterLock:
    """The exclusive lock of one index directory, held by this process until ``release``."""

    def __init__(self, directory: Path, handle: IO[str], key: str) -> None:
        self.directory = directory
        self._handle: IO[str] | None = handle
        self._key = key

    @classmethod
    def acquire(cls, directory: Path, close_holder: Callable[[], None]) -> WriterLock:
        """Lock ``directory`` (which must exist) for this process.

        An instance of this process that holds it is closed first (``close_holder`` is how
        the new holder will be closed in turn). Another process holding it: UnavailableError
        saying which process and what to do.
        """
        key = str(directory.resolve())
        with _guard:
            previous = _held_here.pop(key, None)
        if previous is not None:
            logger.warning("search index reopened in this process; older closed path=%s", directory)
            previous()
        path = directory / LOCK_FILE
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held open while locked
        if not _try_lock(handle):
            handle.close()
            raise UnavailableError(_refusal(directory, _holder(path)))
        handle.seek(0)
        handle.truncate()
        started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        command = " ".join(Path(sys.argv[0]).name.split() + sys.argv[1:]) or "python"
        handle.write(f"pid {os.getpid()}: {command}, since {started}\n")
        handle.flush()
        with _guard:
            _held_here[key] = close_holder
        return cls(directory, handle, key)

    def release(self) -> None:
        """Give the lock up (again: nothing)."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        with _guard:
            _held_here.pop(self._key, None)
        try:
            _unlock(handle)
        finally:
            handle.close()
