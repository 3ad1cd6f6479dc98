"""The gateway's own behaviour: routes from template.yaml, keyless safety, the banner,
the template's authorizer run first, one invocation at a time (503 past the wait)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hindsight import bootstrap
from hindsight.bootstrap import configure
from hindsight.gateway.lambda_emulation import proxy_event
from hindsight.gateway.local_gateway import LocalGateway, banner, prepare_settings
from hindsight.gateway.template import find_template, routes_from_template
from hindsight.server.startup import ServerStartError
from hindsight.settings import Settings

EXPECTED_ROUTES = {
    ("POST", "/v1/memories", "StoreFunction"),
    ("POST", "/v1/memories/batch", "StoreFunction"),
    ("POST", "/v1/documents", "StoreFunction"),
    ("GET", "/v1/jobs/{job_id}", "StoreFunction"),
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
    ("GET", "/v1/users/{user_id}/reflection", "ReflectFunction"),
    ("GET", "/explorer", "ExplorerFunction"),
    ("GET", "/explorer/assets/{name}", "ExplorerFunction"),
    ("POST", "/v1/memories/{memory_id}/restore", "ForgetFunction"),
    ("PATCH", "/v1/memories/{memory_id}", "ForgetFunction"),
    ("GET", "/v1/users/{user_id}/export", "ForgetFunction"),
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
    with pytest.raises(ServerStartError, match="refusing to serve without API keys"):
        prepare_settings("0.0.0.0", tmp_path, environ={})
    with pytest.raises(ServerStartError):
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
    assert f"Memory explorer: {gateway.url}/explorer?user_id=test_user" in text
    assert str(tmp_path) in text
    assert "embedded" in text
    assert "ONE invocation at a time" in text and "hindsight serve" in text


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


def test_the_template_routes_name_their_authorizer_and_its_refusals() -> None:
    routes = {r.resource: r for r in routes_from_template(find_template())}
    keyed = routes["/v1/memories"].authorizer
    assert keyed is not None and keyed.function.logical_id == "AuthorizerFunction"
    assert keyed.responses["UNAUTHORIZED"][0] == 401
    assert "an API key is required" in keyed.responses["UNAUTHORIZED"][1]
    for public in ("/v1/health", "/v1/openapi.json", "/docs", "/explorer"):
        assert routes[public].authorizer is None


AUTH_TEMPLATE = """\
Transform: AWS::Serverless-2016-10-31
Resources:
  Api:
    Type: AWS::Serverless::Api
    Properties:
      StageName: prod
      Auth:
        DefaultAuthorizer: Keys
        Authorizers:
          Keys: {FunctionArn: !GetAtt AuthFunction.Arn, FunctionPayloadType: REQUEST}
      GatewayResponses:
        UNAUTHORIZED:
          StatusCode: "401"
          ResponseTemplates: {application/json: '{"status": "error", "message": "no key"}'}
  AuthFunction:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: fn/, Handler: auth.handler}
  EchoFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn/
      Handler: app.echo
      Events:
        Keyed: {Type: Api, Properties: {RestApiId: !Ref Api, Path: /echo, Method: GET}}
        Open:
          Type: Api
          Properties: {RestApiId: !Ref Api, Path: /open, Method: GET, Auth: {Authorizer: NONE}}
        Slow: {Type: Api, Properties: {RestApiId: !Ref Api, Path: /slow, Method: GET}}
"""
AUTH_CODE = """\
def handler(event, context):
    key = (event["headers"] or {}).get("x-api-key")
    if key not in ("good", "deny"):
        raise Exception("Unauthorized")
    effect = "Allow" if key == "good" else "Deny"
    return {"principalId": "p1", "context": {"tenant_id": "t1", "arn": event["methodArn"]},
            "policyDocument": {"Version": "2012-10-17", "Statement": [
                {"Action": "execute-api:Invoke", "Effect": effect,
                 "Resource": event["methodArn"].rsplit("/", 2)[0] + "/*"}]}}
"""
ECHO_CODE = """\
import json, time
def echo(event, context):
    if event["path"] == "/slow":
        time.sleep(1.5)
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"},
            "body": json.dumps(event["requestContext"].get("authorizer"))}
"""


@pytest.fixture
def auth_gateway(tmp_path: Path) -> Iterator[LocalGateway]:
    (tmp_path / "fn").mkdir()
    (tmp_path / "fn" / "auth.py").write_text(AUTH_CODE)
    (tmp_path / "fn" / "app.py").write_text(ECHO_CODE)
    (tmp_path / "template.yaml").write_text(AUTH_TEMPLATE)
    settings = Settings(backend="memory", data_dir=tmp_path, allow_anonymous=False)
    with LocalGateway(port=0, template=tmp_path / "template.yaml", settings=settings) as running:
        yield running


def test_the_authorizer_runs_first_as_api_gateway_runs_it(auth_gateway: LocalGateway) -> None:
    allowed = httpx.get(f"{auth_gateway.url}/echo", headers={"x-api-key": "good"})
    assert allowed.status_code == 200
    forwarded = allowed.json()
    assert forwarded["tenant_id"] == "t1" and forwarded["principalId"] == "p1"
    assert forwarded["arn"].endswith("/prod/GET/echo")
    refused = httpx.get(f"{auth_gateway.url}/echo", headers={"x-api-key": "bad"})
    assert refused.status_code == 401 and refused.json()["message"] == "no key"
    denied = httpx.get(f"{auth_gateway.url}/echo", headers={"x-api-key": "deny"})
    assert denied.status_code == 403 and denied.json()["status"] == "error"
    public = httpx.get(f"{auth_gateway.url}/open")  # Authorizer: NONE
    assert public.status_code == 200 and public.json() is None


def test_one_invocation_at_a_time_and_503_past_the_wait(auth_gateway: LocalGateway) -> None:
    from concurrent.futures import ThreadPoolExecutor

    auth_gateway.dispatcher.wait_seconds = 0.3
    headers = {"x-api-key": "good"}
    with ThreadPoolExecutor(max_workers=2) as pool:
        slow = pool.submit(httpx.get, f"{auth_gateway.url}/slow", headers=headers, timeout=30)
        time.sleep(0.3)
        waiting = pool.submit(httpx.get, f"{auth_gateway.url}/echo", headers=headers, timeout=30)
        first, second = slow.result(), waiting.result()
    assert first.status_code == 200
    assert second.status_code == 503 and second.headers["retry-after"] == "1"
    assert "one invocation at a time" in second.json()["message"]
    assert "hindsight serve" in second.json()["message"]


@pytest.fixture(autouse=True)
def _restore_the_process_service() -> Iterator[None]:
    """Gateways here configure their own service; put back whatever was there."""
    saved = (bootstrap._settings, bootstrap._service)
    yield
    configure(*saved)
