"""The MCP function (functions/mcp) driven with API Gateway proxy events carrying JSON-RPC.

Stateless streamable HTTP with JSON responses: every event stands alone, so a
``tools/call`` works without a prior ``initialize``. Authentication is the REST API's.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import build_memory_service, configure, get_settings, rewire
from hindsight.core.service import MemoryService
from hindsight.mcp.results import UNAVAILABLE_MESSAGE
from hindsight.mcp.tools import DUPLICATE_MESSAGE
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder
from tests.functional.conftest import (
    ADMIN_KEY,
    CALENDAR_KEY,
    EVENTS_DIR,
    GLOBEX_KEY,
    KEYS,
    READONLY_KEY,
    LambdaContextStub,
    load_function,
    proxy_event,
)

ACCEPT = "application/json, text/event-stream"
PEANUTS = {
    "user_id": "test_user",
    "session_id": "test_session",
    "content": "用户对花生过敏",
    "category": "constraint",
}


@dataclass
class RpcReply:
    status: int
    headers: dict[str, str]
    body: dict[str, Any] | None

    @property
    def result(self) -> dict[str, Any]:
        assert self.status == 200, (self.status, self.body)
        assert self.body is not None and "result" in self.body, self.body
        return self.body["result"]

    @property
    def tool(self) -> tuple[dict[str, Any], bool]:
        """(structured content, isError); checks the text content carries the same JSON."""
        result = self.result
        [text] = result["content"]
        assert text["type"] == "text"
        assert json.loads(text["text"]) == result["structuredContent"]
        return result["structuredContent"], result["isError"]


def mcp_event(
    message: dict[str, Any] | None = None,
    *,
    key: str | None = ADMIN_KEY,
    raw_body: str | None = None,
    accept: str = ACCEPT,
    method: str = "POST",
    **kwargs: Any,
) -> dict[str, Any]:
    event = proxy_event(method, "/mcp", body=message, raw_body=raw_body, key=key, **kwargs)
    event["headers"]["Accept"] = accept
    event["multiValueHeaders"]["Accept"] = [accept]
    return event


def send(event: dict[str, Any]) -> RpcReply:
    handler = load_function("mcp")
    result = handler(event, LambdaContextStub("mcp-function"))
    assert isinstance(result["body"], str)
    body = json.loads(result["body"]) if result["body"] else None
    headers = {k.lower(): v for k, v in (result.get("headers") or {}).items()}
    return RpcReply(result["statusCode"], headers, body)


def rpc(method: str, params: dict[str, Any] | None = None, **kwargs: Any) -> RpcReply:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method}
    if params is not None:
        message["params"] = params
    return send(mcp_event(message, **kwargs))


def tool(name: str, key: str = ADMIN_KEY, **arguments: Any) -> tuple[dict[str, Any], bool]:
    return rpc("tools/call", {"name": name, "arguments": arguments}, key=key).tool


def test_tools_call_without_initialize_stores_the_memory(service: MemoryService) -> None:
    reply = send(json.loads((EVENTS_DIR / "mcp_tools_call.json").read_text()))
    content, failed = reply.tool
    assert reply.headers["content-type"].startswith("application/json")
    assert reply.body is not None and reply.body["id"] == 1
    assert not failed
    assert content["status"] == "success"
    stored = service.ports.records.get("acme", content["memory_id"])
    assert stored is not None and stored.content == "用户对花生过敏"
    assert stored.category == "constraint" and stored.session_id == "test_session"


def test_the_sample_tools_list_event_lists_the_tools(service: MemoryService) -> None:
    reply = send(json.loads((EVENTS_DIR / "mcp_tools_list.json").read_text()))
    names = [t["name"] for t in reply.result["tools"]]
    assert names == [
        "memory_store",
        "memory_retrieve",
        "memory_reflect",
        "memory_forget",
        "memory_list",
    ]
    store = reply.result["tools"][0]
    assert "small talk" in store["description"]
    assert store["inputSchema"]["properties"]["category"]["description"]


def test_initialize_then_list_answers_like_a_server(service: MemoryService) -> None:
    init = rpc(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "functional", "version": "1"},
        },
    )
    assert init.result["serverInfo"]["name"] == "hindsight"
    assert "tools" in init.result["capabilities"]
    assert "memory_retrieve" in init.result["instructions"]
    assert "mcp-session-id" not in init.headers  # stateless: no session
    note = send(mcp_event({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    assert note.status == 202 and note.body is None


def test_duplicate_is_skipped_and_retrieve_finds_it(service: MemoryService) -> None:
    first, _ = tool("memory_store", **PEANUTS)
    tool("memory_store", user_id="test_user", content="明天去北京出差")
    again, failed = tool("memory_store", **PEANUTS)
    assert not failed
    assert again == {
        "status": "skipped",
        "message": DUPLICATE_MESSAGE,
        "memory_id": first["memory_id"],
    }
    found, failed = tool("memory_retrieve", user_id="test_user", query="饮食禁忌 花生")
    assert not failed and found["status"] == "success"
    assert found["results"][0]["memory_id"] == first["memory_id"]
    assert set(found) == {"status", "results", "has_more", "next_cursor", "partial"}
    assert set(found["results"][0]) == {
        "memory_id",
        "kind",
        "content",
        "category",
        "occurred_at",
        "score",
        "probability",
    }


def test_a_long_memory_is_stored_and_comes_back_cut_around_the_match(
    service: MemoryService,
) -> None:
    filler = " ".join(f"Paragraph {i} is about invoices and budgets." for i in range(1_000))
    content = filler + " The spare key to the workshop is under the blue flowerpot. " + filler
    stored, failed = tool("memory_store", user_id="test_user", content=content)
    assert not failed and stored["status"] == "success"
    found, failed = tool("memory_retrieve", user_id="test_user", query="workshop spare key")
    assert not failed
    top = found["results"][0]
    assert top["memory_id"] == stored["memory_id"] and top["content_truncated"] is True
    assert "blue flowerpot" in top["content"] and len(top["content"]) <= 2_002
    refused, failed = tool("memory_store", user_id="test_user", content="x" * 100_001)
    assert failed and "HINDSIGHT_MAX_CONTENT_CHARS" in refused["message"]


def test_retrieve_pages_at_most_twenty(service: MemoryService) -> None:
    for i in range(23):
        tool("memory_store", user_id="u-many", content=f"第{i}次提到喜欢喝绿茶 number {i}")
    page, failed = tool("memory_retrieve", user_id="u-many", query="绿茶", top_k=20)
    assert not failed
    assert len(page["results"]) == 20 and page["has_more"] is True
    rest, _ = tool(
        "memory_retrieve", user_id="u-many", query="绿茶", top_k=20, cursor=page["next_cursor"]
    )
    assert len(rest["results"]) == 3 and rest["has_more"] is False
    too_many, failed = tool("memory_retrieve", user_id="u-many", query="绿茶", top_k=21)
    assert failed and "top_k" in too_many["message"]


def test_reflect_list_and_forget(service: MemoryService) -> None:
    stored, _ = tool("memory_store", user_id="u2", content="我对花生过敏")
    reflected, failed = tool("memory_reflect", user_id="u2")
    assert not failed and reflected["episodes_considered"] == 1
    [fact] = reflected["created"]
    assert fact["kind"] == "semantic" and "花生" in fact["content"]
    assert fact["confidence"] in {"high", "medium", "low"} and fact["status"]
    listed, _ = tool("memory_list", user_id="u2")
    assert {m["memory_id"] for m in listed["results"]} == {stored["memory_id"], fact["memory_id"]}
    gone, failed = tool("memory_forget", memory_id=stored["memory_id"])
    assert not failed
    assert gone == {
        "status": "success",
        "memory_id": stored["memory_id"],
        "deleted_facts": [fact["memory_id"]],
    }
    empty, _ = tool("memory_list", user_id="u2")
    assert empty["results"] == []


@pytest.mark.parametrize(
    ("name", "arguments", "words"),
    [
        ("memory_store", {"user_id": "u1"}, ["content: field required"]),
        ("memory_store", {"user_id": "u1", "content": "   "}, ["content", "empty"]),
        ("memory_store", {"user_id": "u1", "content": "x", "colour": "red"}, ["colour"]),
        ("memory_store", {"user_id": "u1", "content": "x", "occurred_at": "soon"}, ["ISO 8601"]),
        ("memory_retrieve", {"user_id": "u1", "query": "x", "top_k": 0}, ["top_k"]),
        ("memory_retrieve", {"user_id": "u 1", "query": "x"}, ["user_id"]),
        ("memory_list", {"user_id": "u1", "kind": "dream"}, ["kind"]),
        ("memory_forget", {"memory_id": "mem_missing"}, ["mem_missing"]),
    ],
)
def test_bad_arguments_answer_error_results(
    service: MemoryService, name: str, arguments: dict[str, Any], words: list[str]
) -> None:
    content, failed = tool(name, **arguments)
    assert failed
    assert set(content) == {"status", "message"} and content["status"] == "error"
    for word in words:
        assert word in content["message"], content["message"]
    assert "Traceback" not in content["message"] and 'File "' not in content["message"]


def test_unknown_tool_is_a_protocol_error(service: MemoryService) -> None:
    reply = rpc("tools/call", {"name": "memory_dream", "arguments": {}})
    assert reply.body is not None and reply.body["error"]["code"] == -32602
    assert "memory_store" in reply.body["error"]["message"]


@pytest.mark.parametrize(
    ("key", "header"),
    [(None, "authorization"), ("not-a-key-000000", "authorization"), ("nope-0000", "x-api-key")],
)
def test_requests_without_a_valid_key_are_refused_401(
    service: MemoryService, key: str | None, header: str
) -> None:
    reply = send(
        mcp_event(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}},
            key=key,
            header=header,
        )
    )
    assert reply.status == 401
    assert reply.body is not None and reply.body["status"] == "error"
    assert "API key" in reply.body["message"]
    assert reply.body["error"]["message"] == reply.body["message"]  # readable by MCP clients


def test_keyless_deployment_refuses_everything(keyless_service: MemoryService) -> None:
    reply = rpc("tools/list", key=None)
    assert reply.status == 401 and reply.body is not None
    assert "no API keys are configured" in reply.body["message"]


def test_the_api_gateway_authorizer_context_is_trusted(service: MemoryService) -> None:
    authorizer = {"tenant_id": "acme", "key_id": "lambda-authorizer", "read_scopes": "*"}
    event = mcp_event(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "memory_store", "arguments": {"user_id": "u1", "content": "hi"}},
        },
        key=None,
        authorizer=authorizer,
    )
    content, failed = send(event).tool
    assert not failed and content["status"] == "success"


def test_another_agents_scope_does_not_leak(service: MemoryService) -> None:
    travel, _ = tool("memory_store", user_id="u1", content="偏好靠窗座位和花生零食", scope="travel")
    shared, _ = tool("memory_store", user_id="u1", content="用户对花生过敏", scope="global")
    mine, failed = tool(
        "memory_store", key=CALENDAR_KEY, user_id="u1", content="花生酱会议改到周五"
    )
    assert not failed
    assert (
        service.ports.records.get("acme", mine["memory_id"]).scope == "calendar"
    )  # the key's scope

    found, _ = tool("memory_retrieve", key=CALENDAR_KEY, user_id="u1", query="花生")
    ids = {r["memory_id"] for r in found["results"]}
    assert ids == {shared["memory_id"], mine["memory_id"]}
    listed, _ = tool("memory_list", key=CALENDAR_KEY, user_id="u1")
    assert travel["memory_id"] not in {m["memory_id"] for m in listed["results"]}

    asked, failed = tool(
        "memory_retrieve", key=CALENDAR_KEY, user_id="u1", query="花生", scopes=["travel"]
    )
    assert failed and "travel" in asked["message"]
    forget, failed = tool("memory_forget", key=CALENDAR_KEY, memory_id=travel["memory_id"])
    assert failed and forget["status"] == "error"
    write, failed = tool(
        "memory_store", key=CALENDAR_KEY, user_id="u1", content="写入旅行", scope="travel"
    )
    assert failed and "may not write scope 'travel'" in write["message"]

    other_tenant, _ = tool("memory_retrieve", key=GLOBEX_KEY, user_id="u1", query="花生")
    assert other_tenant["results"] == []


def test_a_read_only_key_cannot_store(service: MemoryService) -> None:
    content, failed = tool("memory_store", key=READONLY_KEY, user_id="u1", content="新的偏好")
    assert failed and "may not write" in content["message"]


class ExplodingEmbedder(HashingEmbedder):
    """An embedder failing in a way nobody planned for."""

    def embed_documents(self, texts: Any) -> np.ndarray:
        raise ZeroDivisionError("secret internal detail at /opt/hindsight/x.py")


@pytest.fixture
def broken_service() -> Iterator[MemoryService]:
    settings = Settings(backend="memory", api_keys=json.dumps(KEYS))
    built = build_memory_service(
        settings, embedder=ExplodingEmbedder(), reflector=RuleBasedReflector()
    )
    configure(settings, built)
    yield built
    configure()


def test_unexpected_failures_answer_the_generic_unavailable_message(
    broken_service: MemoryService,
) -> None:
    content, failed = tool("memory_store", user_id="u1", content="用户对花生过敏")
    assert failed
    assert content == {"status": "error", "message": UNAVAILABLE_MESSAGE}


def test_transport_level_errors(service: MemoryService) -> None:
    garbage = send(mcp_event(raw_body="{not json"))
    assert garbage.status == 400 and garbage.body is not None
    assert garbage.body["error"]["code"] == -32700
    refused = send(
        mcp_event({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, accept="text/html")
    )
    assert refused.status == 406
    get = send(mcp_event(None, method="GET"))
    assert get.status == 405 and get.headers["allow"] == "POST"
    assert get.body is not None and "stateless" in get.body["message"]


def test_base64_bodies_are_decoded(service: MemoryService) -> None:
    message = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
    event = mcp_event(message)
    event["body"] = base64.b64encode(json.dumps(message).encode()).decode()
    event["isBase64Encoded"] = True
    assert len(send(event).result["tools"]) == 5


def test_retrieve_out_of_time_answers_partial_results(service: MemoryService) -> None:
    stored, _ = tool("memory_store", user_id="u3", content="用户对花生过敏")
    configure(get_settings(), rewire(service, replace(service.policy, retrieve_budget_seconds=0.0)))
    found, failed = tool("memory_retrieve", user_id="u3", query="花生过敏")
    assert not failed and found["partial"] is True
    assert [r["memory_id"] for r in found["results"]] == [stored["memory_id"]]  # keyword hits
