"""The ``JobStore`` port on SQLite: ``<data dir>/jobs.db`` (``":memory:"`` for the memory
backend).

Each job is one row: the columns a query needs (tenant, user, state, times) and the
whole job as JSON. Writes are committed with ``synchronous=FULL``: a job is on disk
before its 202 is answered, so neither a killed server nor a lost power supply drops an
accepted job. One connection serves every thread; a lock makes each change one
read-and-write.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from hindsight.core.jobs import FINISHED, Job

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at TEXT NOT NULL,
    finished_at TEXT,
    job TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_user ON jobs (tenant_id, user_id);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, created_at);
"""


class SqliteJobStore:
    """Jobs in a SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA secure_delete=ON")  # an erased user's words leave the file
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def create(self, job: Job) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO jobs (job_id, tenant_id, user_id, state, created_at, job) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    job.job_id,
                    job.tenant_id,
                    job.user_id,
                    job.state,
                    job.created_at.isoformat(),
                    job.model_dump_json(),
                ),
            )

    def get(self, tenant_id: str, job_id: str) -> Job | None:
        with self._lock:
            row = self._db.execute(
                "SELECT job FROM jobs WHERE job_id = ? AND tenant_id = ?", (job_id, tenant_id)
            ).fetchone()
        return None if row is None else Job.model_validate_json(row[0])

    def claim(self, job_id: str, now: datetime) -> Job | None:
        def running(job: Job) -> Job | None:
            if job.finished:
                return None
            return job.model_copy(
                update={"state": "running", "attempts": job.attempts + 1, "updated_at": now}
            )

        return self._change(job_id, running)

    def report(self, job_id: str, done: int, total: int, now: datetime) -> None:
        self._change(
            job_id,
            lambda job: (
                None
                if job.finished
                else job.model_copy(update={"done": done, "total": total, "updated_at": now})
            ),
        )

    def finish(
        self,
        job_id: str,
        now: datetime,
        outcome: Mapping[str, object] | None = None,
        error: str | None = None,
    ) -> None:
        update: dict[str, Any] = {
            "state": "failed" if error is not None else "succeeded",
            "outcome": None if outcome is None else dict(outcome),
            "error": error,
            "updated_at": now,
        }
        if error is None:  # everything embedded: the bar ends full
            update["done"] = None
        self._change(job_id, lambda job: _finished(job, update))

    def unfinished(self) -> list[str]:
        marks = ", ".join("?" for _ in FINISHED)
        with self._lock:
            rows = self._db.execute(
                f"SELECT job_id FROM jobs WHERE state NOT IN ({marks}) ORDER BY created_at, job_id",
                tuple(FINISHED),
            ).fetchall()
        return [row[0] for row in rows]

    def forget_user(self, tenant_id: str, user_id: str) -> int:
        with self._lock:
            cursor = self._db.execute(
                "DELETE FROM jobs WHERE tenant_id = ? AND user_id = ?", (tenant_id, user_id)
            )
        return int(cursor.rowcount)

    def expire(self, finished_before: datetime) -> int:
        with self._lock:
            cursor = self._db.execute(
                "DELETE FROM jobs WHERE finished_at IS NOT NULL AND finished_at < ?",
                (finished_before.isoformat(),),
            )
        return int(cursor.rowcount)

    def _change(self, job_id: str, change: Callable[[Job], Job | None]) -> Job | None:
        """Apply ``change`` to the stored job in one transaction; None (nothing written)
        when the job is gone or ``change`` declines."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(
                    "SELECT job FROM jobs WHERE job_id = ?", (job_id,)
                ).fetchone()
                changed = None if row is None else change(Job.model_validate_json(row[0]))
                if changed is not None:
                    finished_at = changed.updated_at.isoformat() if changed.finished else None
                    self._db.execute(
                        "UPDATE jobs SET state = ?, finished_at = ?, job = ? WHERE job_id = ?",
                        (changed.state, finished_at, changed.model_dump_json(), job_id),
                    )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        return changed


def _finished(job: Job, update: dict[str, Any]) -> Job | None:
    if job.finished:
        return None
    if update.get("done", 0) is None:
        update = {**update, "done": job.total}
    return job.model_copy(update=update)
