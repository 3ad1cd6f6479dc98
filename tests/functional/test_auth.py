"""Authentication at the handlers: keys, hashed keys, authorizer context, keyless mode."""

from __future__ import annotations

import json

from hindsight.api.auth import authenticate, key_sha256, parse_key_config
from hindsight.api.errors import status_for
from hindsight.bootstrap import build_memory_service, configure
from hindsight.core.errors import UnauthorizedError
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder, ScriptedReflector
from tests.functional.conftest import (
    ADMIN_KEY,
    GLOBEX_KEY,
    READONLY_KEY,
    assert_error,
    call,
    listed,
)

BODY = {"user_id": "u1", "content": "remember the milk"}


def test_no_key_is_401(service: MemoryService) -> None:
    assert_error(call("POST", "/v1/memories", body=BODY, key=None), 401, "Authorization: Bearer")
    assert listed("u1") == []


def test_unknown_key_is_401(service: MemoryService) -> None:
    assert_error(call("POST", "/v1/memories", body=BODY, key="not-a-real-key"), 401, "not valid")
    assert_error(
        call(
            "GET",
            "/v1/users/{user_id}/memories",
            path_params={"user_id": "u1"},
            key="not-a-real-key",
        ),
        401,
    )
    assert listed("u1") == []


def test_hashed_key_entry_authenticates(service: MemoryService) -> None:
    # READONLY_KEY is configured by key_sha256 only
    reply = call(
        "GET", "/v1/users/{user_id}/memories", path_params={"user_id": "u1"}, key=READONLY_KEY
    )
    assert reply.status == 200, reply.body


def test_authorizer_context_is_trusted_over_headers(service: MemoryService) -> None:
    authorizer = {
        "tenant_id": "globex",
        "read_scopes": "*",
        "write_scopes": "*,calendar",
        "principalId": "user-pool",
    }
    reply = call("POST", "/v1/memories", body=BODY, key=None, authorizer=authorizer)
    assert reply.status == 201, reply.body
    assert listed("u1", key=GLOBEX_KEY)[0]["content"] == "remember the milk"
    assert listed("u1", key=ADMIN_KEY) == []


def test_no_keys_configured_and_no_anonymous_is_401_with_the_fix(
    keyless_service: MemoryService,
) -> None:
    reply = call("POST", "/v1/memories", body=BODY, key=None)
    assert_error(reply, 401, "HINDSIGHT_API_KEYS_FILE", "--allow-anonymous")


def test_anonymous_mode_serves_the_anonymous_tenant() -> None:
    settings = Settings(backend="memory", allow_anonymous=True, anonymous_tenant="local")
    service = build_memory_service(settings, HashingEmbedder(), ScriptedReflector())
    configure(settings, service)
    try:
        reply = call("POST", "/v1/memories", body=BODY, key=None)
        assert reply.status == 201, reply.body
        assert service.ports.records.get("local", reply.body["memory_id"]) is not None
    finally:
        configure()


def test_key_file_in_yaml_and_wrong_keys(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "keys.yaml"
    path.write_text(
        "keys:\n"
        f"  - key_sha256: {key_sha256('secret-key-123')}\n"
        "    tenant_id: acme\n"
        "    write_scopes: [calendar]\n"
        "    default_scope: calendar\n"
        "    key_id: calendar-agent\n"
    )
    settings = Settings(api_keys_file=str(path))
    principal = authenticate({"X-Api-Key": "secret-key-123"}, None, settings)
    assert principal.tenant_id == "acme"
    assert principal.key_id == "calendar-agent"
    assert principal.can_write("calendar") and not principal.can_write("work")
    for headers in ({"Authorization": "Bearer secret-key-124"}, {}, {"Authorization": "Basic x"}):
        try:
            authenticate(headers, None, settings)
        except UnauthorizedError as error:
            assert status_for(error) == 401
        else:
            raise AssertionError(f"{headers} was accepted")


def test_invalid_key_config_is_reported_without_the_secret() -> None:
    try:
        parse_key_config(json.dumps({"keys": [{"tenant_id": "acme"}]}), "HINDSIGHT_API_KEYS")
    except Exception as error:
        assert "exactly one of key or key_sha256" in str(error)
    else:
        raise AssertionError("a key entry without a key was accepted")


def test_unreadable_key_file_is_a_500_naming_the_setting(tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(backend="memory", api_keys_file=str(tmp_path / "missing.yaml"))
    service = build_memory_service(settings, HashingEmbedder(), ScriptedReflector())
    configure(settings, service)
    try:
        reply = call("POST", "/v1/memories", body=BODY, key=ADMIN_KEY)
        assert_error(
            reply, 500, "HINDSIGHT_API_KEYS_FILE"
        )  # the operator's to fix, not the client's
    finally:
        configure()
