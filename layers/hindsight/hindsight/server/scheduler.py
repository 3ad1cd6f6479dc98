"""The schedules ``hindsight serve`` runs itself, as EventBridge does on AWS.

- reflection (``HINDSIGHT_REFLECTION_SCHEDULE``, default ``cron(0 2 * * ? *)`` as in
  ``template.yaml``): the same fan-out use case as ``functions/reflect_fanout``
  (every user with episodes created since the fan-out's cursor), each job reflected here
  and now instead of through SQS, as the scheduled-reflection system principal of the
  user's tenant, as ``functions/reflect_worker`` does;
- maintenance (``HINDSIGHT_MAINTENANCE_SCHEDULE``, default ``cron(0 3 * * ? *)``): what
  ``hindsight maintain`` does (``MemoryService.maintain``: the archive pass of unused
  episodes, then compaction of the embedded files), as the AWS maintenance function does.

``LocalScheduler`` runs in a daemon thread: at every due time of any job (and at least
once a minute) it asks ``MemoryService.scheduled_run`` to serve each job's latest due
time, which runs it only when that time has not been served yet and no other process is
serving it (``core/usecases/scheduled.py``). So a run missed while the server was down
is served once at start. ``tick()`` does one such pass, for tests with a fake clock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hindsight.core.commands import ReflectCommand
from hindsight.core.errors import HindsightError
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from hindsight.core.usecases.fan_out import FanOutError, FanOutRequest, ReflectionJob
from hindsight.core.usecases.scheduled import Job, ScheduledRun
from hindsight.server.schedule import Schedule, parse_schedule
from hindsight.settings import Settings

logger = logging.getLogger(__name__)

SYSTEM_KEY_ID = "system:scheduled-reflection"  # as functions/reflect_worker names it
OFF = {"", "off", "none", "disabled", "false", "0"}
MAX_SLEEP_SECONDS = 60.0
REFLECTION = "reflection"
MAINTENANCE = "maintenance"


def system_principal(tenant_id: str) -> Principal:
    """A tenant's scheduled reflection: every scope of that tenant, nothing else."""
    return Principal(
        tenant_id=tenant_id,
        key_id=SYSTEM_KEY_ID,
        read_scopes=frozenset({"*"}),
        write_scopes=frozenset({"*"}),
    )


class InlineReflectionQueue:
    """A ``ReflectionJobQueue`` that reflects each job at once (the local worker)."""

    def __init__(self, service: MemoryService, renew: Callable[[], None]) -> None:
        self.service = service
        self.renew = renew
        self.counts = {"users": 0, "episodes": 0, "facts_created": 0, "facts_pending": 0}
        self.failed: list[str] = []

    def send(self, jobs: Sequence[ReflectionJob]) -> None:
        for job in jobs:
            self.renew()
            try:
                result = self.service.reflect(
                    system_principal(job.tenant_id), ReflectCommand(user_id=job.user_id)
                )
            except HindsightError as exc:
                logger.warning(
                    "scheduled reflection failed tenant=%s user_id=%s error=%s",
                    job.tenant_id,
                    job.user_id,
                    exc.message,
                )
                self.failed.append(f"{job.tenant_id}/{job.user_id}")
                continue
            self.counts["users"] += 1
            self.counts["episodes"] += result.episodes_considered
            self.counts["facts_created"] += len(result.created)
            self.counts["facts_pending"] += len(result.pending)
        if self.failed:
            raise FanOutError(
                f"{len(self.failed)} of {len(jobs)} users not reflected "
                f"({', '.join(self.failed)}); "
                f"{self.counts['users']} reflected; the next scheduled run retries them"
            )


def maintenance_job(service: MemoryService) -> Job:
    def run(renew: Callable[[], None]) -> Mapping[str, Any]:
        return service.maintain(renew)

    return run


def reflection_job(service: MemoryService) -> Job:
    def run(renew: Callable[[], None]) -> Mapping[str, Any]:
        queue = InlineReflectionQueue(service, renew)
        service.fan_out_reflection(FanOutRequest(), queue)
        return dict(queue.counts)

    return run


@dataclass(frozen=True)
class ScheduledJob:
    name: str
    schedule: Schedule
    run: Job


def configured_schedules(settings: Settings) -> dict[str, Schedule]:
    """Each switched-on local schedule by job name (empty when schedules are off)."""
    if not settings.schedules:
        return {}
    expressions = {
        REFLECTION: settings.reflection_schedule,
        MAINTENANCE: settings.maintenance_schedule,
    }
    return {
        name: parse_schedule(expression, settings.schedule_timezone)
        for name, expression in expressions.items()
        if expression.strip().lower() not in OFF
    }


def scheduled_jobs(settings: Settings, service: MemoryService) -> list[ScheduledJob]:
    runs = {REFLECTION: reflection_job, MAINTENANCE: maintenance_job}
    return [
        ScheduledJob(name, schedule, runs[name](service))
        for name, schedule in configured_schedules(settings).items()
    ]


class LocalScheduler:
    """Serves each job's due runs from a background thread (or ``tick()`` by hand)."""

    def __init__(self, service: MemoryService, jobs: Sequence[ScheduledJob]) -> None:
        self.service = service
        self.jobs = list(jobs)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> list[ScheduledRun]:
        """Serve every job's latest due time (each runs only if not served yet)."""
        now = self.service.now()
        results = []
        for job in self.jobs:
            due = job.schedule.at_or_before(now)
            results.append(self.service.scheduled_run(job.name, due, job.run))
        return results

    def seconds_to_next(self) -> float:
        """How long until the next due time of any job (at most a minute)."""
        now = self.service.now()
        upcoming = min((job.schedule.next_after(now) for job in self.jobs), default=None)
        if upcoming is None:
            return MAX_SLEEP_SECONDS
        return max(0.5, min(MAX_SLEEP_SECONDS, (upcoming - now).total_seconds()))

    def start(self) -> LocalScheduler:
        if not self.jobs:
            logger.info("local schedules off")
            return self
        for job in self.jobs:
            logger.info(
                "schedule on job=%s expression=%s timezone=%s next=%s",
                job.name,
                job.schedule.expression,
                job.schedule.timezone,
                job.schedule.next_after(self.service.now()).isoformat(),
            )
        self._thread = threading.Thread(target=self._loop, name="hindsight-scheduler")
        self._thread.daemon = True
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception:  # the scheduler outlives one bad run; the next tick retries
                logger.exception("scheduled tick failed")
            self._stop.wait(self.seconds_to_next())

    def stop(self, timeout: float = 5.0) -> None:
        """Stop ticking; a run in progress finishes in its daemon thread or dies with it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None


def upcoming_runs(settings: Settings, now: datetime, count: int) -> dict[str, list[datetime]]:
    """The next ``count`` runs of each switched-on local schedule."""
    return {
        name: schedule.upcoming(now, count)
        for name, schedule in configured_schedules(settings).items()
    }
