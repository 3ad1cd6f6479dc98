"""The ``JobStore`` port (``core/ports.py``): what every job store must do.

Run on the SQLite job store in a file (the embedded backend's ``jobs.db``) and in memory
(the memory backend). The AWS backend keeps no jobs: its handlers answer every write
when it is done (``api/jobs.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight.adapters.embedded.sqlite_job_store import SqliteJobStore
from hindsight.core.jobs import Job
from hindsight.core.models import Principal
from hindsight.core.ports import JobStore

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def job(job_id: str, tenant: str = "acme", user: str = "u1", at: datetime = T0) -> Job:
    return Job(
        job_id=job_id,
        tenant_id=tenant,
        user_id=user,
        kind="store_memory",
        principal=Principal(tenant_id=tenant, key_id="k"),
        input={"commands": [{"user_id": user, "content": "今天开会"}], "memory_ids": ["mem_1"]},
        created_at=at,
        updated_at=at,
    )


@pytest.fixture(params=["file", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqliteJobStore]:
    path = tmp_path / "jobs.db" if request.param == "file" else ":memory:"
    opened = SqliteJobStore(path)
    yield opened
    opened.close()


def test_a_job_is_read_back_whole_and_only_by_its_tenant(store: JobStore) -> None:
    store.create(job("job_1"))
    found = store.get("acme", "job_1")
    assert found == job("job_1")
    assert store.get("globex", "job_1") is None
    assert store.get("acme", "job_2") is None


def test_claim_report_finish_move_a_job_through_its_states(store: JobStore) -> None:
    store.create(job("job_1"))
    claimed = store.claim("job_1", T0 + timedelta(seconds=1))
    assert claimed is not None and (claimed.state, claimed.attempts) == ("running", 1)
    store.report("job_1", 3, 10, T0 + timedelta(seconds=2))
    running = store.get("acme", "job_1")
    assert running is not None and (running.done, running.total) == (3, 10)
    store.finish("job_1", T0 + timedelta(seconds=3), outcome={"status": "success"})
    done = store.get("acme", "job_1")
    assert done is not None and done.state == "succeeded" and done.outcome == {"status": "success"}
    assert (done.done, done.total) == (10, 10)  # the bar ends full
    assert store.claim("job_1", T0 + timedelta(seconds=4)) is None  # never run again
    store.report("job_1", 1, 10, T0 + timedelta(seconds=5))  # a late report changes nothing
    after = store.get("acme", "job_1")
    assert after is not None and after.done == 10
    assert store.claim("job_unknown", T0) is None


def test_a_failed_job_keeps_its_error_and_progress(store: JobStore) -> None:
    store.create(job("job_1"))
    store.claim("job_1", T0)
    store.report("job_1", 4, 10, T0)
    store.finish("job_1", T0, error="the embedding model failed; retry later")
    failed = store.get("acme", "job_1")
    assert failed is not None and failed.state == "failed"
    assert failed.error == "the embedding model failed; retry later" and failed.done == 4
    assert failed.outcome is None


def test_unfinished_jobs_are_listed_oldest_first_and_a_claimed_one_again(store: JobStore) -> None:
    store.create(job("job_b", at=T0 + timedelta(seconds=2)))
    store.create(job("job_a", at=T0 + timedelta(seconds=1)))
    store.create(job("job_c", at=T0 + timedelta(seconds=3)))
    store.claim("job_b", T0)  # running when the server stopped: resumed too
    store.claim("job_c", T0)
    store.finish("job_c", T0, outcome={})
    assert store.unfinished() == ["job_a", "job_b"]
    again = store.claim("job_b", T0)
    assert again is not None and again.attempts == 2


def test_forget_user_and_expire_delete_jobs(store: JobStore) -> None:
    store.create(job("job_1", user="gone"))
    store.create(job("job_2", user="gone", tenant="globex"))
    store.create(job("job_3", user="kept"))
    assert store.forget_user("acme", "gone") == 1
    assert store.get("acme", "job_1") is None
    assert store.get("globex", "job_2") is not None
    store.claim("job_3", T0)
    store.finish("job_3", T0 + timedelta(hours=1), outcome={})
    assert store.expire(T0 + timedelta(minutes=30)) == 0  # finished later than that
    assert store.expire(T0 + timedelta(hours=2)) == 1
    assert store.get("acme", "job_3") is None
    assert store.get("globex", "job_2") is not None  # unfinished jobs never expire


def test_a_job_outlives_its_process(tmp_path: Path) -> None:
    first = SqliteJobStore(tmp_path / "jobs.db")
    first.create(job("job_1"))
    first.claim("job_1", T0)
    # no close: a killed process closes nothing
    second = SqliteJobStore(tmp_path / "jobs.db")
    try:
        assert second.unfinished() == ["job_1"]
        kept = second.get("acme", "job_1")
        assert kept is not None and kept.state == "running" and kept.input == job("job_1").input
    finally:
        second.close()
        first.close()
