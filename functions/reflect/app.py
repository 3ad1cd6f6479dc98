"""Reflect function: distil facts, review them (approve / reject), where reflection stands.

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


@app.post("/v1/reflect")
@tracer.capture_method
def reflect() -> Response[Any]:
    return answer_route(app, "reflect")


@app.post("/v1/semantic/<memory_id>/approve")
@tracer.capture_method
def approve_fact(memory_id: str) -> Response[Any]:
    return answer_route(app, "approve_fact", memory_id=memory_id)


@app.post("/v1/semantic/<memory_id>/reject")
@tracer.capture_method
def reject_fact(memory_id: str) -> Response[Any]:
    return answer_route(app, "reject_fact", memory_id=memory_id)


@app.get("/v1/users/<user_id>/reflection")
@tracer.capture_method
def reflection_status(user_id: str) -> Response[Any]:
    return answer_route(app, "reflection_status", user_id=user_id)


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
