"""GET /v1/users/{user_id}/export through the forget function: JSON lines, import back."""

from __future__ import annotations

import json

from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from tests.functional.conftest import (
    GLOBEX_KEY,
    LambdaContextStub,
    call,
    load_function,
    proxy_event,
)


def export(user_id: str, key: str | None = None) -> dict:  # type: ignore[type-arg]
    extra = {} if key is None else {"key": key}
    event = proxy_event(
        "GET", "/v1/users/{user_id}/export", path_params={"user_id": user_id}, **extra
    )
    return load_function("forget")(event, LambdaContextStub("forget-function"))


def test_the_export_is_json_lines_that_import_back(service: MemoryService) -> None:
    for content in ("I am allergic to peanuts", "我住在上海"):
        reply = call("POST", "/v1/memories", body={"user_id": "u1", "content": content})
        assert reply.status == 201
    answer = export("u1")
    assert answer["statusCode"] == 200
    headers = {**(answer.get("headers") or {})}
    for name, values in (answer.get("multiValueHeaders") or {}).items():
        headers[name] = values[-1]
    assert headers["Content-Type"].startswith("application/x-ndjson")
    lines = answer["body"].splitlines(keepends=True)
    header, *memories, end = (json.loads(line) for line in lines)
    assert header["format"] == "hindsight-export" and header["user_id"] == "u1"
    assert sorted(m["memory"]["content"] for m in memories) == [
        "I am allergic to peanuts",
        "我住在上海",
    ]
    assert end == {"end": True, "memories": 2, "reflection_cursor": None}
    result = service.import_export(Principal(tenant_id="acme"), lines, user_id="u2")
    assert (result["imported"], result["user_id"]) == (0, "u2")  # same ids: already stored
    other = service.import_export(Principal(tenant_id="elsewhere"), lines)
    assert other["imported"] == 2


def test_another_tenant_and_an_erased_user_have_nothing_to_export(service: MemoryService) -> None:
    call("POST", "/v1/memories", body={"user_id": "u1", "content": "a memory"})
    missing = export("u1", key=GLOBEX_KEY)
    assert missing["statusCode"] == 404
    call("DELETE", "/v1/users/{user_id}", path_params={"user_id": "u1"})
    gone = export("u1")
    assert gone["statusCode"] == 404
    assert "erased" in json.loads(gone["body"])["message"]
