"""From one HTTP request to one Lambda invocation and back, without any socket.

``Dispatcher.dispatch`` finds the template route for the method and path, builds the
API Gateway proxy event and Lambda context (``lambda_emulation``), runs the route's
Lambda authorizer as API Gateway would (``authorizer``), invokes the real handler and
turns its proxy response into a ``GatewayResponse``.

Invocations run one at a time, authorizer included: the Powertools resolvers keep the
current event in class state and the handlers share one Metrics object, so they must
not overlap in one process. This is ``sam local start-api``'s fidelity, not a server for
many agents (``hindsight serve`` without ``--gateway`` is that). A request that waits
longer than ``wait_seconds`` (default 29 s, API Gateway's integration timeout) for the
invocation before it is answered 503 with ``Retry-After``; an invocation that outlasts
its function's template ``Timeout`` is logged (Lambda would have stopped it).
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from hindsight.gateway.authorizer import AuthorizerRunner, Refusal, authorizer_needed, method_arn
from hindsight.gateway.lambda_emulation import (
    Handler,
    LocalLambdaContext,
    load_handler,
    proxy_event,
)
from hindsight.gateway.template import FunctionSpec, Route

logger = logging.getLogger(__name__)

DEFAULT_WAIT_SECONDS = 29.0  # API Gateway's integration timeout
BUSY_MESSAGE = (
    "the local gateway runs one invocation at a time, like sam local start-api, and this "
    "request waited {seconds:g} s for the ones before it; retry, or serve concurrent "
    "agents with `hindsight serve` (without --gateway)"
)


@dataclass
class GatewayResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def error_response(status: int, message: str, **extra_headers: str) -> GatewayResponse:
    """``{"status": "error", "message"}`` like every route answers its errors."""
    body = json.dumps({"status": "error", "message": message}, ensure_ascii=False).encode()
    headers = [("Content-Type", "application/json")]
    headers += list(extra_headers.items())
    return GatewayResponse(status, headers, body)


def context_for(spec: FunctionSpec) -> LocalLambdaContext:
    """A fresh Lambda context sized as the template sizes the function."""
    return LocalLambdaContext(
        spec.logical_id, memory_mb=spec.memory_mb, timeout_seconds=spec.timeout_seconds
    )


def handler_for(spec: FunctionSpec) -> Handler:
    """The function's handler, imported under a module name unique to the function."""
    return load_handler(spec.code_dir, spec.handler, f"hindsight_local_fn_{spec.logical_id}")


class Dispatcher:
    """Finds the route, builds the event, authorizes, invokes the handler (one at a time)."""

    def __init__(
        self,
        routes: list[Route],
        stage: str,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
    ) -> None:
        self.routes = routes
        self.stage = stage
        self.wait_seconds = wait_seconds
        self._handlers: dict[str, Handler] = {}
        self._authorizers = AuthorizerRunner()
        self._invoke_lock = threading.Lock()

    def handler_for(self, spec: FunctionSpec) -> Handler:
        handler = self._handlers.get(spec.logical_id)
        if handler is None:
            handler = handler_for(spec)
            self._handlers[spec.logical_id] = handler
        return handler

    def load_all(self) -> None:
        for route in self.routes:
            self.handler_for(route.function)
            if route.authorizer is not None:
                self._authorizers.handler_for(route.authorizer.function)

    def drain(self, timeout: float = DEFAULT_WAIT_SECONDS) -> bool:
        """Shutting down: wait (up to ``timeout``) for the invocation in progress to
        finish and start no other (requests still waiting get 503). True if drained."""
        return self._invoke_lock.acquire(timeout=timeout)

    def resolve(self, method: str, path: str) -> tuple[Route | None, dict[str, str], list[str]]:
        allowed: list[str] = []
        for route in self.routes:
            params = route.match(path)
            if params is None:
                continue
            if route.method in {method, "ANY"}:
                return route, params, []
            allowed.append(route.method)
        return None, {}, sorted(set(allowed))

    def dispatch(
        self,
        method: str,
        target: str,
        headers: list[tuple[str, str]],
        body: bytes,
        source_ip: str,
    ) -> GatewayResponse:
        split = urlsplit(target)
        raw_path = split.path or "/"
        if len(raw_path) > 1:
            raw_path = raw_path.rstrip("/") or "/"
        path = unquote(raw_path)
        route, params, allowed = self.resolve(method, raw_path)
        if route is None:
            if allowed:
                return error_response(
                    405,
                    f"{method} is not allowed on {path}; use {', '.join(allowed)}",
                    Allow=", ".join(allowed),
                )
            from hindsight.api.nearest_route import not_found_message

            return error_response(404, not_found_message(method, path))
        event = proxy_event(
            method,
            route.resource,
            path=path,
            path_parameters=params,
            headers=headers,
            query=split.query,
            body=body,
            stage=self.stage,
            source_ip=source_ip,
        )
        if not self._invoke_lock.acquire(timeout=self.wait_seconds):
            logger.warning("gateway busy: request waited %ss", self.wait_seconds)
            return error_response(
                503, BUSY_MESSAGE.format(seconds=self.wait_seconds), **{"Retry-After": "1"}
            )
        try:
            return self._invoke(route, event, method_arn(self.stage, method, path))
        finally:
            self._invoke_lock.release()

    def _invoke(self, route: Route, event: dict[str, Any], arn: str) -> GatewayResponse:
        """Authorizer, then the function (the caller holds the invoke lock)."""
        if route.authorizer is not None and authorizer_needed():
            try:
                event["requestContext"]["authorizer"] = self._authorizers.authorize(
                    route.authorizer, event, arn
                )
            except Refusal as refusal:
                return GatewayResponse(
                    refusal.status, [("Content-Type", "application/json")], refusal.body.encode()
                )
        spec = route.function
        started = time.monotonic()
        try:
            result = self.handler_for(spec)(event, context_for(spec))
        except Exception:
            logger.exception("function %s failed", spec.logical_id)
            return error_response(502, "the function failed; see the gateway's log for the error")
        elapsed = time.monotonic() - started
        if elapsed > spec.timeout_seconds:
            logger.warning(
                "function %s ran %.1fs, past its %gs timeout: Lambda would have stopped it",
                spec.logical_id,
                elapsed,
                spec.timeout_seconds,
            )
        return from_proxy_result(result, spec.logical_id)


def from_proxy_result(result: Any, function_name: str) -> GatewayResponse:
    """A handler's proxy response as status, headers (multi-value first) and body bytes."""
    if not isinstance(result, dict) or not isinstance(result.get("statusCode"), int):
        logger.error("function %s returned no proxy response", function_name)
        return error_response(502, "the function returned a malformed proxy response")
    headers: list[tuple[str, str]] = []
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers += [(name, str(v)) for v in values]
    seen = {name.lower() for name, _ in headers}
    for name, value in (result.get("headers") or {}).items():
        if name.lower() not in seen:
            headers.append((name, str(value)))
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode()
    return GatewayResponse(int(result["statusCode"]), headers, body)
