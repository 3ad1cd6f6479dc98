"""The job queue of ``hindsight serve``: one queue for every background write.

Writes sent with ``Prefer: respond-async`` (``api/jobs.py``) are kept as jobs and queued
here by id; ``workers`` threads take them in order and run them (``MemoryService.run_job``),
sharing the embedding engine with the requests that wait (the bootstrap's micro-batching
embedder batches them together). At start the jobs a stopped server left pending or
running are queued first, oldest first: nothing accepted is dropped by a restart.

At shutdown the workers finish the job in hand (a store is a few seconds to a minute)
and leave the rest pending for the next start.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from hindsight.core.service import MemoryService

logger = logging.getLogger("hindsight.server")

DEFAULT_JOB_WORKERS = 2  # two writes embedding at once fill the engine's batches
_STOP = ""  # a job id is never empty: the workers' signal to end


class JobWorkers:
    """Worker threads draining one queue of job ids."""

    def __init__(
        self, services: Callable[[], MemoryService], workers: int = DEFAULT_JOB_WORKERS
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.services = services
        self.workers = workers
        self._queue: queue.Queue[str] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()

    def enqueue(self, job_id: str) -> None:
        """Queue a kept job (its worker runs it when its turn comes)."""
        self._queue.put(job_id)

    def start(self) -> JobWorkers:
        """Queue what a stopped server left unfinished, then start the workers."""
        left = self.services().unfinished_jobs()
        for job_id in left:
            self._queue.put(job_id)
        if left:
            logger.info("jobs resumed", extra={"fields": {"jobs": len(left)}})
        for number in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"hindsight-job-{number}")
            thread.daemon = True  # a job cut short by the exit runs again at the next start
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """Take no more jobs; wait (up to ``timeout``) for the ones in hand."""
        self._stopping.set()
        for _ in self._threads:
            self._queue.put(_STOP)
        for thread in self._threads:
            thread.join(timeout=timeout)
        self._threads.clear()

    def _work(self) -> None:
        while True:
            job_id = self._queue.get()
            if job_id == _STOP or self._stopping.is_set():
                return
            try:
                self.services().run_job(job_id)
            except Exception:  # the job store itself failed: the job stays unfinished
                logger.exception("job could not be run job=%s", job_id)
