"""functions/authorizer: keys to tenant and scopes, 401 for missing or unknown keys."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from hindsight.adapters.aws.ssm_api_keys import ApiKeySourceError, SsmKeyRingSource
from hindsight.api.auth import principal_from_authorizer
from hindsight.api.authorizer import authorize
from tests.functional.conftest import (
    ADMIN_KEY,
    CALENDAR_KEY,
    EVENTS_DIR,
    KEYS,
    READONLY_KEY,
    LambdaContextStub,
    call,
    load_function,
)

METHOD_ARN = "arn:aws:execute-api:us-east-1:123456789012:abcdef1234/prod/POST/v1/retrieve"


def authorizer_module() -> Any:
    load_function("authorizer")
    return sys.modules["functional_fn_authorizer"]


class FakeSsm:
    """The get_parameter call of an SSM client, counting reads; can be made to fail."""

    def __init__(self, value: str) -> None:
        self.value = value
        self.reads = 0
        self.failing = False

    def get_parameter(self, Name: str, WithDecryption: bool) -> dict[str, Any]:
        self.reads += 1
        if self.failing:
            raise ConnectionError("ssm unreachable")
        assert WithDecryption is True
        return {"Parameter": {"Name": Name, "Type": "SecureString", "Value": self.value}}


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def authorizer(monkeypatch: pytest.MonkeyPatch) -> Any:
    module = authorizer_module()
    monkeypatch.setenv("HINDSIGHT_API_KEYS", json.dumps(KEYS))
    monkeypatch.delenv("HINDSIGHT_API_KEYS_PARAMETER", raising=False)
    module.configure_key_source()
    yield module
    module.configure_key_source()


def request(headers: dict[str, str]) -> dict[str, Any]:
    event = json.loads((EVENTS_DIR / "async" / "authorizer_request.json").read_text())
    event["headers"] = headers
    return event


def test_bearer_key_maps_to_its_tenant_and_scopes(authorizer: Any) -> None:
    answer = authorizer.lambda_handler(
        request({"Authorization": f"Bearer {CALENDAR_KEY}"}), LambdaContextStub("authorizer")
    )
    assert answer["context"] == {
        "tenant_id": "acme",
        "key_id": "calendar-agent",
        "read_scopes": "calendar",
        "write_scopes": "calendar",
        "default_scope": "calendar",
    }
    statement = answer["policyDocument"]["Statement"][0]
    assert statement["Effect"] == "Allow"
    assert statement["Resource"] == "arn:aws:execute-api:us-east-1:123456789012:abcdef1234/prod/*"
    assert answer["principalId"] == "acme:calendar-agent"


def test_x_api_key_header_and_empty_write_scopes(authorizer: Any) -> None:
    answer = authorizer.lambda_handler(
        request({"X-Api-Key": READONLY_KEY}), LambdaContextStub("authorizer")
    )
    principal = principal_from_authorizer(answer["context"])
    assert principal is not None
    assert principal.tenant_id == "acme"
    assert principal.can_read("anything")
    assert not principal.can_write("global")


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-a-configured-key"}, {"Authorization": "Basic abc"}],
    ids=["none", "unknown", "wrong-scheme"],
)
def test_missing_or_unknown_key_is_unauthorized(authorizer: Any, headers: dict[str, str]) -> None:
    with pytest.raises(Exception, match=r"^Unauthorized$"):
        authorizer.lambda_handler(request(headers), LambdaContextStub("authorizer"))


def test_ssm_source_caches_and_keeps_last_good_keys() -> None:
    ssm, ticks = FakeSsm(json.dumps(KEYS)), Ticks()
    source = SsmKeyRingSource("/hindsight/api-keys", ssm, ttl_seconds=60, monotonic=ticks)
    assert source.key_ring().lookup(ADMIN_KEY) is not None
    source.key_ring()
    assert ssm.reads == 1
    ticks.now = 61.0
    ssm.failing = True
    assert source.key_ring().lookup(ADMIN_KEY) is not None  # stale but served
    assert ssm.reads == 2


def test_ssm_source_unreadable_at_start_names_the_parameter() -> None:
    ssm = FakeSsm("")
    ssm.failing = True
    source = SsmKeyRingSource("/hindsight/api-keys", ssm)
    with pytest.raises(ApiKeySourceError, match="/hindsight/api-keys"):
        source.key_ring()


def test_api_functions_trust_the_authorizer_context(authorizer: Any, service: object) -> None:
    answer = authorize(
        request({"Authorization": f"Bearer {CALENDAR_KEY}"}), authorizer.key_source()
    )
    stored = call(
        "POST",
        "/v1/memories",
        body={"user_id": "u1", "content": "周五下午三点开会", "scope": "other"},
        key=None,
        authorizer=answer["context"],
    )
    assert stored.status == 403, stored.body  # the calendar key may not write "other"
    stored = call(
        "POST",
        "/v1/memories",
        body={"user_id": "u1", "content": "周五下午三点开会"},
        key=None,
        authorizer=answer["context"],
    )
    assert stored.status == 201, stored.body
    fetched = call(
        "GET",
        "/v1/memories/{memory_id}",
        key=None,
        authorizer=answer["context"],
        path_params={"memory_id": stored.body["memory_id"]},
    )
    assert fetched.status == 200, fetched.body
    assert json.dumps(fetched.body, ensure_ascii=False).count('"calendar"') >= 1


def test_the_ssm_parameter_setting_selects_the_ssm_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = authorizer_module()
    monkeypatch.setenv("HINDSIGHT_API_KEYS_PARAMETER", "/hindsight/api-keys")
    monkeypatch.setenv("HINDSIGHT_API_KEYS_CACHE_SECONDS", "60")
    module.configure_key_source()
    try:
        source = module.key_source()
        assert isinstance(source, SsmKeyRingSource)
        assert source.parameter_name == "/hindsight/api-keys"
    finally:
        module.configure_key_source()
