"""The real clock and id generator."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

from ulid import ULID


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class UlidGenerator:
    """Time-sortable ids: ``mem_`` + a monotonic ULID.

    Within one process, lexicographic order is creation order: a ULID made in the same
    millisecond as (or, after a clock step back, earlier than) the previous one is the
    previous one plus 1, as the ULID spec's monotonic mode does. Plain random ULIDs of
    one millisecond would sort at random, and turns stored in one batch would list
    out of order.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def new_id(self, prefix: str) -> str:
        candidate = ULID()
        with self._lock:
            value = int(candidate)
            if value >> 80 <= self._last >> 80:  # same (or an earlier) millisecond
                value = self._last + 1
            self._last = value
        return f"{prefix}_{ULID.from_int(value)}"
