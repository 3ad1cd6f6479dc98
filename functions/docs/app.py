"""Docs function: GET /v1/openapi.json (the OpenAPI 3.1 document) and GET /docs (its page).

Both are public (no key: they describe the API, they reveal no memory) and need no
backend: the document is the committed ``hindsight/api/openapi.json`` in the layer, the
page is rendered from it once per container. The route functions are
``hindsight.api.page_routes.openapi_document`` and ``docs_page`` (shared with ``hindsight
serve``).
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


@app.get("/v1/openapi.json")
@tracer.capture_method
def openapi_document() -> Response[Any]:
    return answer_route(app, "openapi_document")


@app.get("/docs")
@tracer.capture_method
def docs_page() -> Response[Any]:
    return answer_route(app, "docs_page")


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
