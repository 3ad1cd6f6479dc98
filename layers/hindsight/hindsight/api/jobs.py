"""Writes that need not wait: ``Prefer: respond-async`` and ``GET /v1/jobs/{job_id}``.

A store (``POST /v1/memories``), batch (``/v1/memories/batch``) or document upload
(``/v1/documents``) sent with ``Prefer: respond-async`` (RFC 7240) is checked, kept as a
job (``core/usecases/jobs.py``) and answered ``202 Accepted`` at once, with the job's id,
``Location: /v1/jobs/{job_id}`` to poll and ``Preference-Applied: respond-async``. The job
reports texts embedded out of all while it runs, and once it has succeeded its
``result`` is the body the request would have answered had it waited (``result_status``
its status); the memory is searchable from then on.

A preference, not a command: where no job queue runs (the Lambda handlers: API Gateway
gives a request 29 s, and a store of the largest memory fits in them), the request is
answered when it is done, as without the header, and carries no ``Preference-Applied``.
"""

from __future__ import annotations

from datetime import datetime
from http import HTTPStatus
from typing import Any, Literal

from pydantic import BaseModel, Field

from hindsight.core.jobs import Job, JobKind, JobState

PREFER_HEADER = "Prefer"
RESPOND_ASYNC = "respond-async"
ASYNC_OPERATIONS = frozenset({"store_memory", "store_batch", "store_document"})
POLL_SECONDS = 1  # Retry-After of a 202: how soon a first look is worth it


def prefers_async(prefer: str) -> bool:
    """Whether a ``Prefer`` header's value holds the ``respond-async`` preference."""
    for preference in prefer.split(","):
        token = preference.split(";", 1)[0].split("=", 1)[0].strip().lower()
        if token == RESPOND_ASYNC:
            return True
    return False


def job_location(job_id: str) -> str:
    return f"/v1/jobs/{job_id}"


class JobProgress(BaseModel):
    done: int = Field(description="texts embedded so far (a long memory's chunks, a batch's items)")
    total: int = Field(description="texts to embed in all; 0 until the job has started")


class JobAccepted(BaseModel):
    """The 202 answer of a write sent with ``Prefer: respond-async``."""

    status: Literal["accepted"] = "accepted"
    job_id: str
    state: JobState
    location: str = Field(description="where to poll the job: GET this path")


class JobResponse(BaseModel):
    """``GET /v1/jobs/{job_id}``: how the job is doing, and how it ended."""

    status: Literal["success"] = "success"
    job_id: str
    kind: JobKind = Field(description="which request the job does (its operation id)")
    state: JobState = Field(
        description="pending (waiting its turn), running, succeeded or failed; a job the "
        "server was stopped in the middle of runs again when it starts"
    )
    progress: JobProgress
    attempts: int = Field(description="runs started; more than one: resumed after a restart")
    created_at: datetime
    updated_at: datetime
    result: dict[str, Any] | None = Field(
        default=None,
        description="once succeeded: the body the request would have answered had it waited",
    )
    result_status: int | None = Field(
        default=None, description="once succeeded: the status that request would have answered"
    )
    error: str | None = Field(default=None, description="once failed: why, and what to do")


def result_status(job: Job) -> int | None:
    """The status the job's request would have answered (a store that wrote: 201)."""
    if job.state != "succeeded" or job.outcome is None:
        return None
    if job.kind == "store_batch":
        return int(HTTPStatus.OK)
    wrote = job.outcome.get("status") == "success"
    return int(HTTPStatus.CREATED if wrote else HTTPStatus.OK)


def accepted_body(job: Job) -> dict[str, Any]:
    return JobAccepted(
        job_id=job.job_id, state=job.state, location=job_location(job.job_id)
    ).model_dump(mode="json")


def accepted_headers(job: Job) -> dict[str, str]:
    return {
        "Location": job_location(job.job_id),
        "Preference-Applied": RESPOND_ASYNC,
        "Retry-After": str(POLL_SECONDS),
    }


def job_body(job: Job) -> dict[str, Any]:
    view = JobResponse(
        job_id=job.job_id,
        kind=job.kind,
        state=job.state,
        progress=JobProgress(done=job.done, total=job.total),
        attempts=job.attempts,
        created_at=job.created_at,
        updated_at=job.updated_at,
        result=job.outcome if job.state == "succeeded" else None,
        result_status=result_status(job),
        error=job.error,
    )
    return view.model_dump(mode="json", exclude_none=True)
