"""Forget function: delete one memory, or erase a user and everything derived from them."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hindsight.api.http import build_resolver, current_principal, path_identifier, success
from hindsight.api.observability import MetricUnit, logger, metrics, tracer
from hindsight.bootstrap import get_service

app = build_resolver()


@app.delete("/v1/memories/<memory_id>")
@tracer.capture_method
def delete_memory(memory_id: str) -> dict[str, Any]:
    principal = current_principal(app)
    result = get_service().delete_memory(principal, path_identifier("memory_id", memory_id))
    metrics.add_metric(name="MemoriesDeleted", unit=MetricUnit.Count, value=1)
    logger.info("memory deleted", memory_id=memory_id)
    return success(result)


@app.delete("/v1/users/<user_id>")
@tracer.capture_method
def erase_user(user_id: str) -> dict[str, Any]:
    principal = current_principal(app)
    result = get_service().erase_user(principal, path_identifier("user_id", user_id))
    metrics.add_metric(name="UsersErased", unit=MetricUnit.Count, value=1)
    logger.info("user erased", user_id=user_id)
    return success(result)


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
