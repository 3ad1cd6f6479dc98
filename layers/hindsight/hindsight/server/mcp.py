"""``POST /mcp`` in the ASGI server: the MCP SDK's streamable HTTP transport, concurrently.

The same contract as the McpFunction behind API Gateway (``hindsight.mcp.http``):
stateless, JSON responses, the REST API's keys, the same refusals in the same shape
(405 for other methods, 403 for a Host or Origin it does not answer — DNS-rebinding
protection, ``hindsight.mcp.host_check`` —, 401 without a valid key, 413 over the body
limit). One
``StreamableHTTPSessionManager`` runs for the life of the application (``running``);
each request gets its own transport and server task, and the tools run in worker
threads, so a slow tool call holds up no other request.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Message, Receive, Scope, Send

from hindsight.api.auth import authenticate
from hindsight.api.errors import status_for
from hindsight.bootstrap import get_settings
from hindsight.core.commands import max_body_bytes
from hindsight.core.errors import HindsightError
from hindsight.mcp.host_check import AllowedPeers
from hindsight.mcp.http import bind_request_principal, error_proxy_response, request_principal
from hindsight.mcp.server import build_server
from hindsight.server.bodies import ClientDisconnectedError, read_body

logger = logging.getLogger("hindsight.server")

NOT_POST = (
    "{method} is not served on /mcp: the MCP endpoint is stateless (no event stream, no "
    "session); POST JSON-RPC messages to it"
)


def _observe(tool: str, status: str) -> None:
    logger.info("mcp tool called", extra={"fields": {"tool": tool, "outcome": status}})


async def _send_error(send: Send, status: int, message: str, **headers: str) -> None:
    proxy = error_proxy_response(status, message, headers)
    body = str(proxy["body"]).encode()
    raw_headers = [
        (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in proxy["headers"].items()
    ]
    raw_headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


def _replay(body: bytes, receive: Receive) -> Callable[[], Any]:
    """A ``receive`` that hands over the body already read, then waits for the client."""
    delivered = False

    async def replayed() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


class McpEndpoint:
    """The ASGI app mounted at ``/mcp``; ``running()`` belongs in the app's lifespan."""

    def __init__(self) -> None:
        self.server = build_server(principal=request_principal, observer=_observe, in_thread=True)
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        limit = max_body_bytes(get_settings().max_content_chars)
        manager = StreamableHTTPSessionManager(
            app=self.server, json_response=True, stateless=True, max_request_body_size=limit
        )
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = str(scope.get("method", "")).upper()
        if method != "POST":
            await _send_error(
                send, 405, NOT_POST.format(method=method or "this method"), Allow="POST"
            )
            return
        settings = get_settings()
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            AllowedPeers.from_settings(settings).check(headers)  # before the key
            principal = authenticate(headers, None, settings)  # a digest and a lookup
            body = await read_body(scope, receive, max_body_bytes(settings.max_content_chars))
        except HindsightError as error:
            status = status_for(error)
            logger.info("mcp request refused", extra={"fields": {"status": status}})
            await _send_error(send, status, error.message)
            return
        except ClientDisconnectedError:
            return
        note = scope.get("hindsight")
        if isinstance(note, dict):
            note.update(tenant=principal.tenant_id, key_id=principal.key_id)
        if self._manager is None:  # the lifespan did not run: a wiring bug, not the client's
            await _send_error(send, 503, "the MCP transport is not running; restart the server")
            return
        bind_request_principal(principal)
        await self._manager.handle_request(scope, _replay(body, receive), send)
