"""The real handlers answer what the OpenAPI document says: status and body schema.

Every route is driven through its Lambda handler (successes and the errors a caller can
provoke), and each answer must be a status the document lists for that operation, with
a body that validates against the schema it documents for that status. A view that
gains a field, a result that changes shape, an error in another shape: this fails.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from hindsight.api.openapi import COMMITTED_PATH
from hindsight.core.service import MemoryService
from tests.functional.conftest import READONLY_KEY as READ_ONLY
from tests.functional.conftest import (
    LambdaContextStub,
    Reply,
    call,
    load_function,
    proxy_event,
)
from tests.functional.test_reflect_function import seed_fact

DOCUMENT: dict[str, Any] = json.loads(COMMITTED_PATH.read_text(encoding="utf-8"))


def documented_schema(method: str, path: str, status: int, media: str = "application/json"):
    operation = DOCUMENT["paths"][path][method.lower()]
    responses = operation["responses"]
    assert str(status) in responses, f"{method} {path} answered {status}, not documented"
    response = responses[str(status)]
    if "$ref" in response:
        response = DOCUMENT["components"]["responses"][response["$ref"].split("/")[-1]]
    return response["content"][media]["schema"]


def assert_conforms(method: str, path: str, reply: Reply) -> None:
    schema = {**documented_schema(method, path, reply.status), "components": DOCUMENT["components"]}
    validator = Draft202012Validator(schema, format_checker=FormatChecker())
    problems = sorted(validator.iter_errors(reply.body), key=lambda e: list(e.path))
    assert not problems, (method, path, reply.status, [p.message for p in problems[:5]])


def checked(method: str, path: str, **kwargs: Any) -> Reply:
    reply = call(method, path, **kwargs)
    assert_conforms(method, path, reply)
    return reply


def store(content: str, **fields: Any) -> str:
    body = {"user_id": "u1", "content": content, **fields}
    reply = checked("POST", "/v1/memories", body=body)
    assert reply.status == 201
    return str(reply.body["memory_id"])


def test_store_and_batch_answers(service: MemoryService) -> None:
    store("我下周要去北京出差", session_id="s1", speaker="user", participants=["Ann"])
    duplicate = checked(
        "POST",
        "/v1/memories",
        body={"user_id": "u1", "content": "我下周要去北京出差", "session_id": "s1"},
    )
    assert (duplicate.status, duplicate.body["status"]) == (200, "skipped")
    batch = {"user_id": "u1", "items": [{"content": "likes tea"}, {"content": "用户对花生过敏"}]}
    assert checked("POST", "/v1/memories/batch", body=batch).status == 200


def test_retrieve_context_list_and_get_answers(service: MemoryService) -> None:
    memory_id = store("The user is allergic to peanuts", session_id="s1", category="constraint")
    approved = seed_fact(service, "用户对花生过敏")
    assert (
        checked(
            "POST", "/v1/semantic/{memory_id}/approve", path_params={"memory_id": approved}
        ).status
        == 200
    )
    retrieved = checked(
        "POST", "/v1/retrieve", body={"user_id": "u1", "query": "peanuts next week"}
    )
    assert retrieved.body["results"]
    context = checked(
        "POST", "/v1/context", body={"user_id": "u1", "session_id": "s1", "query": "food"}
    )
    assert context.body["facts"] and context.body["recent_turns"]
    listing = checked(
        "GET", "/v1/users/{user_id}/memories", path_params={"user_id": "u1"}, query={"limit": "5"}
    )
    assert {m["kind"] for m in listing.body["results"]} == {"episodic", "semantic"}
    assert (
        checked("GET", "/v1/memories/{memory_id}", path_params={"memory_id": memory_id}).status
        == 200
    )


def test_reflect_review_forget_and_health_answers(service: MemoryService) -> None:
    episode = store("I am allergic to peanuts")
    reflected = checked("POST", "/v1/reflect", body={"user_id": "u1"})
    assert reflected.body["created"]
    pending = seed_fact(service, "用户喜欢喝茶")
    assert (
        checked(
            "POST", "/v1/semantic/{memory_id}/reject", path_params={"memory_id": pending}
        ).status
        == 200
    )
    assert (
        checked("DELETE", "/v1/memories/{memory_id}", path_params={"memory_id": episode}).status
        == 200
    )
    assert checked("DELETE", "/v1/users/{user_id}", path_params={"user_id": "u1"}).status == 200
    assert checked("GET", "/v1/health", key=None).status == 200


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        ("POST", "/v1/memories", {"raw_body": "{not json"}, 400),
        ("POST", "/v1/retrieve", {"body": {"user_id": "u1", "query": "x"}, "key": None}, 401),
        (
            "POST",
            "/v1/memories",
            {"body": {"user_id": "u1", "content": "x"}, "key": READ_ONLY},
            403,
        ),
        ("GET", "/v1/memories/{memory_id}", {"path_params": {"memory_id": "mem_nope"}}, 404),
        ("DELETE", "/v1/memories/{memory_id}", {"path_params": {"memory_id": "mem_nope"}}, 404),
        (
            "POST",
            "/v1/semantic/{memory_id}/approve",
            {"path_params": {"memory_id": "bad id!"}},
            422,
        ),
        (
            "POST",
            "/v1/memories",
            {"raw_body": json.dumps({"user_id": "u1", "content": "x" * 7_000_000})},
            413,
        ),
        ("POST", "/v1/retrieve", {"body": {"user_id": "u1", "query": "x", "top_k": 99}}, 422),
        ("POST", "/v1/memories/batch", {"body": {"user_id": "u1", "items": []}}, 422),
        (
            "GET",
            "/v1/users/{user_id}/memories",
            {"path_params": {"user_id": "u1"}, "query": {"limit": "0"}},
            422,
        ),
        ("POST", "/v1/context", {"body": {"user_id": "u1"}}, 422),
        ("POST", "/v1/reflect", {"body": {"user_id": "u1", "extra": 1}}, 422),
        (
            "DELETE",
            "/v1/users/{user_id}",
            {"path_params": {"user_id": "u1"}, "key": READ_ONLY},
            403,
        ),
    ],
)
def test_errors_are_documented_with_their_shape(
    service: MemoryService, method: str, path: str, kwargs: dict[str, Any], status: int
) -> None:
    reply = checked(method, path, **kwargs)
    assert reply.status == status, reply.body


def test_reviewing_an_episode_is_a_documented_conflict(service: MemoryService) -> None:
    episode = store("用户喜欢靠窗的座位")
    reply = checked("POST", "/v1/semantic/{memory_id}/approve", path_params={"memory_id": episode})
    assert reply.status == 409


def _mcp(headers: dict[str, str], body: dict[str, Any] | None) -> Reply:
    event = proxy_event("POST", "/mcp", body=body)
    event["headers"].update(headers)
    result = load_function("mcp")(event, LambdaContextStub("mcp-function"))
    return Reply(result["statusCode"], json.loads(result["body"]), result.get("headers") or {})


def test_mcp_answers_and_errors_are_documented(service: MemoryService) -> None:
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    assert_conforms("POST", "/mcp", listed := _mcp(accept, rpc))
    assert listed.status == 200
    refused = _mcp({"Accept": "application/json, text/event-stream", "Authorization": ""}, rpc)
    assert_conforms("POST", "/mcp", refused)
    assert refused.status == 401
    for headers, body, status in (({}, rpc, 406), (accept, {"foo": 1}, 400), (accept, None, 400)):
        transport_error = _mcp(headers, body)
        assert_conforms("POST", "/mcp", transport_error)
        assert transport_error.status == status


def test_the_document_and_the_page_are_served(service: MemoryService) -> None:
    handler = load_function("docs")
    for path, media in (("/v1/openapi.json", "application/json"), ("/docs", "text/html")):
        event = proxy_event("GET", path, key=None)
        result = handler(event, LambdaContextStub("docs-function"))
        assert result["statusCode"] == 200
        content_type = (result.get("headers") or {}).get("Content-Type") or result[
            "multiValueHeaders"
        ]["Content-Type"][0]
        assert content_type.startswith(media)
        if media == "application/json":
            assert result["body"] == COMMITTED_PATH.read_text(encoding="utf-8")
        else:
            page = result["body"]
            assert page.startswith("<!doctype html>")
            assert "http://" not in page.replace("http://127.0.0.1:8080", "")
            assert "https://" not in page and "<script" not in page
            for op in DOCUMENT["paths"].values():
                for spec in op.values():
                    assert f"id='op-{spec['operationId']}'" in page
            links = set(re.findall(r"href=[\"']#([\w-]+)[\"']", page))
            anchors = set(re.findall(r"id='([\w-]+)'", page))
            assert links and links <= anchors, sorted(links - anchors)
            assert "<code>why</code>" in page  # the document's Markdown is rendered
