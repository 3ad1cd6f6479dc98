"""A job: a long write accepted now and done in the background (``core/usecases/jobs.py``).

A job holds what it was asked (its ``input``, the parsed request as JSON, with the ids
its memories will get already chosen), who asked (the caller's ``Principal``: the job
runs with the caller's rights), how far it got (texts embedded of all its texts) and how
it ended: the outcome the same request would have answered had it waited, or the error
that stopped it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from hindsight.core.models import Principal

JobKind = Literal["store_memory", "store_batch", "store_document"]
JobState = Literal["pending", "running", "succeeded", "failed"]
FINISHED: frozenset[str] = frozenset({"succeeded", "failed"})


class Job(BaseModel):
    """One job as the job store keeps it."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    tenant_id: str
    user_id: str
    kind: JobKind
    principal: Principal
    input: dict[str, Any]
    state: JobState = "pending"
    done: int = 0  # texts embedded (a long memory's chunks, a batch's memories)
    total: int = 0  # texts to embed; 0 until the job has read its input
    attempts: int = 0  # runs started (more than one: resumed after the server stopped)
    outcome: dict[str, Any] | None = None  # the use case's answer, as JSON
    error: str | None = None  # what stopped it, and what to do (a failed job)
    created_at: datetime
    updated_at: datetime

    @property
    def finished(self) -> bool:
        return self.state in FINISHED
