"""The route functions (``hindsight.api.routes``) behind a Powertools resolver.

``answer_route(app, operation_id, **path_params)`` is the whole body of every route in
``functions/<name>/app.py``: it reads the resolver's current proxy event into a
``RouteRequest``, calls the route function with the caller the event names (API key,
or the API Gateway authorizer's context), records the metrics and the log line the
route observed with the handlers' Powertools ``metrics`` and ``logger``, and returns
the answer as a Powertools ``Response``. Errors raised on the way reach the resolver's
exception handlers (``hindsight.api.http.build_resolver``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response

from hindsight.api.http import current_principal, raw_body
from hindsight.api.observability import MetricUnit, logger, metrics
from hindsight.api.route_calls import Answer, RouteRequest
from hindsight.api.routes import call_route
from hindsight.bootstrap import get_service


def event_request(event: dict[str, Any], path_params: dict[str, str]) -> RouteRequest:
    """A proxy event as a ``RouteRequest`` (its body decoded when first read)."""
    headers = {str(k): str(v) for k, v in (event.get("headers") or {}).items() if v is not None}
    query = {str(k): str(v) for k, v in (event.get("queryStringParameters") or {}).items()}
    return RouteRequest(headers, partial(raw_body, event), query, path_params)


def observe(answer: Answer) -> None:
    """The route's metrics and log line, through the handlers' Powertools objects."""
    for name, unit, value in answer.metrics:
        metrics.add_metric(name=name, unit=MetricUnit(unit), value=value)
    if answer.log is not None:
        message, fields = answer.log
        logger.info(message, **fields)


def answer_route(
    app: APIGatewayRestResolver, operation_id: str, **path_params: str
) -> Response[Any]:
    """Serve the resolver's current event with the route function of ``operation_id``."""
    request = event_request(app.current_event.raw_event, path_params)
    answer = call_route(operation_id, request, partial(current_principal, app), get_service)
    observe(answer)
    return Response(
        status_code=answer.status,
        content_type=answer.media_type,
        body=answer.body if isinstance(answer.body, str) else dict(answer.body),
        headers=dict(answer.headers) or None,
    )
