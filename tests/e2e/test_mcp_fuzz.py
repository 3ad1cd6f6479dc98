"""Fuzzing the MCP tools through a real MCP client, on both local servers.

One MCP session (the SDK's client over streamable HTTP, ``POST /mcp``) per server kind
(``hindsight serve`` and the template-driven gateway) calls every tool the server
lists with hypothesis-generated arguments: wrong types, missing and extra fields,
nulls, negative and huge numbers, unicode and huge strings. Every call must answer
within its timeout with a tool result (``isError`` with an ``{"status": "error",
"message"}`` body, never the "unavailable" message of a crash, or a success), and a
good call right after it must still work on the same session.

Bounded and reproducible: derandomized hypothesis, a fixed number of examples per tool,
a timeout per call. ``idempotency_key`` on memory_store is checked here end to end too.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from hindsight.mcp.results import UNAVAILABLE_MESSAGE
from tests.e2e.conftest import E2E_KEY, SERVERS, Server, own_server

CALL_TIMEOUT = 30.0  # seconds per tool call: a hung call fails the example
EXAMPLES_PER_TOOL = 40
GOOD_CALL = ("memory_list", {"user_id": "fuzz-canary", "limit": 1})
EXPECTED_TOOLS = {"memory_store", "memory_retrieve", "memory_reflect"}

JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["", " ", "\x00", "null", "-1", "0", "1e309", "用户", "😀" * 3, "\u202e"]),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)
HUGE_STRINGS = st.sampled_from([3_000, 120_000]).flatmap(
    lambda n: st.sampled_from(["x", "字", " "]).map(lambda c: c * n)
)
ODD_VALUES = st.one_of(
    JSON_VALUES,
    HUGE_STRINGS,
    st.integers(max_value=-1),
    st.integers(min_value=10**12),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=300),
)


def _valid(tool: str) -> dict[str, Any]:
    """A good call of ``tool``: what the odd arguments are built around."""
    return {
        "memory_store": {"user_id": "fuzz-u", "content": "the user likes quiet trains"},
        "memory_retrieve": {"user_id": "fuzz-u", "query": "trains"},
        "memory_reflect": {"user_id": "fuzz-u", "dry_run": True},
        "memory_forget": {"memory_id": "no-such-memory"},
        "memory_list": {"user_id": "fuzz-u"},
    }.get(tool, {})


def odd_arguments(tool: str, properties: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """A good call with some fields dropped, some given odd values, some unknown ones added."""
    names = st.sampled_from(properties) if properties else st.nothing()
    base = _valid(tool)
    return st.builds(
        _mutate,
        st.just(base),
        st.lists(names, max_size=3),
        st.dictionaries(names, ODD_VALUES, max_size=3),
        st.dictionaries(st.text(min_size=1, max_size=12), JSON_VALUES, max_size=2),
    )


def _mutate(
    base: dict[str, Any], dropped: list[str], odd: dict[str, Any], extra: dict[str, Any]
) -> dict[str, Any]:
    arguments = {k: v for k, v in base.items() if k not in dropped}
    arguments.update(odd)
    arguments.update(extra)
    return arguments


@pytest.fixture(scope="module", params=SERVERS)
def running(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    kind = str(request.param)
    with own_server(kind, tmp_path_factory.mktemp(f"hindsight-mcp-fuzz-{kind}")) as server:
        yield server


@asynccontextmanager
async def _session(server: Server) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {E2E_KEY}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT * 2) as http,
        streamable_http_client(f"{server.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        with anyio.fail_after(CALL_TIMEOUT):
            await session.initialize()
        yield session


class Agent:
    """One MCP session on an event loop in a thread, called from synchronous tests."""

    def __init__(self, portal: BlockingPortal, session: ClientSession) -> None:
        self.portal = portal
        self.session = session

    async def _call(self, name: str, arguments: Any) -> Any:
        with anyio.fail_after(CALL_TIMEOUT):
            return await self.session.call_tool(name, arguments)

    def call(self, name: str, arguments: Any) -> Any:
        return self.portal.call(self._call, name, arguments)

    def tools(self) -> dict[str, list[str]]:
        async def listed() -> Any:
            with anyio.fail_after(CALL_TIMEOUT):
                return await self.session.list_tools()

        found = self.portal.call(listed)
        return {t.name: sorted(t.input_schema.get("properties", {})) for t in found.tools}


@pytest.fixture(scope="module")
def agent(running: Server) -> Iterator[Agent]:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_session(running)) as session,
    ):
        yield Agent(portal, session)


def _answer(result: Any) -> tuple[dict[str, Any], bool]:
    """(body, is_error) of a tool result, checked to be a proper answer."""
    body = result.structured_content
    assert isinstance(body, dict), result
    assert json.loads(result.content[0].text) == body
    if result.is_error:
        assert body["status"] == "error" and body["message"], body
        assert body["message"] != UNAVAILABLE_MESSAGE, "a tool crashed (see the server log)"
    else:
        assert body["status"] in {"success", "skipped"}, body
    return body, bool(result.is_error)


def _still_usable(agent: Agent) -> None:
    body, failed = _answer(agent.call(*GOOD_CALL))
    assert not failed and body["status"] == "success", body


def test_the_server_lists_the_memory_tools(agent: Agent) -> None:
    assert set(agent.tools()) >= EXPECTED_TOOLS


@pytest.mark.parametrize(
    "tool", ["memory_store", "memory_retrieve", "memory_reflect", "memory_forget", "memory_list"]
)
def test_odd_arguments_answer_a_result_and_the_session_goes_on(agent: Agent, tool: str) -> None:
    tools = agent.tools()
    if tool not in tools:
        pytest.fail(f"{tool} is not listed; the server lists {sorted(tools)}")
    outcomes: Counter[str] = Counter()

    @given(arguments=odd_arguments(tool, tools[tool]))
    @settings(
        max_examples=EXAMPLES_PER_TOOL,
        derandomize=True,
        database=None,
        deadline=None,  # each call is bounded by CALL_TIMEOUT instead
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def fuzz(arguments: dict[str, Any]) -> None:
        body, failed = _answer(agent.call(tool, arguments))
        outcomes["error" if failed else body["status"]] += 1
        _still_usable(agent)

    fuzz()
    print(f"\n{tool}: {dict(outcomes)}")
    assert outcomes["error"] > 0  # the odd arguments did reach the validation


def test_an_unknown_tool_or_non_object_arguments_are_refused_and_the_session_goes_on(
    agent: Agent,
) -> None:
    with pytest.raises(MCPError, match="unknown tool"):
        agent.call("memory_nothing", {})
    _still_usable(agent)
    body, failed = _answer(agent.call("memory_store", None))  # no arguments at all
    assert failed and "user_id" in body["message"]
    _still_usable(agent)


def test_a_retried_store_with_an_idempotency_key_answers_once(agent: Agent) -> None:
    arguments = {"user_id": "fuzz-idem", "content": "the user flies with KLM"}
    first, failed = _answer(agent.call("memory_store", {**arguments, "idempotency_key": "k1"}))
    again, failed_again = _answer(
        agent.call("memory_store", {**arguments, "idempotency_key": "k1"})
    )
    other, failed_other = _answer(
        agent.call("memory_store", {**arguments, "content": "trains", "idempotency_key": "k1"})
    )
    listed, _ = _answer(agent.call("memory_list", {"user_id": "fuzz-idem"}))
    assert not failed and not failed_again and again == first
    assert failed_other and "already used" in other["message"]
    assert [m["memory_id"] for m in listed["results"]] == [first["memory_id"]]
