"""Retrieve function: retrieval, working-memory context, browsing and health."""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hindsight.api.http import (
    body_command,
    build_resolver,
    current_principal,
    parse_model,
    path_identifier,
    query_parameters,
    success,
)
from hindsight.api.observability import MetricUnit, logger, metrics, tracer
from hindsight.bootstrap import get_service
from hindsight.core.commands import ContextCommand, ListMemoriesCommand, RetrieveCommand

app = build_resolver()


@app.post("/v1/retrieve")
@tracer.capture_method
def retrieve_memories() -> dict[str, Any]:
    principal = current_principal(app)
    command = body_command(app, RetrieveCommand)
    started = time.perf_counter()
    result = get_service().retrieve(principal, command)
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    metrics.add_metric(name="RetrieveLatency", unit=MetricUnit.Milliseconds, value=elapsed_ms)
    if result.partial:
        metrics.add_metric(name="RetrievePartial", unit=MetricUnit.Count, value=1)
    logger.info("retrieved", results=len(result.results), partial=result.partial)
    return success(result.model_dump(mode="json"))


@app.post("/v1/context")
@tracer.capture_method
def build_context() -> dict[str, Any]:
    principal = current_principal(app)
    command = body_command(app, ContextCommand)
    result = get_service().context(principal, command)
    metrics.add_metric(name="ContextTokens", unit=MetricUnit.Count, value=result.tokens)
    return success(result.model_dump(mode="json"))


@app.get("/v1/users/<user_id>/memories")
@tracer.capture_method
def list_memories(user_id: str) -> dict[str, Any]:
    principal = current_principal(app)
    command = parse_model(ListMemoriesCommand, {**query_parameters(app), "user_id": user_id})
    result = get_service().list_memories(principal, command)
    metrics.add_metric(name="MemoriesListed", unit=MetricUnit.Count, value=len(result.results))
    return success(result.model_dump(mode="json"))


@app.get("/v1/memories/<memory_id>")
@tracer.capture_method
def get_memory(memory_id: str) -> dict[str, Any]:
    principal = current_principal(app)
    result = get_service().get_memory(principal, path_identifier("memory_id", memory_id))
    metrics.add_metric(name="MemoriesRead", unit=MetricUnit.Count, value=1)
    return success(result)


@app.get("/v1/health")
@tracer.capture_method
def health() -> dict[str, Any]:
    metrics.add_metric(name="HealthChecks", unit=MetricUnit.Count, value=1)
    return success(get_service().health())


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
