"""Retrieve function: retrieval, working-memory context, browsing and health.

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


@app.post("/v1/retrieve")
@tracer.capture_method
def retrieve_memories() -> Response[Any]:
    return answer_route(app, "retrieve_memories")


@app.post("/v1/context")
@tracer.capture_method
def build_context() -> Response[Any]:
    return answer_route(app, "build_context")


@app.get("/v1/users/<user_id>/memories")
@tracer.capture_method
def list_memories(user_id: str) -> Response[Any]:
    return answer_route(app, "list_memories", user_id=user_id)


@app.get("/v1/memories/<memory_id>")
@tracer.capture_method
def get_memory(memory_id: str) -> Response[Any]:
    return answer_route(app, "get_memory", memory_id=memory_id)


@app.get("/v1/health")
@tracer.capture_method
def health() -> Response[Any]:
    return answer_route(app, "health")


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
