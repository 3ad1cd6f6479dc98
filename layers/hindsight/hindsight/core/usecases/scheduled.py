"""Scheduled runs on one machine: each due run once, one at a time, wherever it starts.

A local server evaluates its schedule itself (``hindsight.server.scheduler``) and asks
this use case to run a job for the run that is due (the latest scheduled time at or
before now). The job runs only if that time is later than the last one served, which is
kept in the record store as a cursor of the reserved scheduler user; so a run missed
while the server was down is served once when it starts (however many were missed), and
a run already served is not served again by a restart or by another process.

One at a time: the run holds a lease of the record store (atomic across threads and
processes, on SQLite as on DynamoDB), named after the job and renewed by the job as it
goes. A second server, or a ``hindsight maintain`` started by hand, finds the lease taken
and skips; the holder's cursor then says the run was served. A holder that dies frees the
lease after ``LEASE_SECONDS``.

The first time a job is seen, nothing is run: the due time is recorded as served, so
that a fresh data directory does not start with a run of every schedule.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from hindsight.core.errors import HindsightError
from hindsight.core.ports import Clock, RecordStore
from hindsight.core.usecases.fan_out import CURSOR_TENANT, CURSOR_USER

logger = logging.getLogger(__name__)

LEASE_SECONDS = 900.0  # renewed by the job between its steps


def cursor_name(job: str) -> str:
    return f"schedule:{job}"


@dataclass(frozen=True)
class ScheduledRun:
    """What one call did: ran, skipped (and why), and the job's counts."""

    job: str
    due: datetime
    outcome: str  # ran | failed | already-served | running-elsewhere | first-seen
    counts: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""

    @property
    def ran(self) -> bool:
        return self.outcome in {"ran", "failed"}


# a job gets a function that renews its lease (raising HindsightError if it was lost)
Job = Callable[[Callable[[], None]], Mapping[str, Any]]


class ScheduledRuns:
    """Run a job for a due time unless that time was served already or is being served."""

    def __init__(self, records: RecordStore, clock: Clock) -> None:
        self.records = records
        self.clock = clock

    def last_served(self, job: str) -> datetime | None:
        return self.records.get_cursor(CURSOR_TENANT, CURSOR_USER, cursor_name(job))

    def __call__(self, job: str, due: datetime, run: Job) -> ScheduledRun:
        holder = uuid.uuid4().hex
        if not self._take(job, holder):
            return ScheduledRun(job, due, "running-elsewhere")
        try:
            last = self.last_served(job)
            if last is not None and last >= due:
                return ScheduledRun(job, due, "already-served")
            if last is None:
                self._served(job, due)
                logger.info("schedule first seen job=%s due=%s", job, due.isoformat())
                return ScheduledRun(job, due, "first-seen")
            return self._run(job, due, run, holder)
        finally:
            try:
                self.records.release_lease(CURSOR_TENANT, CURSOR_USER, cursor_name(job), holder)
            except HindsightError:  # it expires by itself
                logger.warning("schedule lease not released job=%s", job)

    def run_now(self, job: str, run: Job) -> ScheduledRun:
        """Run a job by hand (``hindsight maintain``) under the same lease, so it never
        overlaps a scheduled run of it; the schedule's cursor is left alone."""
        holder = uuid.uuid4().hex
        now = self.clock.now()
        if not self._take(job, holder):
            return ScheduledRun(job, now, "running-elsewhere")
        try:

            def renew() -> None:
                if not self._take(job, holder):
                    raise HindsightError(f"{job} lost its lease to another process")

            started = self.clock.monotonic()
            counts = dict(run(renew))
            counts["seconds"] = round(self.clock.monotonic() - started, 3)
            return ScheduledRun(job, now, "ran", counts)
        finally:
            try:
                self.records.release_lease(CURSOR_TENANT, CURSOR_USER, cursor_name(job), holder)
            except HindsightError:
                logger.warning("schedule lease not released job=%s", job)

    def _take(self, job: str, holder: str) -> bool:
        now = self.clock.now()
        until = now + timedelta(seconds=LEASE_SECONDS)
        return self.records.acquire_lease(
            CURSOR_TENANT, CURSOR_USER, cursor_name(job), holder, until, now
        )

    def _run(self, job: str, due: datetime, run: Job, holder: str) -> ScheduledRun:
        def renew() -> None:
            if not self._take(job, holder):
                raise HindsightError(f"scheduled {job} lost its lease to another process")

        started = self.clock.monotonic()
        try:
            counts = dict(run(renew))
        except HindsightError as exc:
            # served all the same: the next scheduled run retries what this one left
            # (the jobs keep their own cursors), rather than a retry every minute
            self._served(job, due)
            logger.error("scheduled run failed job=%s due=%s error=%s", job, due, exc.message)
            return ScheduledRun(job, due, "failed", error=exc.message)
        self._served(job, due)
        counts["seconds"] = round(self.clock.monotonic() - started, 3)
        fields = " ".join(f"{name}={value}" for name, value in counts.items())
        logger.info("scheduled run done job=%s due=%s %s", job, due.isoformat(), fields)
        return ScheduledRun(job, due, "ran", counts)

    def _served(self, job: str, due: datetime) -> None:
        self.records.set_cursor(CURSOR_TENANT, CURSOR_USER, cursor_name(job), due)
