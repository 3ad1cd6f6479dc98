"""MCP function: POST /mcp, MCP over streamable HTTP (stateless, JSON responses).

The tools are Hindsight's MCP tools (``hindsight.mcp.tools``, served by
``hindsight.mcp.server``); authentication is the REST API's (Bearer / x-api-key, or the
API Gateway authorizer's context).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hindsight.api.observability import MetricUnit, logger, metrics, tracer
from hindsight.mcp.http import handle_proxy_event, request_principal
from hindsight.mcp.server import build_server


def _observe(tool: str, status: str) -> None:
    metrics.add_metric(name="McpToolCalls", unit=MetricUnit.Count, value=1)
    if status == "error":
        metrics.add_metric(name="McpToolErrors", unit=MetricUnit.Count, value=1)
    logger.info("mcp tool called", tool=tool, outcome=status)


# one request per invocation: the tool runs on the request's own event loop
server = build_server(principal=request_principal, observer=_observe, in_thread=False)


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="McpRequests", unit=MetricUnit.Count, value=1)
    return handle_proxy_event(event, server)
