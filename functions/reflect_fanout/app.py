"""Reflection fan-out (EventBridge Scheduler, daily): one queued reflection per user.

The use case (``hindsight.core.usecases.fan_out``) lists the users with episodes
created since the previous run and queues one job each on the SQS queue named by
``HINDSIGHT_REFLECTION_QUEUE_URL``; the workers (functions/reflect_worker) reflect
each user on their own, so one slow user never holds up the rest.

The schedule's input may carry ``since`` (ISO 8601) to look further back, and
``dry_run`` to list the users without queueing anything or moving the cursor.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from hindsight.adapters.aws.sqs_job_queue import SqsReflectionJobQueue
from hindsight.api.observability import MetricUnit, logger, metrics, tracer
from hindsight.bootstrap import configure_job_queue, get_job_queue, get_service
from hindsight.core.errors import InvalidRequestError
from hindsight.core.usecases.fan_out import FanOutRequest, FanOutResult

__all__ = ["SqsReflectionJobQueue", "configure_queue", "job_queue", "lambda_handler"]

configure_queue = configure_job_queue  # tests and tools set the queue
job_queue = get_job_queue


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
    result = get_service().fan_out_reflection(request, get_job_queue())
    metrics.add_metric(name="ReflectionJobsQueued", unit=MetricUnit.Count, value=result.queued)
    logger.info(
        "reflection fan-out done",
        users=len(result.users),
        queued=result.queued,
        since=result.since.isoformat(),
        dry_run=result.dry_run,
    )
    return answer(result)
