"""Forget function: delete one memory, or erase a user and everything derived from them;
restore an archived memory; pin or unpin a memory; export a user's memory.

Each route is its route function in ``hindsight.api.routes`` (shared with ``hindsight
serve``), answered for the current event by ``answer_route``.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hindsight.api.http import build_resolver
from hindsight.api.lambda_routes import answer_route
from hindsight.api.observability import logger, metrics, tracer

app = build_resolver()


@app.delete("/v1/memories/<memory_id>")
@tracer.capture_method
def delete_memory(memory_id: str) -> Response[Any]:
    return answer_route(app, "delete_memory", memory_id=memory_id)


@app.post("/v1/memories/<memory_id>/restore")
@tracer.capture_method
def restore_memory(memory_id: str) -> Response[Any]:
    return answer_route(app, "restore_memory", memory_id=memory_id)


@app.patch("/v1/memories/<memory_id>")
@tracer.capture_method
def patch_memory(memory_id: str) -> Response[Any]:
    return answer_route(app, "patch_memory", memory_id=memory_id)


@app.get("/v1/users/<user_id>/export")
@tracer.capture_method
def export_user(user_id: str) -> Response[Any]:
    return answer_route(app, "export_user", user_id=user_id)


@app.delete("/v1/users/<user_id>")
@tracer.capture_method
def erase_user(user_id: str) -> Response[Any]:
    return answer_route(app, "erase_user", user_id=user_id)


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
