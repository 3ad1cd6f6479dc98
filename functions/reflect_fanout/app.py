"""Reflection fan-out (EventBridge Scheduler, daily): one queued reflection per user.

It asks the record store which (tenant, user) pairs have episodic memories created
since the previous run (a cursor kept in the record store itself), sends one SQS
message per pair to ``HINDSIGHT_REFLECTION_QUEUE_URL`` and only then moves the
cursor, so a failed run is retried whole (reflection is idempotent per user: each
user's own reflection cursor skips episodes already distilled). The workers
(functions/reflect_worker) reflect each user on their own, so one slow user never
holds up the rest.

The schedule's input may carry ``since`` (ISO 8601) to look further back, and
``dry_run`` to list the users without queueing anything or moving the cursor.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import AwareDatetime, BaseModel, ConfigDict, ValidationError

from hindsight.api.observability import MetricUnit, logger, metrics, tracer
from hindsight.bootstrap import get_service
from hindsight.core.errors import HindsightError, InvalidRequestError
from hindsight.core.service import MemoryService

QUEUE_URL_ENV = "HINDSIGHT_REFLECTION_QUEUE_URL"
# the fan-out's own cursor lives under a reserved tenant no API key can name
CURSOR_TENANT = "_hindsight"
CURSOR_USER = "_scheduler"
CURSOR_NAME = "reflection-fanout"
FIRST_RUN_SINCE = datetime(1970, 1, 1, tzinfo=UTC)  # first run: every user with episodes
SQS_BATCH = 10  # SendMessageBatch takes at most ten entries


class FanOutError(HindsightError):
    """Some reflection jobs could not be queued; the run is retried, the cursor stays."""

    http_status = 503


@dataclass(frozen=True)
class ReflectionJob:
    """One user to reflect on; the worker's message body."""

    tenant_id: str
    user_id: str
    requested_at: datetime

    def body(self) -> str:
        return json.dumps(
            {
                "tenant_id": self.tenant_id,
                "user_id": self.user_id,
                "requested_at": self.requested_at.isoformat(),
            },
            ensure_ascii=False,
        )


class ReflectionJobQueue(Protocol):
    """Where reflection jobs go (SQS on AWS; a list in tests)."""

    def send(self, jobs: Sequence[ReflectionJob]) -> None:
        """Queue every job or raise FanOutError naming the ones that failed."""


class SqsReflectionJobQueue:
    """SQS adapter: SendMessageBatch in tens; any failed entry raises FanOutError."""

    def __init__(self, queue_url: str, client: Any = None) -> None:
        self.queue_url = queue_url
        self._client = client

    def _sqs(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("sqs")
        return self._client

    def send(self, jobs: Sequence[ReflectionJob]) -> None:
        failed: list[str] = []
        for start in range(0, len(jobs), SQS_BATCH):
            chunk = jobs[start : start + SQS_BATCH]
            entries = [{"Id": str(i), "MessageBody": job.body()} for i, job in enumerate(chunk)]
            try:
                answer = self._sqs().send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            except Exception as exc:  # botocore errors: translate, keep the cause
                raise FanOutError(
                    f"could not queue reflection jobs on {self.queue_url}: {type(exc).__name__}"
                ) from exc
            for failure in answer.get("Failed") or []:
                job = chunk[int(failure["Id"])]
                failed.append(f"{job.tenant_id}/{job.user_id} ({failure.get('Code', '?')})")
        if failed:
            raise FanOutError(
                f"{len(failed)} reflection jobs could not be queued: {', '.join(failed[:10])}"
            )


class FanOutRequest(BaseModel):
    """The schedule's input (extra fields such as ``source`` are ignored)."""

    model_config = ConfigDict(extra="ignore")

    since: AwareDatetime | None = None
    dry_run: bool = False


@dataclass(frozen=True)
class FanOutResult:
    since: datetime
    cursor: datetime
    users: list[tuple[str, str]]
    queued: int
    dry_run: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": "success",
            "since": self.since.isoformat(),
            "cursor": self.cursor.isoformat(),
            "users": len(self.users),
            "queued": self.queued,
            "dry_run": self.dry_run,
        }


def fan_out(
    service: MemoryService, queue: ReflectionJobQueue, request: FanOutRequest
) -> FanOutResult:
    """Queue one reflection per user with episodes created since the last run."""
    started = service.clock.now()
    records = service.records
    since = request.since or records.get_cursor(CURSOR_TENANT, CURSOR_USER, CURSOR_NAME)
    since = since or FIRST_RUN_SINCE
    users = sorted(
        (tenant, user)
        for tenant, user in records.users_with_episodes_since(since)
        if tenant != CURSOR_TENANT
    )
    jobs = [ReflectionJob(tenant, user, started) for tenant, user in users]
    if request.dry_run:
        return FanOutResult(since, since, users, 0, True)
    queue.send(jobs)
    # episodes created while this run was listing are caught next time
    records.set_cursor(CURSOR_TENANT, CURSOR_USER, CURSOR_NAME, started)
    return FanOutResult(since, started, users, len(jobs), False)


_queue_lock = threading.Lock()
_queue: ReflectionJobQueue | None = None


def configure_queue(queue: ReflectionJobQueue | None = None) -> None:
    """Set (or with no argument, clear) the job queue; tests and tools use this."""
    global _queue
    with _queue_lock:
        _queue = queue


def job_queue() -> ReflectionJobQueue:
    global _queue
    with _queue_lock:
        if _queue is None:
            url = os.environ.get(QUEUE_URL_ENV, "").strip()
            if not url:
                raise InvalidRequestError(
                    f"{QUEUE_URL_ENV} is not set; point it at the reflection SQS queue"
                )
            _queue = SqsReflectionJobQueue(url)
        return _queue


def parse_request(event: dict[str, Any] | None) -> FanOutRequest:
    try:
        return FanOutRequest.model_validate(event or {})
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"]
        raise InvalidRequestError(f"the schedule input is invalid: {problem}") from exc


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse_request(event)
    logger.append_keys(execution_id=(event or {}).get("execution_id"))
    result = fan_out(get_service(), job_queue(), request)
    metrics.add_metric(name="ReflectionJobsQueued", unit=MetricUnit.Count, value=result.queued)
    logger.info(
        "reflection fan-out done",
        users=len(result.users),
        queued=result.queued,
        since=result.since.isoformat(),
        dry_run=result.dry_run,
    )
    return result.as_dict()
