"""What an MCP tool call answers, and how failures are mapped to it.

Every call answers a tool result with structured content and the same JSON as text
(``tool_result``). A failure is never a protocol error or a stack trace but an
``{"status": "error", "message": ...}`` result with ``isError`` set: bad arguments
give the validation message, a domain error (``HindsightError``) its own message,
and anything else a fixed "unavailable" message (the details go to the log).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp.types as types
from pydantic import ValidationError

from hindsight.api.errors import is_server_error
from hindsight.core.errors import HindsightError, InvalidRequestError
from hindsight.core.views import iso

logger = logging.getLogger(__name__)

UNAVAILABLE_MESSAGE = "memory storage is unavailable right now; retry later or continue without it"


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, default=iso))


def tool_result(body: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    """Structured content plus the same JSON as text (for clients that read only text)."""
    body = _json_safe(body)
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, ensure_ascii=False))],
        structured_content=body,
        is_error=error,
    )


def error_result(message: str) -> types.CallToolResult:
    return tool_result({"status": "error", "message": message}, error=True)


def invalid_arguments(exc: ValidationError) -> InvalidRequestError:
    """Pydantic's complaint as the REST API words it."""
    from hindsight.api.http import readable_errors

    return InvalidRequestError("invalid arguments: " + readable_errors(exc.errors()))


def failure_result(tool: str, exc: Exception) -> types.CallToolResult:
    """The error result for a tool call that raised ``exc``, logged by how bad it is."""
    if isinstance(exc, HindsightError):
        if is_server_error(exc):
            logger.warning("mcp tool failed tool=%s error=%s", tool, type(exc).__name__)
        else:
            logger.info("mcp tool refused tool=%s error=%s", tool, type(exc).__name__)
        return error_result(exc.message)
    logger.error("mcp tool crashed tool=%s", tool, exc_info=exc)
    return error_result(UNAVAILABLE_MESSAGE)
