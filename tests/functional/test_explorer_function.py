"""ExplorerFunction (GET /explorer and its files) and GET /v1/users/{user_id}/reflection
through the real Lambda handlers, as API Gateway invokes them."""

from __future__ import annotations

import json
from typing import Any

from hindsight.core.service import MemoryService
from tests.functional.conftest import (
    LambdaContextStub,
    assert_error,
    call,
    load_function,
    proxy_event,
)


def _serve(path: str, name: str | None = None) -> dict[str, Any]:
    resource = "/explorer" if name is None else "/explorer/assets/{name}"
    params = None if name is None else {"name": name}
    event = proxy_event("GET", resource, path_params=params, key=None)
    event["path"] = path
    result: dict[str, Any] = load_function("explorer")(event, LambdaContextStub("explorer"))
    return result


def _content_type(result: dict[str, Any]) -> str:
    headers = result.get("headers") or {}
    multi = result.get("multiValueHeaders") or {}
    return str(headers.get("Content-Type") or multi["Content-Type"][0])


def test_the_page_and_its_files_are_served_without_a_key(service: MemoryService) -> None:
    page = _serve("/explorer")
    assert page["statusCode"] == 200
    assert _content_type(page).startswith("text/html")
    html = page["body"]
    assert "explorer/assets/explorer.js" in html and "https://" not in html  # no CDN
    for name, media in (
        ("explorer.js", "text/javascript"),
        ("explorer.css", "text/css"),
        ("uPlot.iife.min.js", "text/javascript"),
        ("strings.js", "text/javascript"),
    ):
        result = _serve(f"/explorer/assets/{name}", name)
        assert result["statusCode"] == 200, name
        assert _content_type(result).startswith(media)
        assert len(result["body"]) > 100


def test_an_unknown_file_is_a_404_naming_the_files() -> None:
    result = _serve("/explorer/assets/secrets.txt", "secrets.txt")
    assert result["statusCode"] == 404
    body = json.loads(result["body"])
    assert body["status"] == "error" and "explorer.js" in body["message"]


def test_reflection_status_through_the_reflect_function(service: MemoryService) -> None:
    stored = call("POST", "/v1/memories", body={"user_id": "fx-ref", "content": "I like tea"})
    assert stored.status == 201
    path = {"user_id": "fx-ref"}
    before = call("GET", "/v1/users/{user_id}/reflection", "reflect", path_params=path)
    assert before.status == 200
    assert before.body["cursor"] is None and before.body["episodes_waiting"] == 1
    reflected = call("POST", "/v1/reflect", body={"user_id": "fx-ref"})
    assert reflected.status == 200
    after = call("GET", "/v1/users/{user_id}/reflection", "reflect", path_params=path)
    assert after.body["cursor"] is not None and after.body["episodes_waiting"] == 0
    refused = call(
        "GET", "/v1/users/{user_id}/reflection", "reflect", path_params=path, key="nope-key-0000"
    )
    assert_error(refused, 401)
