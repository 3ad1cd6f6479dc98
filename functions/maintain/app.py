"""Maintenance (EventBridge Scheduler, daily): the memory lifecycle's archive pass.

Every user's episodes unused for ``HINDSIGHT_ARCHIVE_AFTER_DAYS`` (90) are archived
(``MemoryService.maintain``, the same use case ``hindsight maintain`` and the local
schedule run): the DynamoDB item is marked archived, and its OpenSearch documents are
deleted (here, and by the stream indexer from the item's change). The run holds the
maintenance lease of the table, so a retry of the schedule never runs beside a run still
going; it then answers ``running-elsewhere`` and does nothing. A failed invocation is
retried by the scheduler and then sent to the schedule's dead-letter queue (alarmed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from hindsight.api.observability import MetricUnit, logger, metrics, tracer
from hindsight.bootstrap import get_service

JOB = "maintenance"


def maintain(renew: Callable[[], None]) -> dict[str, int]:
    return get_service().maintain(renew)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    logger.append_keys(execution_id=(event or {}).get("execution_id"))
    run = get_service().run_exclusive(JOB, maintain)
    counts = dict(run.counts)
    metrics.add_metric(
        name="MemoriesArchived", unit=MetricUnit.Count, value=int(counts.get("archived", 0))
    )
    logger.info("maintenance done", outcome=run.outcome, **counts)
    return {"status": "success", "outcome": run.outcome, **counts}
