"""Reflection worker (SQS): reflects each queued user, reporting partial batch failures.

Each message names one (tenant, user), queued by functions/reflect_fanout. The worker
runs ``MemoryService.reflect`` as a system principal of that tenant (it may read and
write every scope, as the tenant's operator would), from the user's own reflection
cursor. A failing user is reported back to SQS alone (``batchItemFailures``) and
retried; after three receives SQS moves the message to the dead-letter queue.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field

from hindsight.api.observability import MetricUnit, logger, metrics, tracer
from hindsight.bootstrap import get_service
from hindsight.core.commands import ReflectCommand
from hindsight.core.models import Principal

SYSTEM_KEY_ID = "system:scheduled-reflection"

processor = BatchProcessor(event_type=EventType.SQS)


class ReflectionJobMessage(BaseModel):
    """The message body the fan-out sends."""

    model_config = ConfigDict(extra="ignore")

    tenant_id: str = Field(min_length=1, max_length=128)
    user_id: str = Field(min_length=1, max_length=256)


def system_principal(tenant_id: str) -> Principal:
    """The tenant's scheduled reflection: every scope of that tenant, nothing else."""
    return Principal(
        tenant_id=tenant_id,
        key_id=SYSTEM_KEY_ID,
        read_scopes=frozenset({"*"}),
        write_scopes=frozenset({"*"}),
    )


@tracer.capture_method
def reflect_user(record: SQSRecord) -> dict[str, Any]:
    job = ReflectionJobMessage.model_validate_json(record.body)
    result = get_service().reflect(
        system_principal(job.tenant_id), ReflectCommand(user_id=job.user_id)
    )
    metrics.add_metric(name="FactsCreated", unit=MetricUnit.Count, value=len(result.created))
    logger.info(
        "user reflected",
        tenant_id=job.tenant_id,
        user_id=job.user_id,
        episodes=result.episodes_considered,
        facts_created=len(result.created),
        facts_pending=len(result.pending),
    )
    return {"tenant_id": job.tenant_id, "user_id": job.user_id, "created": len(result.created)}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return dict(
        process_partial_response(
            event=event, record_handler=reflect_user, processor=processor, context=context
        )
    )
