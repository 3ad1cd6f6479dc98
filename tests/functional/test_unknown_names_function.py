"""The unknown-names answer through the functions: the HTTP retrieve route and the MCP
tool say who nobody in the user's memories is (core/retrieval/subjects.py)."""

from __future__ import annotations

from hindsight.core.service import MemoryService
from tests.functional.conftest import ADMIN_KEY, call
from tests.functional.test_mcp_function import tool

TURNS = (
    ("Jon", "Jon: I lost my job at the bank, so I am opening a dance studio"),
    ("Gina", "Gina: I painted a sunset over the lake last weekend"),
)


def _store_turns() -> None:
    for speaker, content in TURNS:
        body = {"user_id": "u1", "content": content, "speaker": speaker, "session_id": "s1"}
        reply = call("POST", "/v1/memories", body=body, key=ADMIN_KEY)
        assert reply.status == 201, reply.body


def test_http_retrieve_names_whom_no_memory_mentions(service: MemoryService) -> None:
    _store_turns()
    body = {"user_id": "u1", "query": "What did Caroline paint?"}
    reply = call("POST", "/v1/retrieve", body=body, key=ADMIN_KEY)
    assert reply.status == 200, reply.body
    assert reply.body["results"] == [] and reply.body["unknown_names"] == ["Caroline"]
    asked = call(
        "POST", "/v1/retrieve", body={**body, "query": "What did Gina paint?"}, key=ADMIN_KEY
    )
    assert asked.body["unknown_names"] == [] and asked.body["results"]
    anyway = call("POST", "/v1/retrieve", body={**body, "min_score": 0}, key=ADMIN_KEY)
    assert anyway.body["unknown_names"] == [] and anyway.body["results"]


def test_the_mcp_tool_names_whom_no_memory_mentions(service: MemoryService) -> None:
    _store_turns()
    found, failed = tool("memory_retrieve", user_id="u1", query="What did Caroline paint?")
    assert not failed and found["results"] == [] and found["unknown_names"] == ["Caroline"]
    found, failed = tool("memory_retrieve", user_id="u1", query="What did Gina paint?")
    assert not failed and found["results"] and "unknown_names" not in found
