"""Reflect function: distil facts and review them (approve / reject)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hindsight.api.http import (
    body_command,
    build_resolver,
    current_principal,
    path_identifier,
    success,
)
from hindsight.api.observability import MetricUnit, logger, metrics, tracer
from hindsight.bootstrap import get_service
from hindsight.core.commands import ReflectCommand

app = build_resolver()


@app.post("/v1/reflect")
@tracer.capture_method
def reflect() -> dict[str, Any]:
    principal = current_principal(app)
    command = body_command(app, ReflectCommand)
    result = get_service().reflect(principal, command)
    metrics.add_metric(name="FactsCreated", unit=MetricUnit.Count, value=len(result.created))
    metrics.add_metric(name="FactsPending", unit=MetricUnit.Count, value=len(result.pending))
    logger.info(
        "reflected",
        episodes=result.episodes_considered,
        facts_created=len(result.created),
        facts_pending=len(result.pending),
        dry_run=result.dry_run,
    )
    return success(result.model_dump(mode="json"))


@app.post("/v1/semantic/<memory_id>/approve")
@tracer.capture_method
def approve_fact(memory_id: str) -> dict[str, Any]:
    principal = current_principal(app)
    result = get_service().approve(principal, path_identifier("memory_id", memory_id))
    metrics.add_metric(name="FactsApproved", unit=MetricUnit.Count, value=1)
    return success(result)


@app.post("/v1/semantic/<memory_id>/reject")
@tracer.capture_method
def reject_fact(memory_id: str) -> dict[str, Any]:
    principal = current_principal(app)
    result = get_service().reject(principal, path_identifier("memory_id", memory_id))
    metrics.add_metric(name="FactsRejected", unit=MetricUnit.Count, value=1)
    return success(result)


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
