"""Explorer function: GET /explorer (the memory explorer's page) and its static files.

Both are public, as /docs is: a browser's navigation to the page carries no
Authorization header, and the page and its scripts hold no memory. Everything the page
shows comes from the API's own routes, which it calls with the key the user signs in
with, through the API's authorizer like any client. The files are the layer's
``hindsight/explorer/static``; the route functions are ``hindsight.api.routes``'
``explorer_page`` and ``explorer_asset`` (shared with ``hindsight serve``).
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


@app.get("/explorer")
@tracer.capture_method
def explorer_page() -> Response[Any]:
    return answer_route(app, "explorer_page")


@app.get("/explorer/assets/<name>")
@tracer.capture_method
def explorer_asset(name: str) -> Response[Any]:
    return answer_route(app, "explorer_asset", name=name)


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
