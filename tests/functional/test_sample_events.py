"""Every sample event in events/ (as used by ``sam local invoke -e``) runs green."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hindsight.core.service import MemoryService
from tests.functional.conftest import EVENTS_DIR, ROUTES, call, invoke
from tests.functional.test_reflect_function import seed_fact

EXPECTED_STATUS = {"store": 201, "store_document": 201}


def event_files() -> list[Path]:
    return sorted(EVENTS_DIR.glob("*.json"))


def test_there_is_a_sample_event_for_every_route() -> None:
    routes = set()
    for path in event_files():
        event = json.loads(path.read_text())
        routes.add((event["httpMethod"], event["resource"]))
    assert routes == set(ROUTES)


@pytest.mark.parametrize("path", event_files(), ids=lambda p: p.stem)
def test_sample_event(path: Path, service: MemoryService) -> None:
    event: dict[str, Any] = json.loads(path.read_text())
    assert event["requestContext"]["stage"]
    assert "authorizer" not in event["requestContext"]
    # the ids in the samples are placeholders: point them at real records
    stored = call("POST", "/v1/memories", body={"user_id": "u1", "content": "喜欢靠窗的座位"})
    params = event.get("pathParameters") or {}
    if "memory_id" in params:
        if "semantic" in event["resource"]:
            real = seed_fact(service, "用户对花生过敏")
        else:
            real = stored.body["memory_id"]
        event["path"] = event["path"].replace(params["memory_id"], real)
        params["memory_id"] = real
    reply = invoke(event)
    assert reply.status == EXPECTED_STATUS.get(path.stem, 200), reply.body
    if event["resource"] == "/mcp":  # a JSON-RPC answer; the tool result inside it
        result = reply.body["result"]
        if "structuredContent" in result:  # tools/call
            assert result["structuredContent"]["status"] == "success"
        else:  # tools/list
            assert {tool["name"] for tool in result["tools"]} >= {"memory_store", "memory_retrieve"}
        return
    assert reply.body["status"] == "success"
