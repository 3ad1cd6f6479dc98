"""Secrets at the door through the real handlers: the store answers say what was redacted,
``refuse`` is a 422 naming the type, a key's own ``secrets`` wins over HINDSIGHT_SECRETS
(also through the Lambda authorizer's context), and MCP memory_store reports it too."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.api.auth import SettingsKeyRingSource
from hindsight.api.authorizer import authorize
from hindsight.bootstrap import build_memory_service, configure
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder
from tests.functional.conftest import ADMIN_KEY, KEYS, assert_error, call, listed
from tests.functional.test_mcp_function import tool

STRICT_KEY = "key-acme-strict-0005"  # tenant acme, secrets refused
OPEN_KEY = "key-acme-open-0006"  # tenant acme, secrets stored as sent
SECRET_KEYS = {
    "keys": [
        *KEYS["keys"],
        {"key": STRICT_KEY, "tenant_id": "acme", "key_id": "strict", "secrets": "refuse"},
        {"key": OPEN_KEY, "tenant_id": "acme", "key_id": "open", "secrets": "off"},
    ]
}
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"


def _configure(**settings: str) -> MemoryService:
    built_settings = Settings(backend="memory", api_keys=json.dumps(SECRET_KEYS), **settings)
    built = build_memory_service(
        built_settings, embedder=HashingEmbedder(), reflector=RuleBasedReflector()
    )
    configure(built_settings, built)
    return built


@pytest.fixture
def secret_service() -> Iterator[MemoryService]:
    yield _configure()
    configure()


def test_store_answers_what_it_redacted(secret_service: MemoryService) -> None:
    reply = call(
        "POST",
        "/v1/memories",
        body={"user_id": "u1", "content": f"我的AWS密钥是 {AWS_KEY_ID}，还有 {GITHUB}"},
    )
    assert reply.status == 201, reply.body
    assert reply.body["redacted"] == [
        {"type": "aws_access_key", "count": 1},
        {"type": "github_token", "count": 1},
    ]
    [stored] = listed("u1")
    assert stored["content"] == (
        "我的AWS密钥是 [REDACTED:aws_access_key]，还有 [REDACTED:github_token]"
    )
    clean = call("POST", "/v1/memories", body={"user_id": "u1", "content": "明天开会"})
    assert clean.status == 201 and "redacted" not in clean.body


def test_batch_answers_per_item(secret_service: MemoryService) -> None:
    items = [{"content": "我的信用卡号是 5500-0000-0000-0004，请记住"}, {"content": "nothing"}]
    reply = call("POST", "/v1/memories/batch", body={"user_id": "u1", "items": items})
    assert reply.status == 200, reply.body
    first, second = reply.body["results"]
    assert first["redacted"] == [{"type": "card_number", "count": 1}]
    assert "redacted" not in second


def test_a_refusing_key_gets_a_422_and_nothing_is_stored(secret_service: MemoryService) -> None:
    reply = call(
        "POST",
        "/v1/memories",
        body={"user_id": "u1", "content": f"key {AWS_KEY_ID}"},
        key=STRICT_KEY,
    )
    message = assert_error(reply, 422, "aws_access_key", "nothing was stored", "Remove")
    assert AWS_KEY_ID not in message
    assert listed("u1") == []


def test_refuse_for_the_deployment_and_off_for_one_key() -> None:
    _configure(secrets="refuse")
    try:
        body = {"user_id": "u1", "content": f"token {GITHUB}"}
        assert_error(call("POST", "/v1/memories", body=body, key=ADMIN_KEY), 422, "github_token")
        reply = call("POST", "/v1/memories", body=body, key=OPEN_KEY)
        assert reply.status == 201 and "redacted" not in reply.body
        assert [m["content"] for m in listed("u1")] == [f"token {GITHUB}"]
    finally:
        configure()


def test_the_authorizer_forwards_the_keys_secrets_policy(secret_service: MemoryService) -> None:
    source = SettingsKeyRingSource(Settings(backend="memory", api_keys=json.dumps(SECRET_KEYS)))
    event = {"type": "REQUEST", "methodArn": "arn:x", "headers": {"x-api-key": STRICT_KEY}}
    context = authorize(event, source)["context"]
    assert context["secrets"] == "refuse"
    reply = call(
        "POST",
        "/v1/memories",
        body={"user_id": "u1", "content": f"key {AWS_KEY_ID}"},
        key=None,
        authorizer=context,
    )
    assert_error(reply, 422, "aws_access_key")
    admin = {"type": "REQUEST", "methodArn": "arn:x", "headers": {"x-api-key": ADMIN_KEY}}
    assert "secrets" not in authorize(admin, source)["context"]


def test_mcp_memory_store_reports_the_redaction(secret_service: MemoryService) -> None:
    content, failed = tool("memory_store", user_id="u1", content=f"我的AWS密钥是{AWS_KEY_ID}")
    assert not failed, content
    assert content["redacted"] == [{"type": "aws_access_key", "count": 1}]
    refused, failed = tool(
        "memory_store", key=STRICT_KEY, user_id="u1", content=f"我的AWS密钥是{AWS_KEY_ID}"
    )
    assert failed and "aws_access_key" in refused["message"]
