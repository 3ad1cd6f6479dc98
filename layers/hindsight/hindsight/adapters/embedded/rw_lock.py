"""A readers-writer lock: many readers at once, or one writer; a waiting writer goes first.

The in-process vector index gives each (tenant, user) partition one of these, so that
searches of one user run side by side (numpy and hnswlib release the GIL while they
compute) and a write waits only for the searches of its own partition. Writers are
preferred: once a writer waits, new readers queue behind it, so a steady stream of
searches cannot starve a store. Not reentrant: a thread holding the lock must not take
it again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadWriteLock:
    """Shared (``reading``) or exclusive (``writing``) access, as context managers."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._changed:
            while self._writing or self._writers_waiting:
                self._changed.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._changed:
                self._readers -= 1
                if self._readers == 0:
                    self._changed.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._changed:
            self._writers_waiting += 1
            try:
                while self._writing or self._readers:
                    self._changed.wait()
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._changed:
                self._writing = False
                self._changed.notify_all()
