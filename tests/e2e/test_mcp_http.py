"""MCP over streamable HTTP: POST /mcp on ``hindsight serve`` (the SDK's transport in the
ASGI application) and on the template-driven gateway (the McpFunction handler).

The MCP SDK's own client talks to a server on a free port backed by the embedded
store in a temp dir and the real embedding model; two agents of one tenant connect
with their own keys and scopes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import SERVERS, Server, own_server

pytestmark = pytest.mark.anyio

CALENDAR_KEY = "mcp-e2e-calendar-0001"
TRAVEL_KEY = "mcp-e2e-travel-0002"
OTHER_TENANT_KEY = "mcp-e2e-globex-0003"
KEYS = {
    "keys": [
        {
            "key": CALENDAR_KEY,
            "tenant_id": "acme",
            "key_id": "calendar-agent",
            "read_scopes": ["calendar"],
            "write_scopes": ["calendar", "global"],
            "default_scope": "calendar",
        },
        {
            "key": TRAVEL_KEY,
            "tenant_id": "acme",
            "key_id": "travel-agent",
            "read_scopes": ["travel"],
            "write_scopes": ["travel", "global"],
            "default_scope": "travel",
        },
        {"key": OTHER_TENANT_KEY, "tenant_id": "globex", "key_id": "globex-agent"},
    ]
}
ACCEPT = "application/json, text/event-stream"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=SERVERS)
def mcp_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A server of each kind with this module's keys; the process's service is put back
    afterwards."""
    kind = str(request.param)
    data_dir = tmp_path_factory.mktemp(f"hindsight-mcp-e2e-{kind}")
    with own_server(kind, data_dir, api_keys=json.dumps(KEYS)) as running:
        yield running


@asynccontextmanager
async def agent(gateway: Server, key: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with anyio.fail_after(120):
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60.0) as http,
            streamable_http_client(f"{gateway.url}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> tuple[dict[str, Any], bool]:
    result = await session.call_tool(tool, arguments)
    assert result.structured_content is not None
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content, result.is_error


async def test_an_agent_stores_retrieves_reflects_and_forgets(mcp_gateway: Server) -> None:
    async with agent(mcp_gateway, CALENDAR_KEY) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert {"memory_store", "memory_retrieve", "memory_reflect"} <= set(tools)
        assert "small talk" in (tools["memory_store"].description or "")

        stored, failed = await call(
            session,
            "memory_store",
            user_id="test_user",
            session_id="test_session",
            content="用户对花生过敏",
            category="constraint",
        )
        assert not failed and stored["status"] == "success"
        for other in ("下周三下午两点开项目评审会", "用户喜欢周末去爬山", "今天天气不错"):
            await call(session, "memory_store", user_id="test_user", content=other)
        again, _ = await call(
            session, "memory_store", user_id="test_user", content="用户对花生过敏"
        )
        assert again["status"] == "skipped" and again["memory_id"] == stored["memory_id"]
        assert again["message"] == "this memory already exists; nothing to store"

        found, failed = await call(
            session, "memory_retrieve", user_id="test_user", query="饮食禁忌", top_k=3
        )
        assert not failed
        assert found["results"][0]["memory_id"] == stored["memory_id"], found
        assert len(found["results"]) == 3 and found["has_more"] is True
        # a min_score leaves out the memories that do not answer the question
        strict, failed = await call(
            session,
            "memory_retrieve",
            user_id="test_user",
            query="饮食禁忌",
            top_k=3,
            min_score=0.05,  # the allergy ~0.27; the next (hiking) ~0.011
        )
        assert not failed
        assert [r["memory_id"] for r in strict["results"]] == [stored["memory_id"]], strict
        assert strict["has_more"] is False

        reflected, failed = await call(session, "memory_reflect", user_id="test_user")
        assert not failed and reflected["episodes_considered"] == 4
        assert any("花生" in f["content"] for f in reflected["created"]), reflected

        gone, failed = await call(session, "memory_forget", memory_id=stored["memory_id"])
        assert not failed and gone["status"] == "success"
        missing, failed = await call(session, "memory_forget", memory_id=stored["memory_id"])
        assert failed and missing["status"] == "error"


async def test_agents_share_global_and_keep_their_own_scope(mcp_gateway: Server) -> None:
    async with agent(mcp_gateway, CALENDAR_KEY) as calendar:
        private, _ = await call(calendar, "memory_store", user_id="u7", content="周五上午看牙医")
        shared, _ = await call(
            calendar, "memory_store", user_id="u7", content="用户对海鲜过敏", scope="global"
        )
    async with agent(mcp_gateway, TRAVEL_KEY) as travel:
        own, _ = await call(travel, "memory_store", user_id="u7", content="喜欢靠窗的座位")
        found, _ = await call(travel, "memory_retrieve", user_id="u7", query="过敏 牙医 座位")
        ids = {r["memory_id"] for r in found["results"]}
        assert ids == {shared["memory_id"], own["memory_id"]}
        listed, _ = await call(travel, "memory_list", user_id="u7")
        assert private["memory_id"] not in {m["memory_id"] for m in listed["results"]}
    async with agent(mcp_gateway, OTHER_TENANT_KEY) as outsider:
        nothing, _ = await call(outsider, "memory_retrieve", user_id="u7", query="过敏")
        assert nothing["results"] == []


async def test_invalid_arguments_are_error_results(mcp_gateway: Server) -> None:
    async with agent(mcp_gateway, CALENDAR_KEY) as session:
        content, failed = await call(session, "memory_retrieve", user_id="u1", top_k=99)
    assert failed
    assert content["message"].startswith("invalid arguments:")
    assert "query: field required" in content["message"] and "top_k" in content["message"]


async def test_a_client_without_a_key_reads_why_it_was_refused(mcp_gateway: Server) -> None:
    with pytest.raises(BaseException) as caught:
        async with agent(mcp_gateway, None):
            pass
    errors = [e for e in _leaves(caught.value) if isinstance(e, MCPError)]
    assert errors and "an API key is required" in errors[0].message


def _leaves(error: BaseException) -> Iterator[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def test_a_lone_tools_call_works_like_the_curl_example(mcp_gateway: Server) -> None:
    body = {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "id": 1,
        "params": {
            "name": "memory_store",
            "arguments": {
                "user_id": "test_user",
                "session_id": "curl_session",
                "content": "用户不吃香菜",
                "category": "constraint",
            },
        },
    }
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    refused = httpx.post(f"{mcp_gateway.url}/mcp", json=body, headers=headers, timeout=60)
    assert refused.status_code == 401
    assert refused.json()["status"] == "error"
    headers["Authorization"] = f"Bearer {TRAVEL_KEY}"
    reply = httpx.post(f"{mcp_gateway.url}/mcp", json=body, headers=headers, timeout=60)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    result = reply.json()["result"]
    assert result["isError"] is False and result["structuredContent"]["status"] == "success"
    assert httpx.get(f"{mcp_gateway.url}/mcp", headers=headers).status_code == 405


async def test_the_2026_protocol_needs_no_handshake(mcp_gateway: Server) -> None:
    """A client on the per-request protocol (server/discover, no initialize) works too."""
    headers = {"Authorization": f"Bearer {TRAVEL_KEY}"}
    with anyio.fail_after(120):
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60.0) as http,
            streamable_http_client(f"{mcp_gateway.url}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            discovered = await session.discover()
            assert discovered.capabilities.tools is not None
            stored, failed = await call(session, "memory_store", user_id="u9", content="我住在杭州")
            found, _ = await call(session, "memory_retrieve", user_id="u9", query="住在哪里")
    assert not failed and stored["status"] == "success"
    assert [r["memory_id"] for r in found["results"]] == [stored["memory_id"]]
