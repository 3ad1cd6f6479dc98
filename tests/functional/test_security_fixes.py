"""Known security fixes (issue 15, part 6) through the real Lambda handlers.

- ``GET /v1/health`` without a key says only that the service is up; with a key it counts
  the caller's own tenant, never another's; a wrong key is a 401.
- Every key comparison goes through ``KeyRing.lookup``, which compares digests with
  ``hmac.compare_digest`` against every configured key, whichever matches.
- ``POST /mcp`` refuses a ``Host`` or ``Origin`` it does not answer (DNS rebinding) with a
  403 before looking at the key; loopback and the API Gateway domain work out of the box.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterator
from typing import Any

import pytest

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.api import auth
from hindsight.api.auth import KeyRing, SettingsKeyRingSource, parse_key_config
from hindsight.api.authorizer import authorize
from hindsight.bootstrap import build_memory_service, configure
from hindsight.core.service import MemoryService
from hindsight.mcp.host_check import AllowedPeers, matches
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder
from tests.functional.conftest import (
    ADMIN_KEY,
    EVENTS_DIR,
    GLOBEX_KEY,
    KEYS,
    assert_error,
    call,
)
from tests.functional.test_mcp_function import mcp_event, send

TOOLS_LIST = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}


def _store(user_id: str, content: str, key: str) -> None:
    reply = call("POST", "/v1/memories", body={"user_id": user_id, "content": content}, key=key)
    assert reply.status == 201, reply.body


# --- health -------------------------------------------------------------------------------
def test_health_without_a_key_is_the_status_only(service: MemoryService) -> None:
    _store("u1", "the acme user likes tea", ADMIN_KEY)
    reply = call("GET", "/v1/health", key=None)
    assert reply.status == 200
    assert reply.body == {"status": "success"}


def test_health_with_a_key_counts_only_the_callers_tenant(service: MemoryService) -> None:
    for n in range(3):
        _store("u1", f"acme memory number {n} about tea", ADMIN_KEY)
    _store("u9", "globex memory about coffee", GLOBEX_KEY)
    acme = call("GET", "/v1/health", key=ADMIN_KEY)
    globex = call("GET", "/v1/health", key=GLOBEX_KEY)
    assert acme.status == globex.status == 200
    assert acme.body["indexed_documents"] == 3
    assert globex.body["indexed_documents"] == 1
    assert acme.body["embedding_model"] == "test-hashing-64"
    assert acme.body["embedding_engine"]["engine"] == "test-hashing-64"
    assert acme.body["embedding_engine"]["kernel"] is None  # not the ONNX engine
    assert service.health()["indexed_documents"] == 4  # the operator's view: all


def test_health_with_a_wrong_key_is_a_401(service: MemoryService) -> None:
    assert_error(call("GET", "/v1/health", key="not-a-key-at-all"), 401, "not valid")


def test_health_on_a_function_holding_no_keys_is_the_status_only() -> None:
    """On AWS the health route has no authorizer and its function holds no keys."""
    settings = Settings(backend="memory", api_keys="", allow_anonymous=False)
    built = build_memory_service(settings, embedder=HashingEmbedder(), reflector=None)
    configure(settings, built)
    try:
        reply = call("GET", "/v1/health", key=ADMIN_KEY)
        assert reply.status == 200 and reply.body == {"status": "success"}
    finally:
        configure()


# --- constant-time key comparison ---------------------------------------------------------
def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = hmac.compare_digest

    def counted(a: Any, b: Any) -> bool:
        calls.append(1)
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", counted)
    return calls


@pytest.mark.parametrize("presented", [ADMIN_KEY, GLOBEX_KEY, "no-such-key-000"])
def test_lookup_compares_every_key_in_constant_time(
    monkeypatch: pytest.MonkeyPatch, presented: str
) -> None:
    ring = parse_key_config(json.dumps(KEYS), "test")
    calls = _counting(monkeypatch)
    ring.lookup(presented)
    assert len(calls) == len(KEYS["keys"])  # the same work wherever (or whether) it matches


def test_the_authorizer_and_the_mcp_endpoint_use_the_constant_time_lookup(
    monkeypatch: pytest.MonkeyPatch, service: MemoryService
) -> None:
    calls = _counting(monkeypatch)
    event = {"type": "REQUEST", "methodArn": "arn:x", "headers": {"x-api-key": ADMIN_KEY}}
    settings = Settings(backend="memory", api_keys=json.dumps(KEYS))
    assert authorize(event, SettingsKeyRingSource(settings))["context"]["tenant_id"] == "acme"
    assert len(calls) == len(KEYS["keys"])
    assert send(mcp_event(TOOLS_LIST)).status == 200
    assert len(calls) == 2 * len(KEYS["keys"])


def test_no_module_compares_a_key_with_equality() -> None:
    """The key ring is the only place keys are compared: nothing else holds them."""
    assert KeyRing.lookup.__doc__ and "constant time" in KeyRing.lookup.__doc__
    from pathlib import Path

    import hindsight

    root = Path(hindsight.__file__).parent
    suspicious = []
    for path in root.rglob("*.py"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if "==" in code and any(w in code for w in ("api_key", "presented", "secret")):
                suspicious.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert suspicious == []


# --- MCP: Host and Origin -----------------------------------------------------------------
@pytest.fixture
def mcp_service() -> Iterator[MemoryService]:
    settings = Settings(
        backend="memory",
        api_keys=json.dumps(KEYS),
        mcp_allowed_hosts="memory.example.com",
        mcp_allowed_origins="https://app.example.com",
    )
    built = build_memory_service(
        settings, embedder=HashingEmbedder(), reflector=RuleBasedReflector()
    )
    configure(settings, built)
    yield built
    configure()


def _with_headers(event: dict[str, Any], **headers: str) -> dict[str, Any]:
    for name, value in headers.items():
        event["headers"][name] = value
        event["multiValueHeaders"][name] = [value]
    return event


def test_a_rebound_host_is_refused_before_the_key(mcp_service: MemoryService) -> None:
    event = _with_headers(mcp_event(TOOLS_LIST, key=None), Host="evil.example:8080")
    reply = send(event)
    assert reply.status == 403, reply.body
    assert reply.body is not None
    assert "evil.example:8080" in reply.body["message"]
    assert "HINDSIGHT_MCP_ALLOWED_HOSTS" in reply.body["message"]


def test_a_foreign_origin_is_refused(mcp_service: MemoryService) -> None:
    event = _with_headers(mcp_event(TOOLS_LIST), Host="127.0.0.1:8080", Origin="http://evil.ex")
    reply = send(event)
    assert reply.status == 403
    assert reply.body is not None and "HINDSIGHT_MCP_ALLOWED_ORIGINS" in reply.body["message"]


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("localhost:3000", "http://localhost:5173"),
        ("[::1]:8080", None),
        ("memory.example.com", "https://app.example.com"),  # configured
    ],
)
def test_loopback_and_configured_peers_are_answered(
    mcp_service: MemoryService, host: str, origin: str | None
) -> None:
    headers = {"Host": host, **({"Origin": origin} if origin else {})}
    reply = send(_with_headers(mcp_event(TOOLS_LIST), **headers))
    assert reply.status == 200, reply.body


def test_the_api_gateway_domain_is_answered(service: MemoryService) -> None:
    event = json.loads((EVENTS_DIR / "mcp_tools_list.json").read_text())
    assert event["headers"]["Host"].endswith(".amazonaws.com")
    assert send(event).status == 200
    event["requestContext"]["apiId"] = "local"  # the local gateway's copy proves nothing
    assert send(event).status == 403


def test_star_switches_a_check_off() -> None:
    settings = Settings(backend="memory", mcp_allowed_hosts="*", mcp_allowed_origins="*")
    peers = AllowedPeers.from_settings(settings)
    peers.check({"Host": "anything.example", "Origin": "https://anything.example"})
    strict = AllowedPeers.from_settings(Settings(backend="memory"))
    with pytest.raises(Exception, match="DNS-rebinding"):
        strict.check({"host": "LOCALHOST.evil.example"})


def test_port_patterns_match_like_the_sdk() -> None:
    assert matches("localhost:8080", ["localhost:*"])
    assert matches("LOCALHOST:8080", ["localhost:*"])
    assert not matches("localhost.evil:8080", ["localhost:*"])
    assert not matches("localhost:80x", ["localhost:*"])
    assert matches("localhost", ["localhost"])
