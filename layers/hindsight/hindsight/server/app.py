"""The Starlette application of ``hindsight serve``.

One route per operation of ``hindsight.api.operations`` (except ``POST /mcp``, served by
``server.mcp``): the body is read on the event loop with the API's limit, then the
operation's route function (``hindsight.api.routes``, the same one the Lambda handler
calls) runs in a worker thread with the caller its key names.

Two pools of worker threads, so that a read never waits for a write to finish:

- reads (retrieve, context, list, get, health, the docs): ``threads`` at once;
- writes (stores, documents, reflection, reviews, forgetting, and MCP tool calls), which
  embed and commit: ``write_threads`` at once (default 8 too). Writes beyond that wait
  their turn on the event loop without holding a thread. Writes in flight together
  share the embedding engine's calls (the bootstrap's micro-batching embedder), so a
  few more than the cores are worth having; they never hold a read's thread.

Answers are the handlers' answers: the same statuses and bodies, errors as
``{"status": "error", "message"}`` (404 for an unknown path, 405 with ``Allow`` for a
known path with another method, as the template-driven gateway answers them). Every
answer carries ``X-Request-Id``; every request is logged once (``hindsight.server``).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hindsight.api.auth import authenticate
from hindsight.api.errors import headers_for
from hindsight.api.http import body_limit, to_json
from hindsight.api.nearest_route import not_found_message
from hindsight.api.operations import OPERATIONS, Operation
from hindsight.api.route_calls import Answer, RouteRequest
from hindsight.api.routes import TRANSPORT_OPERATIONS, call_route, error_body, error_status
from hindsight.bootstrap import get_service, get_settings
from hindsight.core.errors import HindsightError
from hindsight.core.models import Principal
from hindsight.server.bodies import ClientDisconnectedError, read_body
from hindsight.server.home import HOME_HEADERS, home_page
from hindsight.server.jobs import JobWorkers
from hindsight.server.mcp import McpEndpoint

logger = logging.getLogger("hindsight.server")

DEFAULT_THREADS = 8
READ_OPERATIONS = frozenset(
    {
        "retrieve_memories",
        "build_context",
        "list_memories",
        "get_memory",
        "health",
        "openapi_document",
        "docs_page",
        "reflection_status",
        "explorer_page",
        "explorer_asset",
        "get_job",
    }
)


DEFAULT_WRITE_THREADS = 8


@dataclass(frozen=True)
class Pools:
    """How many route calls of each kind run at once (anyio capacity limiters)."""

    reads: anyio.CapacityLimiter
    writes: anyio.CapacityLimiter

    def for_operation(self, operation_id: str) -> anyio.CapacityLimiter:
        return self.reads if operation_id in READ_OPERATIONS else self.writes


_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


# --- answers ---------------------------------------------------------------------------
def error_answer(error: BaseException) -> Answer:
    """An error as the handlers answer it, logged as the handlers log it."""
    status, message = error_status(error)
    if not isinstance(error, HindsightError) and status >= 500:
        logger.error("unexpected error", exc_info=error, extra={"fields": {"status": status}})
    elif status >= 500:
        fields = {"status": status, "error": type(error).__name__, "reason": message}
        logger.warning("request failed", extra={"fields": fields})
    else:
        fields = {"status": status, "error": type(error).__name__}
        logger.info("request refused", extra={"fields": fields})
    headers = {"Connection": "close"} if status == 413 else headers_for(error)
    return Answer(status, error_body(status, message), headers=headers)


def to_response(answer: Answer) -> Response:
    body = answer.body if isinstance(answer.body, str) else to_json(answer.body)
    return Response(
        body.encode("utf-8"),
        status_code=answer.status,
        media_type=answer.media_type,
        headers=dict(answer.headers),
    )


def _note(scope: Scope) -> dict[str, Any]:
    """What the request log line collects about a request (tenant, key id)."""
    note = scope.get("hindsight")
    return note if isinstance(note, dict) else {}


# --- the API routes ------------------------------------------------------------------------
def run_route(
    operation_id: str,
    request: RouteRequest,
    note: dict[str, Any],
    jobs: Callable[[str], None] | None = None,
) -> Answer:
    """One route call in a worker thread: authenticate, parse, run; errors answered.
    ``jobs`` queues a write accepted as a job (``Prefer: respond-async``)."""

    def caller() -> Principal:
        principal = authenticate(request.headers, None, get_settings())
        note.update(tenant=principal.tenant_id, key_id=principal.key_id)
        return principal

    try:
        answer = call_route(operation_id, request, caller, get_service, jobs)
    except Exception as error:
        return error_answer(error)
    if answer.log is not None:
        message, fields = answer.log
        fields = {**fields, "request_id": note.get("request_id")}
        logger.info(message, extra={"fields": fields})
    return answer


def endpoint_for(
    operation: Operation, pools: Pools, jobs: JobWorkers | None = None
) -> Callable[[Request], Any]:
    operation_id = operation.operation_id
    limiter = pools.for_operation(operation_id)

    async def endpoint(request: Request) -> Response:
        note = _note(request.scope)
        try:
            body = b""
            if operation.request is not None:
                body = await read_body(request.scope, request.receive, body_limit())
        except ClientDisconnectedError:
            return Response(status_code=499)  # nobody is listening; for the log line only
        except HindsightError as error:
            return to_response(error_answer(error))
        route_request = RouteRequest(
            dict(request.headers),
            body,
            dict(request.query_params),
            {str(k): str(v) for k, v in request.path_params.items()},
        )
        enqueue = None if jobs is None else jobs.enqueue
        answer = await anyio.to_thread.run_sync(
            run_route, operation_id, route_request, note, enqueue, limiter=limiter
        )
        return to_response(answer)

    endpoint.__name__ = operation_id
    return endpoint


def api_routes(pools: Pools, jobs: JobWorkers | None = None) -> list[Route]:
    routes: list[Route] = []
    for operation in OPERATIONS:
        if operation.operation_id in TRANSPORT_OPERATIONS:
            continue
        endpoint = endpoint_for(operation, pools, jobs)
        route = Route(operation.path, endpoint, methods=[operation.method])
        route.methods = {operation.method}  # no implicit HEAD: the gateway has none either
        routes.append(route)
    return routes


# --- refusals of the router ---------------------------------------------------------------
def allowed_methods(routes: list[Any], path: str) -> list[str]:
    allowed: set[str] = set()
    for route in routes:
        if route.path_regex.match(path):
            allowed |= set(route.methods or ())
    return sorted(allowed)


async def http_error(request: Request, error: Exception) -> Response:
    """404 and 405 from the router, in the API's error shape."""
    status = error.status_code if isinstance(error, HTTPException) else 500
    path = request.url.path
    method = request.method
    headers: dict[str, str] = {}
    if status == 405:
        allowed = allowed_methods(request.app.routes, path)
        headers["Allow"] = ", ".join(allowed)
        message = f"{method} is not allowed on {path}; use {', '.join(allowed)}"
    elif status == 404:
        message = not_found_message(method, path)
    else:
        message = str(getattr(error, "detail", "")) or "the request was refused"
    return to_response(Answer(status, error_body(status, message), headers=headers))


async def unexpected_error(request: Request, error: Exception) -> Response:
    return to_response(error_answer(error))


# --- request ids, the request log, trailing slashes ---------------------------------------
class RequestLog:
    """Outermost middleware: a request id for every request (the client's
    ``X-Request-Id`` if it is a plain token), a trailing slash ignored as the gateway
    ignores it, and one log line per request with its status, time, tenant and key."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        # /explorer/ is redirected instead (explorer_without_slash): a page's relative links
        # resolve against its URL, not against the route that served it
        if len(path) > 1 and path.endswith("/") and path != "/explorer/":
            scope = {**scope, "path": path.rstrip("/") or "/"}
        request_id = self._request_id(scope)
        note: dict[str, Any] = {"request_id": request_id}
        scope = {**scope, "hindsight": note}
        status = 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode("ascii")))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            fields = {
                "method": scope.get("method"),
                "path": scope["path"],
                "status": status,
                "ms": round((time.perf_counter() - started) * 1000.0, 1),
                **note,
            }
            logger.info("request", extra={"fields": fields})

    @staticmethod
    def _request_id(scope: Scope) -> str:
        for name, value in scope.get("headers", ()):
            if name == b"x-request-id":
                text = value.decode("latin-1")
                if _REQUEST_ID.match(text):
                    return text
        return uuid.uuid4().hex


# --- the application ----------------------------------------------------------------------
async def explorer_without_slash(request: Request) -> Response:
    """``/explorer/`` → ``/explorer``, query kept: the page's files are linked relative to
    ``/explorer``, so under ``/explorer/`` they would not be found."""
    query = f"?{request.url.query}" if request.url.query else ""
    return RedirectResponse(f"/explorer{query}", status_code=308)


async def home(request: Request) -> Response:
    """``GET /``: a page linking the docs, the explorer and health (``server.home``)."""
    page = home_page(f"{request.base_url}mcp")
    return HTMLResponse(page, headers=HOME_HEADERS)


def create_app(threads: int = DEFAULT_THREADS, write_threads: int | None = None) -> Starlette:
    """The application; settings and service are the process's (``bootstrap``), so
    configure them first (``LocalServer`` does)."""
    writes = DEFAULT_WRITE_THREADS if write_threads is None else write_threads
    if threads < 1 or writes < 1:
        raise ValueError("threads and write_threads must be at least 1")
    pools = Pools(anyio.CapacityLimiter(threads), anyio.CapacityLimiter(writes))
    mcp = McpEndpoint()
    jobs = JobWorkers(get_service)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # MCP tools run in anyio's default pool: sized like the writes (most tools write)
        anyio.to_thread.current_default_thread_limiter().total_tokens = writes
        await anyio.to_thread.run_sync(jobs.start)  # resumes what a stopped server left
        try:
            async with mcp.running():
                yield
        finally:
            await anyio.to_thread.run_sync(jobs.stop)

    routes: list[Any] = [
        *api_routes(pools, jobs),
        Route("/mcp", mcp),
        Route("/explorer/", explorer_without_slash, methods=["GET"]),
        Route("/", home, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: http_error, Exception: unexpected_error},
    )
    app.router.redirect_slashes = False
    app.add_middleware(RequestLog)
    return app
