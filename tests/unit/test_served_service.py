"""``ServedService``: the HTTP API's answers become the core's results and errors.

The server is a fake transport (httpx's own ``MockTransport``) answering as the route
functions do; what is checked is what the CLI and ``hindsight mcp`` get back."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from hindsight.core.commands import ListMemoriesCommand, StoreMemoryCommand
from hindsight.core.errors import NotFoundError, UnauthorizedError, UnavailableError
from hindsight.core.models import Principal
from hindsight.server.discovery import ServerRecord
from hindsight.server.served import DirectoryServedError, ServedService

RECORD = ServerRecord(
    url="http://127.0.0.1:8080",
    pid=4242,
    keys_required=True,
    data_dir="/home/me/.hindsight",
    started_at=datetime(2026, 12, 6, tzinfo=UTC),
)
CALLER = Principal(tenant_id="local", key_id="cli")


def served(answer: Any, seen: list[httpx.Request] | None = None) -> ServedService:
    def handle(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return answer(request)

    return ServedService(RECORD, "k-1", transport=httpx.MockTransport(handle))


def test_a_store_sends_the_key_and_returns_the_outcome() -> None:
    seen: list[httpx.Request] = []
    service = served(
        lambda r: httpx.Response(201, json={"status": "success", "memory_id": "mem_1"}), seen
    )

    outcome = service.store(CALLER, StoreMemoryCommand(user_id="u1", content="I like tea"))

    assert (outcome.status, outcome.memory_id) == ("success", "mem_1")
    assert seen[0].headers["authorization"] == "Bearer k-1"
    assert json.loads(seen[0].content) == {"user_id": "u1", "content": "I like tea"}


def test_a_listing_sends_only_the_options_given() -> None:
    seen: list[httpx.Request] = []
    body = {"status": "success", "results": [], "has_more": False, "next_cursor": None}
    service = served(lambda r: httpx.Response(200, json=body), seen)

    service.list_memories(CALLER, ListMemoriesCommand(user_id="u@x", cursor=None, limit=5))

    assert seen[0].url.raw_path.startswith(b"/v1/users/u%40x/memories")
    assert dict(seen[0].url.params) == {"limit": "5"}  # no empty cursor


def test_errors_come_back_as_the_cores_with_the_servers_message() -> None:
    missing = served(lambda r: httpx.Response(404, json={"status": "error", "message": "no mem_9"}))
    with pytest.raises(NotFoundError, match="no mem_9"):
        missing.get_memory(CALLER, "mem_9")

    refused = served(lambda r: httpx.Response(401, json={"status": "error", "message": "bad key"}))
    with pytest.raises(UnauthorizedError, match="HINDSIGHT_API_KEY"):
        refused.get_memory(CALLER, "mem_9")


def test_a_server_that_does_not_answer_is_named() -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(UnavailableError, match="pid 4242"):
        served(down).health()


def test_tasks_that_need_the_directory_alone_are_refused_without_a_request() -> None:
    seen: list[httpx.Request] = []
    service = served(lambda r: httpx.Response(500), seen)

    with pytest.raises(DirectoryServedError, match="kill 4242"):
        service.reindex()
    with pytest.raises(DirectoryServedError, match="import-export"):
        service.import_export(CALLER, [])
    assert seen == []
