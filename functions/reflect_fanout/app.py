"""Reflection fan-out (EventBridge Scheduler, daily): one queued reflection per user.

The use case (``hindsight.core.usecases.fan_out``) lists the users with episodes
created since the previous run and queues one job each on the SQS queue named by
``HINDSIGHT_REFLECTION_QUEUE_URL``; the workers (functions/reflect_worker) reflect
each user on their own, so one slow user never holds up the rest.

The schedule's input may carry ``since`` (ISO 8601) to look further back, and
``dry_run`` to list the users without queueing anything or moving the cursor.
"""

from __future__ import annotations

import threading
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from hindsight.adapters.aws.sqs_job_queue import SqsReflectionJobQueue
from hindsight.api.observability import MetricUnit, logger, metrics, tracer
from hindsight.bootstrap import get_service, get_settings
from hindsight.core.errors import ConfigurationError, InvalidRequestError
from hindsight.core.usecases.fan_out import (
    FanOutReflection,
    FanOutRequest,
    FanOutResult,
    ReflectionJobQueue,
)

__all__ = ["SqsReflectionJobQueue", "configure_queue", "job_queue", "lambda_handler"]

_queue_lock = threading.Lock()
_queue: ReflectionJobQueue | None = None


def configure_queue(queue: ReflectionJobQueue | None = None) -> None:
    """Set (or with no argument, clear) the job queue; tests and tools use this."""
    global _queue
    with _queue_lock:
        _queue = queue


def job_queue() -> ReflectionJobQueue:
    """The configured queue, built from the settings on first use."""
    global _queue
    with _queue_lock:
        if _queue is None:
            url = get_settings().reflection_queue_url.strip()
            if not url:
                raise ConfigurationError(
                    "HINDSIGHT_REFLECTION_QUEUE_URL is not set; point it at the reflection "
                    "SQS queue"
                )
            _queue = SqsReflectionJobQueue(url)
        return _queue


def parse_request(event: dict[str, Any] | None) -> FanOutRequest:
    try:
        return FanOutRequest.model_validate(event or {})
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"]
        raise InvalidRequestError(f"the schedule input is invalid: {problem}") from exc


def answer(result: FanOutResult) -> dict[str, Any]:
    return {
        "status": "success",
        "since": result.since.isoformat(),
        "cursor": result.cursor.isoformat(),
        "users": len(result.users),
        "queued": result.queued,
        "dry_run": result.dry_run,
    }


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse_request(event)
    logger.append_keys(execution_id=(event or {}).get("execution_id"))
    # until the bootstrap offers the fan-out, it is assembled here from the service's ports
    ports = get_service().ports
    result = FanOutReflection(ports.records, job_queue(), ports.clock)(request)
    metrics.add_metric(name="ReflectionJobsQueued", unit=MetricUnit.Count, value=result.queued)
    logger.info(
        "reflection fan-out done",
        users=len(result.users),
        queued=result.queued,
        since=result.since.isoformat(),
        dry_run=result.dry_run,
    )
    return answer(result)
