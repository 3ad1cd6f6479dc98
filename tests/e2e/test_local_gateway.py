"""The gateway's own behaviour: routes from template.yaml, keyless safety, the banner."""

from __future__ import annotations

from pathlib import Path

import pytest
from hindsight.gateway.local_gateway import (
    GatewayConfigError,
    LocalGateway,
    banner,
    find_template,
    prepare_settings,
    routes_from_template,
)

EXPECTED_ROUTES = {
    ("POST", "/v1/memories", "StoreFunction"),
    ("POST", "/v1/memories/batch", "StoreFunction"),
    ("POST", "/v1/retrieve", "RetrieveFunction"),
    ("POST", "/v1/context", "RetrieveFunction"),
    ("GET", "/v1/users/{user_id}/memories", "RetrieveFunction"),
    ("GET", "/v1/memories/{memory_id}", "RetrieveFunction"),
    ("GET", "/v1/health", "RetrieveFunction"),
    ("POST", "/v1/reflect", "ReflectFunction"),
    ("POST", "/v1/semantic/{memory_id}/approve", "ReflectFunction"),
    ("POST", "/v1/semantic/{memory_id}/reject", "ReflectFunction"),
    ("DELETE", "/v1/memories/{memory_id}", "ForgetFunction"),
    ("DELETE", "/v1/users/{user_id}", "ForgetFunction"),
}


def test_template_routes_are_read_with_cloudformation_tags() -> None:
    routes = routes_from_template(find_template())
    found = {(r.method, r.resource, r.function.logical_id) for r in routes}
    assert found == EXPECTED_ROUTES
    for route in routes:
        assert (route.function.code_dir / "app.py").is_file()
        assert route.function.handler == "app.lambda_handler"


def test_path_templates_match_with_parameters() -> None:
    routes = routes_from_template(find_template())
    listing = next(r for r in routes if r.resource == "/v1/users/{user_id}/memories")
    assert listing.match("/v1/users/u%2D1/memories") == {"user_id": "u-1"}
    assert listing.match("/v1/users/u1/memories/extra") is None
    batch = next(r for r in routes if r.resource == "/v1/memories/batch")
    assert routes.index(batch) < routes.index(
        next(r for r in routes if r.resource == "/v1/memories/{memory_id}")
    )


def test_keyless_mode_is_refused_on_a_public_host(tmp_path: Path) -> None:
    with pytest.raises(GatewayConfigError, match="refusing to serve without API keys"):
        prepare_settings("0.0.0.0", tmp_path, environ={})
    with pytest.raises(GatewayConfigError):
        prepare_settings("0.0.0.0", tmp_path, environ={"HINDSIGHT_API_KEYS": '{"keys": []}'})
    keys = '{"keys": [{"key": "a-long-enough-key", "tenant_id": "t"}]}'
    settings, keyless = prepare_settings(
        "0.0.0.0", tmp_path, allow_anonymous=True, environ={"HINDSIGHT_API_KEYS": keys}
    )
    assert keyless is False
    assert settings.api_keys == keys


def test_keyless_on_loopback_allows_anonymous_unless_switched_off(tmp_path: Path) -> None:
    settings, keyless = prepare_settings("127.0.0.1", tmp_path, environ={})
    assert keyless and settings.allow_anonymous
    assert settings.data_dir == tmp_path
    settings, keyless = prepare_settings(
        "127.0.0.1", tmp_path, environ={"HINDSIGHT_ALLOW_ANONYMOUS": "false"}
    )
    assert not settings.allow_anonymous and not keyless
    settings, keyless = prepare_settings("::1", tmp_path, allow_anonymous=False, environ={})
    assert not settings.allow_anonymous


def test_banner_warns_when_keyless_and_shows_a_curl(tmp_path: Path) -> None:
    settings, keyless = prepare_settings("127.0.0.1", tmp_path, environ={})
    gateway = LocalGateway(port=0)
    try:
        text = banner(gateway, settings, keyless)
    finally:
        gateway._server.server_close()
    assert gateway.url.startswith("http://127.0.0.1:")
    assert "no API keys configured: serving keyless on 127.0.0.1 — do not expose this port" in text
    assert f"curl -s -X POST {gateway.url}/v1/memories" in text
    assert str(tmp_path) in text
    assert "embedded" in text
