"""Store function: POST /v1/memories, POST /v1/memories/batch and POST /v1/documents."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hindsight.api.documents import document_command
from hindsight.api.http import body_command, build_resolver, current_principal, success
from hindsight.api.observability import MetricUnit, logger, metrics, tracer
from hindsight.bootstrap import get_service
from hindsight.core.commands import StoreBatchCommand, StoreMemoryCommand, StoreOutcome

app = build_resolver()


def _outcome(outcome: StoreOutcome) -> dict[str, Any]:
    return outcome.model_dump(mode="json", exclude_none=True)


def _count(outcomes: list[StoreOutcome]) -> None:
    stored = sum(1 for o in outcomes if o.status == "success")
    metrics.add_metric(name="MemoriesStored", unit=MetricUnit.Count, value=stored)
    metrics.add_metric(
        name="DuplicatesSkipped", unit=MetricUnit.Count, value=len(outcomes) - stored
    )


@app.post("/v1/memories")
@tracer.capture_method
def store_memory() -> Response[dict[str, Any]]:
    principal = current_principal(app)
    command = body_command(app, StoreMemoryCommand)
    outcome = get_service().store(principal, command)
    _count([outcome])
    logger.info("memory stored", memory_id=outcome.memory_id, outcome=outcome.status)
    body = _outcome(outcome)
    return Response(
        status_code=201 if outcome.status == "success" else 200,
        content_type=content_types.APPLICATION_JSON,
        body=body,
    )


@app.post("/v1/memories/batch")
@tracer.capture_method
def store_batch() -> dict[str, Any]:
    principal = current_principal(app)
    command = body_command(app, StoreBatchCommand)
    outcomes = get_service().store_batch(principal, command)
    _count(outcomes)
    logger.info("batch stored", items=len(outcomes))
    return success(results=[_outcome(o) for o in outcomes])


@app.post("/v1/documents")
@tracer.capture_method
def store_document() -> Response[dict[str, Any]]:
    principal = current_principal(app)
    command = document_command(app.current_event.raw_event)
    outcome = get_service().store_document(principal, command)
    metrics.add_metric(name="DocumentsStored", unit=MetricUnit.Count, value=1)
    logger.info(
        "document stored",
        memory_id=outcome.memory_id,
        outcome=outcome.status,
        characters=outcome.characters,
    )
    return Response(
        status_code=201 if outcome.status == "success" else 200,
        content_type=content_types.APPLICATION_JSON,
        body=outcome.model_dump(mode="json", exclude_none=True),
    )


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
