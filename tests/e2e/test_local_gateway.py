"""The gateway's own behaviour: routes from template.yaml, keyless safety, the banner."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hindsight import bootstrap
from hindsight.bootstrap import configure
from hindsight.gateway.errors import GatewayConfigError
from hindsight.gateway.lambda_emulation import proxy_event
from hindsight.gateway.local_gateway import LocalGateway, banner, prepare_settings
from hindsight.gateway.template import find_template, routes_from_template
from hindsight.settings import Settings

EXPECTED_ROUTES = {
    ("POST", "/v1/memories", "StoreFunction"),
    ("POST", "/v1/memories/batch", "StoreFunction"),
    ("POST", "/v1/documents", "StoreFunction"),
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
    ("POST", "/mcp", "McpFunction"),
    ("GET", "/v1/openapi.json", "DocsFunction"),
    ("GET", "/docs", "DocsFunction"),
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


def test_events_never_carry_an_authorizer_from_the_client() -> None:
    routes = routes_from_template(find_template())
    route = next(r for r in routes if r.resource == "/v1/memories")
    event = proxy_event(
        "POST",
        route.resource,
        path="/v1/memories",
        query="a=1&a=2&b=",
        headers=[("requestContext", '{"authorizer": {"tenant_id": "x"}}'), ("X-Tenant", "x")],
        body=b'{"user_id": "u"}',
        path_parameters={},
        stage="prod",
        source_ip="127.0.0.1",
    )
    assert "authorizer" not in event["requestContext"]
    assert event["queryStringParameters"] == {"a": "2", "b": ""}
    assert event["multiValueQueryStringParameters"] == {"a": ["1", "2"], "b": [""]}
    assert event["requestContext"]["resourcePath"] == "/v1/memories"
    assert event["body"] == '{"user_id": "u"}' and event["isBase64Encoded"] is False


def test_a_failing_function_is_a_502_json_error(tmp_path: Path) -> None:
    (tmp_path / "fn").mkdir()
    (tmp_path / "fn" / "app.py").write_text(
        "def boom(event, context):\n"
        "    raise RuntimeError('secret detail')\n"
        "def odd(event, context):\n"
        "    return 'not a proxy response'\n"
        "def echo(event, context):\n"
        "    import json\n"
        "    return {'statusCode': 200, 'headers': {'Content-Type': 'application/json'},\n"
        "            'body': json.dumps({'path': event['pathParameters'],\n"
        "                                'left': context.get_remaining_time_in_millis() > 0})}\n"
    )
    (tmp_path / "template.yaml").write_text(
        "Transform: AWS::Serverless-2016-10-31\n"
        "Resources:\n"
        "  Boom:\n"
        "    Type: AWS::Serverless::Function\n"
        "    Properties: {CodeUri: fn/, Handler: app.boom,"
        " Events: {A: {Type: Api, Properties: {Path: /boom, Method: GET}}}}\n"
        "  Odd:\n"
        "    Type: AWS::Serverless::Function\n"
        "    Properties: {CodeUri: fn/, Handler: app.odd,"
        " Events: {A: {Type: Api, Properties: {Path: /odd, Method: any}}}}\n"
        "  Echo:\n"
        "    Type: AWS::Serverless::Function\n"
        "    Properties:\n"
        "      CodeUri: !Sub fn/\n"
        "      Handler: app.echo\n"
        "      Events: {A: {Type: Api, Properties: {Path: '/echo/{name}', Method: GET,"
        " RestApiId: !Ref Api}}}\n"
    )
    settings = Settings(backend="memory", data_dir=tmp_path)
    gateway = LocalGateway(port=0, template=tmp_path / "template.yaml", settings=settings)
    with gateway:
        boom = httpx.get(f"{gateway.url}/boom")
        odd = httpx.post(f"{gateway.url}/odd", content=b"x")
        assert boom.status_code == 502
        assert boom.json()["status"] == "error"
        assert "secret" not in boom.text
        assert odd.status_code == 502
    # a CodeUri that is an intrinsic function (!Sub) cannot be resolved locally: skipped
    assert {r.resource for r in gateway.routes} == {"/boom", "/odd"}
    assert {r.method for r in gateway.routes} == {"GET", "ANY"}


@pytest.fixture(autouse=True)
def _restore_the_process_service() -> Iterator[None]:
    """Gateways here configure their own service; put back whatever was there."""
    saved = (bootstrap._settings, bootstrap._service)
    yield
    configure(*saved)
