"""MCP over streamable HTTP inside one Lambda invocation (API Gateway proxy events).

``handle_proxy_event(event, server)`` refuses a ``Host`` or ``Origin`` it does not answer
(403, DNS-rebinding protection: ``hindsight.mcp.host_check``), authenticates the request
exactly like the REST API (``Authorization: Bearer`` or ``x-api-key`` → ``Principal``),
then hands the request to the MCP SDK's own streamable-HTTP transport in stateless, JSON-response
mode through a minimal in-process ASGI call, and turns the answer back into a proxy
response. Stateless means no session and no ``initialize`` needed: a lone
``tools/call`` works. The principal reaches the tools through a context variable
(``request_principal``), set for the duration of the request.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextvars
import json
import logging
from collections.abc import Mapping, MutableMapping
from typing import Any
from urllib.parse import urlencode

from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from hindsight.api.auth import authenticate
from hindsight.api.errors import status_for
from hindsight.core.commands import body_too_large, max_body_bytes
from hindsight.core.errors import HindsightError, UnavailableError
from hindsight.core.models import Principal
from hindsight.mcp.host_check import AllowedPeers
from hindsight.mcp.results import UNAVAILABLE_MESSAGE
from hindsight.settings import Settings

logger = logging.getLogger(__name__)

JSONRPC_UNAUTHORIZED = -32001  # implementation-defined server error code
_principal: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "hindsight_mcp_principal", default=None
)


def request_principal() -> Principal:
    """The caller of the MCP request being served (set by ``handle_proxy_event``)."""
    principal = _principal.get()
    if principal is None:  # a tool called outside a request: a wiring bug
        raise UnavailableError("no authenticated caller for this MCP request")
    return principal


def bind_request_principal(principal: Principal) -> None:
    """Make ``principal`` the caller of the MCP request served in this context (the
    ASGI server sets it per request task; tasks started from it inherit it)."""
    _principal.set(principal)


def error_proxy_response(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``{"status": "error", "message"}`` like every route, readable by MCP clients too.

    The body is also a JSON-RPC error (``id`` null), so an MCP client shows the
    message instead of a bare HTTP status.
    """
    body = {
        "status": "error",
        "message": message,
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": JSONRPC_UNAUTHORIZED if status == 401 else -32600, "message": message},
    }
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "body": json.dumps(body, ensure_ascii=False),
        "isBase64Encoded": False,
    }


def _body(event: Mapping[str, Any]) -> bytes:
    raw = event.get("body")
    if raw is None:
        return b""
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            return b""
    return str(raw).encode("utf-8", errors="surrogatepass")


def _headers(event: Mapping[str, Any]) -> list[tuple[str, str]]:
    multi = event.get("multiValueHeaders") or {}
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name, values in multi.items():
        for value in values or []:
            pairs.append((str(name), str(value)))
        seen.add(str(name).lower())
    for name, value in (event.get("headers") or {}).items():
        if value is not None and str(name).lower() not in seen:
            pairs.append((str(name), str(value)))
    return pairs


def _asgi_scope(event: Mapping[str, Any], headers: list[tuple[str, str]]) -> dict[str, Any]:
    path = str(event.get("path") or "/mcp")
    query = urlencode(event.get("queryStringParameters") or {})
    identity = (event.get("requestContext") or {}).get("identity") or {}
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": str(event.get("httpMethod") or "POST").upper(),
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers],
        "client": (str(identity.get("sourceIp") or "127.0.0.1"), 0),
        "server": ("lambda", 443),
    }


async def _serve(
    server: Server[Any], principal: Principal, scope: dict[str, Any], body: bytes, limit: int
) -> tuple[int, list[tuple[str, str]], bytes]:
    """One request through the SDK's stateless JSON transport; (status, headers, body)."""
    _principal.set(principal)  # tasks started below inherit it
    done = asyncio.Event()
    delivered = False
    status = 500
    response_headers: list[tuple[str, str]] = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
            response_headers.extend(
                (k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])
            )
        elif message["type"] == "http.response.body":
            chunks.append(bytes(message.get("body", b"")))
            if not message.get("more_body"):
                done.set()

    manager = StreamableHTTPSessionManager(
        app=server, json_response=True, stateless=True, max_request_body_size=limit
    )
    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return status, response_headers, b"".join(chunks)


def api_domain(event: Mapping[str, Any]) -> list[str]:
    """The API Gateway domain the request came through: API Gateway routes only its own
    domains, so that ``Host`` cannot be rebound. The local gateway (``apiId`` "local")
    copies the request's ``Host`` there, which proves nothing, so it is not trusted."""
    context = event.get("requestContext") or {}
    domain = str(context.get("domainName") or "")
    return [domain] if domain and context.get("apiId") != "local" else []


def handle_proxy_event(
    event: Mapping[str, Any], server: Server[Any], settings: Settings | None = None
) -> dict[str, Any]:
    """Serve one ``/mcp`` API Gateway proxy event; never raises."""
    method = str(event.get("httpMethod") or "").upper()
    if method != "POST":
        return error_proxy_response(
            405,
            f"{method or 'this method'} is not served on /mcp: the MCP endpoint is stateless "
            "(no event stream, no session); POST JSON-RPC messages to it",
            {"Allow": "POST"},
        )
    try:
        if settings is None:
            from hindsight.bootstrap import get_settings

            settings = get_settings()
        peers = AllowedPeers.from_settings(settings, extra_hosts=api_domain(event))
        peers.check(dict(_headers(event)))  # DNS rebinding, before the key
        authorizer = (event.get("requestContext") or {}).get("authorizer")
        principal = authenticate(event.get("headers"), authorizer, settings)
    except HindsightError as exc:
        status = status_for(exc)
        logger.info("mcp request refused status=%s", status)
        return error_proxy_response(status, exc.message)
    body = _body(event)
    limit = max_body_bytes(settings.max_content_chars)
    if len(body) > limit:
        return error_proxy_response(413, body_too_large(len(body), limit))
    headers = _headers(event)
    try:
        status, response_headers, payload = asyncio.run(
            _serve(server, principal, _asgi_scope(event, headers), body, limit)
        )
    except Exception:
        logger.exception("mcp transport failed")
        return error_proxy_response(503, UNAVAILABLE_MESSAGE)
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, value in response_headers:
        if name.lower() == "content-length":
            continue
        single[name] = value
        multi.setdefault(name, []).append(value)
    text = payload.decode("utf-8", errors="replace")
    logger.info("mcp request served status=%s key_id=%s", status, principal.key_id)
    return {
        "statusCode": status,
        "headers": single,
        "multiValueHeaders": multi,
        "body": text,
        "isBase64Encoded": False,
    }
