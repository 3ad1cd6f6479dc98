"""Local scheduled runs on every record store: each due time served once, one at a time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hindsight.core.errors import HindsightError
from hindsight.core.ports import RecordStore
from hindsight.core.usecases.scheduled import LEASE_SECONDS, ScheduledRuns
from tests.fakes import FixedClock

DUE = datetime(2026, 6, 1, 2, 0, tzinfo=UTC)


class CountingJob:
    def __init__(self, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail

    def __call__(self, renew: Any) -> dict[str, int]:
        self.calls += 1
        renew()
        if self.fail:
            raise HindsightError("the reflector is down")
        return {"users": 2}


@pytest.fixture
def runs(record_store: RecordStore) -> ScheduledRuns:
    return ScheduledRuns(record_store, FixedClock(DUE + timedelta(hours=8)))


def test_a_job_first_seen_records_its_due_time_without_running(runs: ScheduledRuns) -> None:
    job = CountingJob()
    assert runs("reflection", DUE, job).outcome == "first-seen"
    assert job.calls == 0
    assert runs.last_served("reflection") == DUE


def test_each_due_time_runs_once(runs: ScheduledRuns) -> None:
    job = CountingJob()
    runs("reflection", DUE, job)
    next_day = DUE + timedelta(days=1)
    first = runs("reflection", next_day, job)
    assert (first.outcome, dict(first.counts)["users"], job.calls) == ("ran", 2, 1)
    again = runs("reflection", next_day, job)  # a restart, or the next tick
    assert (again.outcome, job.calls) == ("already-served", 1)
    assert runs.last_served("reflection") == next_day


def test_runs_missed_while_down_are_served_once(runs: ScheduledRuns) -> None:
    job = CountingJob()
    runs("reflection", DUE, job)
    # down for three nights: at start only the latest due time is asked for, and run once
    latest = DUE + timedelta(days=3)
    assert runs("reflection", latest, job).outcome == "ran"
    assert runs("reflection", DUE + timedelta(days=2), job).outcome == "already-served"
    assert job.calls == 1


def test_a_failed_run_is_served_and_reported(runs: ScheduledRuns) -> None:
    job = CountingJob(fail=True)
    runs("maintenance", DUE, job)
    failed = runs("maintenance", DUE + timedelta(days=1), job)
    assert (failed.outcome, failed.error) == ("failed", "the reflector is down")
    assert runs("maintenance", DUE + timedelta(days=1), job).outcome == "already-served"


def test_a_run_held_elsewhere_is_skipped_until_its_lease_ends(record_store: RecordStore) -> None:
    clock = FixedClock(DUE + timedelta(hours=1))
    runs = ScheduledRuns(record_store, clock)
    job = CountingJob()
    runs("reflection", DUE - timedelta(days=1), job)
    other = ScheduledRuns(record_store, clock)  # another server process on the same store
    seen: list[str] = []

    def holding(renew: Any) -> dict[str, int]:
        seen.append(other("reflection", DUE, job).outcome)
        return {}

    assert runs("reflection", DUE, holding).outcome == "ran"
    assert seen == ["running-elsewhere"]
    assert job.calls == 0
    # jobs are independent: each has its own lease and cursor
    assert runs("maintenance", DUE, job).outcome == "first-seen"


def test_a_dead_holder_frees_the_schedule_after_the_lease(record_store: RecordStore) -> None:
    clock = FixedClock(DUE + timedelta(hours=1))
    runs = ScheduledRuns(record_store, clock)
    job = CountingJob()
    runs("reflection", DUE - timedelta(days=1), job)
    now = clock.now()
    held = record_store.acquire_lease(
        "_hindsight",
        "_scheduler",
        "schedule:reflection",
        "dead-process",
        now + timedelta(seconds=LEASE_SECONDS),
        now,
    )
    assert held
    assert runs("reflection", DUE, job).outcome == "running-elsewhere"
    clock.advance(seconds=LEASE_SECONDS + 1)
    assert runs("reflection", DUE, job).outcome == "ran"
    assert job.calls == 1
