"""Access tracking: which memories retrieval returned, written behind the request.

``RetrieveMemories`` (and so the context, which retrieves) notes the id of every memory
on the page it answers; ``note`` only counts in process memory under a lock, so retrieve
makes no extra request to the store. A background thread (``start``) flushes the counts
every ``flush_seconds`` through ``RecordStore.record_hits``: one write per memory hit since
the last flush, adding the count (SQLite ``hit_count = hit_count + n``, DynamoDB ``ADD``),
so concurrent processes never lose a count. A flush that fails keeps its counts for the
next one. ``stop`` flushes what is left (the bootstrap calls it at exit).

Limits: counts noted in a process that dies before its next flush are lost (at most
``flush_seconds`` of hits); on Lambda the thread runs only while the container does,
so a frozen container's counts wait for its next invocation.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import datetime

from hindsight.core.errors import HindsightError
from hindsight.core.ports import Clock, RecordStore

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 2.0


class HitLog:
    """Counts hits in memory; flushes them to the record store in the background."""

    def __init__(
        self, records: RecordStore, clock: Clock, flush_seconds: float = FLUSH_SECONDS
    ) -> None:
        self.records = records
        self.clock = clock
        self.flush_seconds = flush_seconds
        self._lock = threading.Lock()
        self._pending: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self._last: dict[str, datetime] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def note(self, tenant_id: str, memory_ids: Iterable[str]) -> None:
        """Count one hit of each memory (cheap: no I/O)."""
        ids = list(memory_ids)
        if not ids:
            return
        now = self.clock.now()
        with self._lock:
            self._pending[tenant_id].update(ids)
            self._last[tenant_id] = max(now, self._last.get(tenant_id, now))

    def pending(self) -> int:
        with self._lock:
            return sum(len(hits) for hits in self._pending.values())

    def flush(self) -> int:
        """Write every pending count; returns memories written. Failed ones stay pending."""
        with self._lock:
            batch, self._pending = self._pending, defaultdict(Counter)
            last, self._last = self._last, {}
        written = 0
        for tenant_id, hits in batch.items():
            try:
                self.records.record_hits(tenant_id, dict(hits), last[tenant_id])
            except HindsightError as exc:
                logger.warning("hit flush failed tenant=%s error=%s", tenant_id, exc.message)
                with self._lock:
                    self._pending[tenant_id].update(hits)
                    self._last[tenant_id] = max(
                        last[tenant_id], self._last.get(tenant_id, last[tenant_id])
                    )
                continue
            written += len(hits)
        return written

    def start(self) -> HitLog:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="hindsight-hits")
            self._thread.daemon = True
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.flush_seconds):
            try:
                self.flush()
            except Exception:  # the thread outlives one bad flush; counts stay pending
                logger.exception("hit flush failed")

    def stop(self) -> None:
        """Stop the thread and flush what is left."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self.flush()
