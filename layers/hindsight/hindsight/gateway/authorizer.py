"""The template's Lambda authorizer, run before a route's function as API Gateway runs it.

For a route whose API names a REQUEST authorizer (``Auth.DefaultAuthorizer``, unless the
event says ``Authorizer: NONE``), the gateway invokes the authorizer function with a
REQUEST authorizer event; an answer whose policy allows the method ARN lets the request
through with the answer's ``context`` (and ``principalId``) in
``requestContext.authorizer``, where the function's handler finds the caller. An
``Exception("Unauthorized")`` is API Gateway's 401, a policy that does not allow the
method its 403, with the bodies of the template's ``GatewayResponses``; any other
failure of the authorizer is a 500.

The authorizer reads the keys this process is configured with (``bootstrap``), not an
SSM parameter. Keyless local serving (no keys configured, anonymous access on, loopback
only) skips the authorizer, which could only refuse every request.
"""

from __future__ import annotations

import fnmatch
import json
import logging
from collections.abc import Callable
from typing import Any

from hindsight.api.auth import KeyRing, load_key_ring
from hindsight.bootstrap import get_settings
from hindsight.gateway.lambda_emulation import LocalLambdaContext, load_module
from hindsight.gateway.template import AuthorizerSpec, FunctionSpec

logger = logging.getLogger(__name__)

UNAUTHORIZED = "Unauthorized"  # the message API Gateway maps to 401
DEFAULT_RESPONSES: dict[str, tuple[int, str]] = {
    "UNAUTHORIZED": (401, json.dumps({"status": "error", "message": "Unauthorized"})),
    "ACCESS_DENIED": (
        403,
        json.dumps(
            {"status": "error", "message": "User is not authorized to access this resource"}
        ),
    ),
}


class Refusal(Exception):
    """The authorizer refused the request: API Gateway answers ``status`` with ``body``."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


class ConfiguredKeyRingSource:
    """The keys of the settings this process is configured with, read on every call."""

    def key_ring(self) -> KeyRing:
        return load_key_ring(get_settings())


def authorizer_needed() -> bool:
    """False only when serving keyless: no keys configured and anonymous access on."""
    settings = get_settings()
    return len(load_key_ring(settings)) > 0 or not settings.allow_anonymous


def method_arn(stage: str, method: str, path: str) -> str:
    return f"arn:aws:execute-api:local:000000000000:local/{stage}/{method}{path}"


def authorizer_event(proxy: dict[str, Any], arn: str) -> dict[str, Any]:
    """The REQUEST authorizer event API Gateway builds from a request."""
    keys = (
        "resource",
        "path",
        "httpMethod",
        "headers",
        "multiValueHeaders",
        "queryStringParameters",
        "multiValueQueryStringParameters",
        "pathParameters",
        "stageVariables",
        "requestContext",
    )
    return {"type": "REQUEST", "methodArn": arn, **{key: proxy.get(key) for key in keys}}


def _allows(policy: Any, arn: str) -> bool:
    """Whether an IAM policy document allows ``execute-api:Invoke`` on ``arn`` (an
    explicit Deny wins, as in IAM)."""
    statements = (policy or {}).get("Statement") or []
    allowed = False
    for statement in statements if isinstance(statements, list) else [statements]:
        resources = statement.get("Resource") or []
        resources = resources if isinstance(resources, list) else [resources]
        if not any(fnmatch.fnmatchcase(arn, str(r)) for r in resources):
            continue
        if statement.get("Effect") == "Deny":
            return False
        allowed = allowed or statement.get("Effect") == "Allow"
    return allowed


class AuthorizerRunner:
    """Loads the authorizer functions and runs them (the caller holds the invoke lock:
    the authorizer shares the handlers' Powertools state)."""

    def __init__(self) -> None:
        self._handlers: dict[str, Callable[[dict[str, Any], Any], Any]] = {}

    def handler_for(self, spec: FunctionSpec) -> Callable[[dict[str, Any], Any], Any]:
        handler = self._handlers.get(spec.logical_id)
        if handler is None:
            module_path, _, attribute = spec.handler.rpartition(".")
            source = spec.code_dir / (module_path.replace(".", "/") + ".py")
            module = load_module(source, f"hindsight_local_authorizer_{spec.logical_id}")
            configure = getattr(module, "configure_key_source", None)
            if callable(configure):  # keys from this process's settings, not SSM
                configure(ConfiguredKeyRingSource())
            handler = getattr(module, attribute)
            self._handlers[spec.logical_id] = handler
        return handler

    def authorize(
        self, authorizer: AuthorizerSpec, proxy: dict[str, Any], arn: str
    ) -> dict[str, Any]:
        """The ``requestContext.authorizer`` to forward, or ``Refusal``."""
        spec = authorizer.function
        responses = {**DEFAULT_RESPONSES, **authorizer.responses}
        context = LocalLambdaContext(
            spec.logical_id, memory_mb=spec.memory_mb, timeout_seconds=spec.timeout_seconds
        )
        try:
            answer = self.handler_for(spec)(authorizer_event(proxy, arn), context)
        except Exception as exc:
            if str(exc) == UNAUTHORIZED:
                raise Refusal(*responses["UNAUTHORIZED"]) from exc
            logger.exception("authorizer %s failed", spec.logical_id)
            raise Refusal(
                500,
                json.dumps({"status": "error", "message": "the authorizer failed; see the log"}),
            ) from exc
        if not isinstance(answer, dict) or not _allows(answer.get("policyDocument"), arn):
            raise Refusal(*responses["ACCESS_DENIED"])
        forwarded = {str(k): v for k, v in (answer.get("context") or {}).items()}
        forwarded["principalId"] = answer.get("principalId")
        return forwarded
