"""The MCP server: Hindsight's tools behind the SDK's low-level ``Server``, and stdio.

``build_server()`` returns the SDK's ``Server`` with five tools: ``memory_store``,
``memory_retrieve``, ``memory_reflect``, ``memory_forget`` and ``memory_list``
(their schemas and descriptions: ``tool_schemas``; what they do: ``tools``; how
failures answer: ``results``). ``run_stdio`` serves it over stdin/stdout (what
``hindsight mcp`` does); ``hindsight.mcp.http`` serves it over streamable HTTP.

Who is calling comes from a ``principal`` callable: fixed for stdio, per request
for HTTP (``hindsight.mcp.http`` sets it from the API key).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from hindsight.core.models import Principal
from hindsight.mcp.tool_schemas import TOOL_NAMES, TOOL_SPECS, TOOLS
from hindsight.mcp.tools import PrincipalProvider, ServiceProvider, call_tool_sync

__all__ = ["SERVER_NAME", "TOOL_NAMES", "build_server", "run_stdio", "serve_stdio"]

logger = logging.getLogger(__name__)

SERVER_NAME = "hindsight"
SERVER_VERSION = "0.1.0"
INSTRUCTIONS = (
    "Hindsight is the user's long-term memory, shared with their other agents. Before "
    "answering something that may depend on the user (preferences, constraints, past "
    "events, plans), call memory_retrieve. When the user states a fact, preference, "
    "constraint or event worth keeping, call memory_store. Never store small talk."
)

ToolObserver = Callable[[str, str], None]  # (tool name, result status)


# --- the server --------------------------------------------------------------------------
def build_server(
    principal: PrincipalProvider,
    service: ServiceProvider | None = None,
    observer: ToolObserver | None = None,
    in_thread: bool = True,
) -> Server[Any]:
    """The low-level MCP server with Hindsight's tools, for any transport.

    ``principal`` is asked on every call who is calling; ``service`` gives the memory
    service (default: the process-wide one from ``hindsight.bootstrap``); ``observer``
    hears (tool, status) after each call (the Lambda function counts metrics with it).
    ``in_thread``: run the (blocking) service call in a worker thread, so a long-lived
    loop (stdio) stays responsive; a one-request loop (HTTP in Lambda) skips the thread.
    """
    if service is None:
        from hindsight.bootstrap import get_service

        service = get_service
    resolved_service: ServiceProvider = service
    listing = [spec.tool() for spec in TOOLS]  # schemas built once, not per request

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.model_copy(deep=True) for tool in listing])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in TOOL_SPECS:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown tool {params.name!r}; the tools are {', '.join(TOOL_NAMES)}",
            )
        caller = principal()  # resolved here: the request's context, not the worker thread's
        if in_thread:
            result = await anyio.to_thread.run_sync(
                call_tool_sync, params.name, params.arguments, lambda: caller, resolved_service
            )
        else:
            result = call_tool_sync(params.name, params.arguments, lambda: caller, resolved_service)
        if observer is not None:
            status = (result.structured_content or {}).get("status", "error")
            observer(params.name, str(status))
        return result

    return Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        title="Hindsight memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(server: Server[Any], warm: Callable[[], object] | None = None) -> None:
    """Serve ``server`` over this process's stdin/stdout until the client closes it.

    ``warm`` (e.g. building the service and loading the model) runs in a worker thread
    once stdout is claimed by the transport, so its logs cannot corrupt the stream.
    """
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream), anyio.create_task_group() as tg:
        if warm is not None:
            tg.start_soon(_warm, warm)
        await server.run(read_stream, write_stream, server.create_initialization_options())
        tg.cancel_scope.cancel()


async def _warm(warm: Callable[[], object]) -> None:
    try:
        await anyio.to_thread.run_sync(warm)
    except Exception:
        logger.exception("mcp warm-up failed; tools will report the service unavailable")


def run_stdio(principal: Principal, service: ServiceProvider | None = None) -> None:
    """Run the stdio server as ``principal`` (what ``hindsight mcp`` does)."""
    if service is None:
        from hindsight.bootstrap import get_service

        service = get_service
    provider: ServiceProvider = service

    def warm() -> None:
        provider().warm_up()

    anyio.run(serve_stdio, build_server(lambda: principal, provider), warm)
