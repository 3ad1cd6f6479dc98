"""The real clock and id generator."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from ulid import ULID


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class UlidGenerator:
    """Time-sortable ids: ``mem_`` + a ULID (lexicographic order is creation order)."""

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{ULID()}"
