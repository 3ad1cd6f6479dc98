"""Writes that need not wait: ``Job``, the handle of a store the server accepted as a job.

``memory.store(user_id, content, wait=False)`` sends ``Prefer: respond-async``; the server
(``hindsight serve``) answers 202 at once with a job, and the store is done in the
background. ``job.progress()`` says how far it got (texts embedded of all),
``job.result()`` waits for it and returns what the store would have returned. A server
that does not keep jobs (the AWS deployment) answers the store when it is done: the
handle is then finished from the start.

    job = memory.store("u1", long_text, wait=False)
    while not job.status().finished:
        done, total = job.progress()
    result = job.result()  # a StoreResult, or the job's error raised
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from hindsight_client.errors import HindsightError, HindsightTimeoutError
from hindsight_client.types import JobStatus

T = TypeVar("T")
PREFER_ASYNC = {"Prefer": "respond-async"}
# longer content than this is stored as a job by default (``store(wait=None)``): a long
# memory takes seconds to minutes to embed, past the read timeout of a plain request
ASYNC_CHARS = 20_000
POLL_SECONDS = 0.5
Progress = Callable[[int, int], None]


class JobFailedError(HindsightError):
    """The job ended without doing its write; ``message`` says why and what to do."""


class Job(Generic[T]):
    """A write accepted as a job: poll it, wait for it."""

    def __init__(
        self,
        job_id: str,
        fetch: Callable[[str], JobStatus],
        parse: Callable[[dict[str, Any]], T],
        finished: JobStatus | None = None,
    ) -> None:
        self.job_id = job_id
        self._fetch = fetch
        self._parse = parse
        self._last = finished

    def __repr__(self) -> str:
        state = self._last.state if self._last else "?"
        return f"Job(job_id={self.job_id!r}, state={state!r})"

    def status(self) -> JobStatus:
        """The job as the server sees it now (one request; none once it has finished)."""
        if self._last is None or not self._last.finished:
            self._last = self._fetch(self.job_id)
        return self._last

    def progress(self) -> tuple[int, int]:
        """(texts embedded, texts in all); (0, 0) before the job has started."""
        status = self.status()
        return status.done, status.total

    def result(
        self,
        timeout: float | None = None,
        on_progress: Progress | None = None,
        poll: float = POLL_SECONDS,
    ) -> T:
        """Wait until the job has finished (at most ``timeout`` seconds) and return what
        the write would have returned; ``JobFailedError`` if it failed.
        ``on_progress(done, total)`` is called whenever the count moved."""
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = (-1, -1)
        while True:
            status = self.status()
            if on_progress is not None and (status.done, status.total) != seen:
                seen = (status.done, status.total)
                on_progress(*seen)
            if status.finished:
                return self._finished(status)
            if deadline is not None and time.monotonic() >= deadline:
                raise HindsightTimeoutError(
                    f"job {self.job_id} is still {status.state} after {timeout} s "
                    f"({status.done}/{status.total}); call result() again to keep waiting"
                )
            time.sleep(poll)

    def _finished(self, status: JobStatus) -> T:
        if status.state != "succeeded" or status.result is None:
            raise JobFailedError(status.error or f"job {self.job_id} failed")
        return self._parse(status.result)


def finished_job(job_id: str, parse: Callable[[dict[str, Any]], T], body: dict[str, Any]) -> Job[T]:
    """The handle of a write the server answered when done (it keeps no jobs)."""
    status = JobStatus(job_id=job_id, kind="", state="succeeded", result=body, raw={})

    def never(_: str) -> JobStatus:  # a finished handle does not ask again
        return status

    return Job(job_id, never, parse, finished=status)
