"""Docs function: GET /v1/openapi.json (the OpenAPI 3.1 document) and GET /docs (its page).

Both are public (no key: they describe the API, they reveal no memory) and need no
backend: the document is the committed ``hindsight/api/openapi.json`` in the layer, the
page is rendered from it once per container.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hindsight.api.docs_page import committed_page
from hindsight.api.http import build_resolver
from hindsight.api.observability import MetricUnit, logger, metrics, tracer
from hindsight.api.openapi import committed_document_text

app = build_resolver()

CACHE_CONTROL = {"Cache-Control": "public, max-age=300"}


@app.get("/v1/openapi.json")
@tracer.capture_method
def openapi_document() -> Response[str]:
    metrics.add_metric(name="OpenApiServed", unit=MetricUnit.Count, value=1)
    return Response(
        status_code=200,
        content_type="application/json; charset=utf-8",
        body=committed_document_text(),
        headers=CACHE_CONTROL,
    )


@app.get("/docs")
@tracer.capture_method
def docs_page() -> Response[str]:
    metrics.add_metric(name="DocsServed", unit=MetricUnit.Count, value=1)
    return Response(
        status_code=200,
        content_type="text/html; charset=utf-8",
        body=committed_page(),
        headers=CACHE_CONTROL,
    )


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
