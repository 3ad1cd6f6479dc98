"""Functional tier: each function's lambda_handler driven with API Gateway proxy events.

The service behind the handlers is the in-memory backend with the hashing embedder
(tests.fakes) and the offline rule-based reflector; API keys come from settings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.api.auth import key_sha256
from hindsight.bootstrap import build_memory_service, configure
from hindsight.core.ports import Reflector
from hindsight.core.service import MemoryService
from hindsight.gateway.lambda_emulation import LocalLambdaContext
from hindsight.gateway.lambda_emulation import load_function as load_lambda_function
from hindsight.gateway.lambda_emulation import proxy_event as lambda_proxy_event
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder

ROOT = Path(__file__).resolve().parents[2]
EVENTS_DIR = ROOT / "events"

ADMIN_KEY = "key-acme-admin-0001"  # tenant acme, every scope
CALENDAR_KEY = "key-acme-calendar-0002"  # tenant acme, reads and writes "calendar" only
READONLY_KEY = "key-acme-readonly-0003"  # tenant acme, reads everything, writes nothing
GLOBEX_KEY = "key-globex-admin-0004"  # another tenant
EXAMPLE_KEY = "hs_example_key_change_me"  # the key the sample events in events/ carry

KEYS = {
    "keys": [
        {"key": ADMIN_KEY, "tenant_id": "acme", "key_id": "acme-admin"},
        {
            "key": CALENDAR_KEY,
            "tenant_id": "acme",
            "key_id": "calendar-agent",
            "read_scopes": ["calendar"],
            "write_scopes": ["calendar"],
            "default_scope": "calendar",
        },
        {
            "key_sha256": key_sha256(READONLY_KEY),
            "tenant_id": "acme",
            "key_id": "acme-readonly",
            "read_scopes": ["*"],
            "write_scopes": [],
        },
        {"key": GLOBEX_KEY, "tenant_id": "globex", "key_id": "globex-admin"},
        {"key": EXAMPLE_KEY, "tenant_id": "acme", "key_id": "example"},
    ]
}


def _reflector() -> Reflector:
    return RuleBasedReflector()


@pytest.fixture
def service() -> Iterator[MemoryService]:
    settings = Settings(backend="memory", api_keys=json.dumps(KEYS))
    built = build_memory_service(settings, embedder=HashingEmbedder(), reflector=_reflector())
    configure(settings, built)
    yield built
    configure()


@pytest.fixture
def keyless_service() -> Iterator[MemoryService]:
    """No keys configured, anonymous access off: every request is refused."""
    settings = Settings(backend="memory", api_keys="", allow_anonymous=False)
    built = build_memory_service(settings, embedder=HashingEmbedder(), reflector=_reflector())
    configure(settings, built)
    yield built
    configure()


# Lambda's context and the function's code, as the Lambda runtime would hand them over
LambdaContextStub = partial(
    LocalLambdaContext,
    memory_mb=1024,
    timeout_seconds=30,
    region="eu-west-1",
    account_id="123456789012",
    log_stream_name="test",
)


def load_function(name: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """functions/<name>/app.py's lambda_handler, imported by path as functional_fn_<name>."""
    return load_lambda_function(ROOT / "functions", name, f"functional_fn_{name}")


ROUTES: dict[tuple[str, str], str] = {
    ("POST", "/v1/memories"): "store",
    ("POST", "/v1/memories/batch"): "store",
    ("POST", "/v1/documents"): "store",
    ("POST", "/v1/retrieve"): "retrieve",
    ("POST", "/v1/context"): "retrieve",
    ("GET", "/v1/users/{user_id}/memories"): "retrieve",
    ("GET", "/v1/memories/{memory_id}"): "retrieve",
    ("POST", "/v1/memories/{memory_id}/restore"): "forget",
    ("PATCH", "/v1/memories/{memory_id}"): "forget",
    ("GET", "/v1/health"): "retrieve",
    ("POST", "/v1/reflect"): "reflect",
    ("POST", "/v1/semantic/{memory_id}/approve"): "reflect",
    ("POST", "/v1/semantic/{memory_id}/reject"): "reflect",
    ("GET", "/v1/users/{user_id}/reflection"): "reflect",
    ("DELETE", "/v1/memories/{memory_id}"): "forget",
    ("DELETE", "/v1/users/{user_id}"): "forget",
    ("POST", "/mcp"): "mcp",
}


def proxy_event(
    method: str,
    resource: str,
    *,
    path_params: dict[str, str] | None = None,
    body: Any = None,
    raw_body: str | None = None,
    key: str | None = ADMIN_KEY,
    header: str = "authorization",
    query: dict[str, str] | None = None,
    authorizer: dict[str, Any] | None = None,
    base64_body: bool = False,
) -> dict[str, Any]:
    """An API Gateway REST proxy event (v1) as API Gateway would send it."""
    headers = {"Content-Type": "application/json", "User-Agent": "functional-tests"}
    if key is not None:
        if header == "authorization":
            headers["Authorization"] = f"Bearer {key}"
        else:
            headers["x-api-key"] = key
    text = raw_body
    if text is None and body is not None:
        text = json.dumps(body, ensure_ascii=False)
    return lambda_proxy_event(
        method,
        resource,
        path_parameters=path_params,
        headers=headers,
        query=query,
        body=text,
        base64_body=base64_body,
        stage="prod",
        source_ip="203.0.113.7",
        authorizer=authorizer,
    )


@dataclass
class Reply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]


def invoke(event: dict[str, Any], function: str | None = None) -> Reply:
    """Route an event to the function template.yaml maps it to, and decode the answer."""
    function = function or ROUTES[(event["httpMethod"], event["resource"])]
    handler = load_function(function)
    result = handler(event, LambdaContextStub(f"{function}-function"))
    headers = {k: v for k, v in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[name] = values[-1]
    return Reply(result["statusCode"], json.loads(result["body"]), headers)


def call(method: str, resource: str, function: str | None = None, **kwargs: Any) -> Reply:
    return invoke(proxy_event(method, resource, **kwargs), function)


def assert_error(reply: Reply, status: int, *words: str) -> str:
    """The reply is ``{"status": "error", "message": ...}`` with a readable message."""
    assert reply.status == status, (reply.status, reply.body)
    assert reply.body["status"] == "error"
    assert set(reply.body) == {"status", "message"}
    message = reply.body["message"]
    assert isinstance(message, str) and len(message) >= 10
    assert "Traceback" not in message and 'File "' not in message
    for word in words:
        assert word in message, (word, message)
    return message


def listed(user_id: str, key: str = ADMIN_KEY) -> list[dict[str, Any]]:
    reply = call(
        "GET",
        "/v1/users/{user_id}/memories",
        path_params={"user_id": user_id},
        key=key,
        query={"limit": "50"},
    )
    assert reply.status == 200, reply.body
    return reply.body["results"]
