"""Reflection fan-out: one queued reflection job per user with new episodes.

The scheduled run asks the record store which (tenant, user) pairs have episodic
memories created since the previous run (a cursor kept in the record store itself),
queues one job per pair and only then moves the cursor, so a failed run is retried
whole. Reflection is idempotent per user (each user's own reflection cursor skips
episodes already distilled), so a job queued twice does no harm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from pydantic import AwareDatetime, BaseModel, ConfigDict

from hindsight.core.errors import UnavailableError
from hindsight.core.ports import Clock, RecordStore

# the fan-out's own cursor lives under a reserved tenant no API key can name
CURSOR_TENANT = "_hindsight"
CURSOR_USER = "_scheduler"
CURSOR_NAME = "reflection-fanout"
FIRST_RUN_SINCE = datetime(1970, 1, 1, tzinfo=UTC)  # first run: every user with episodes


class FanOutError(UnavailableError):
    """Some reflection jobs could not be queued; the run is retried, the cursor stays."""


@dataclass(frozen=True)
class ReflectionJob:
    """One user to reflect on (the worker's message)."""

    tenant_id: str
    user_id: str
    requested_at: datetime


class ReflectionJobQueue(Protocol):
    """Where reflection jobs go (SQS on AWS; a list in tests)."""

    def send(self, jobs: Sequence[ReflectionJob]) -> None:
        """Queue every job or raise FanOutError naming the ones that failed."""


class FanOutRequest(BaseModel):
    """The schedule's input (extra fields such as ``source`` are ignored)."""

    model_config = ConfigDict(extra="ignore")

    since: AwareDatetime | None = None  # look further back than the last run
    dry_run: bool = False  # list the users without queueing or moving the cursor


@dataclass(frozen=True)
class FanOutResult:
    since: datetime
    cursor: datetime
    users: list[tuple[str, str]]
    queued: int
    dry_run: bool


class FanOutReflection:
    """Queue one reflection per user with episodes created since the last run."""

    def __init__(self, records: RecordStore, queue: ReflectionJobQueue, clock: Clock) -> None:
        self.records = records
        self.queue = queue
        self.clock = clock

    def __call__(self, request: FanOutRequest) -> FanOutResult:
        started = self.clock.now()
        since = request.since or self.records.get_cursor(CURSOR_TENANT, CURSOR_USER, CURSOR_NAME)
        since = since or FIRST_RUN_SINCE
        users = sorted(
            (tenant, user)
            for tenant, user in self.records.users_with_episodes_since(since)
            if tenant != CURSOR_TENANT
        )
        if request.dry_run:
            return FanOutResult(since, since, users, 0, True)
        self.queue.send([ReflectionJob(tenant, user, started) for tenant, user in users])
        # episodes created while this run was listing are caught next time
        self.records.set_cursor(CURSOR_TENANT, CURSOR_USER, CURSOR_NAME, started)
        return FanOutResult(since, started, users, len(users), False)
