"""min_score through the functions: the HTTP retrieve and context routes and the MCP tool.

The functional tier's hashing embedder gives small calibrated scores, and it is not the
model the calibration was fitted for, so the server default does not cut here: a request's
min_score does.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hindsight.core.service import MemoryService
from tests.functional.conftest import ADMIN_KEY, assert_error, call
from tests.functional.test_mcp_function import tool


def store(content: str, user_id: str = "u1") -> str:
    reply = call(
        "POST", "/v1/memories", body={"user_id": user_id, "content": content}, key=ADMIN_KEY
    )
    assert reply.status == 201, reply.body
    return reply.body["memory_id"]


def retrieve(**body: Any):  # type: ignore[no-untyped-def]
    return call("POST", "/v1/retrieve", body={"user_id": "u1", **body}, key=ADMIN_KEY)


@pytest.mark.parametrize("bad", [-0.5, 1.01, "high"])
def test_an_out_of_range_min_score_is_a_422_naming_it(service: MemoryService, bad: Any) -> None:
    assert_error(retrieve(query="x", min_score=bad), 422, "min_score")
    context = {"user_id": "u1", "session_id": "s1", "query": "x", "min_score": bad}
    assert_error(call("POST", "/v1/context", body=context, key=ADMIN_KEY), 422, "min_score")


def test_min_score_cuts_the_http_results(service: MemoryService) -> None:
    store("peanut allergy noted by the doctor")
    store("tennis on Sunday")
    everything = retrieve(query="peanut allergy", min_score=0)
    assert everything.status == 200, everything.body
    results = everything.body["results"]
    assert len(results) == 2
    assert results[0]["score"] >= results[1]["score"]  # the order is the score
    for result in results:
        assert result["score"] == result["why"]["score"] == result["why"]["fused_score"]
        assert "calibration" in result["why"]
    # min_score compares the calibrated probability
    best = max(r["why"]["probability"] for r in results)
    kept = retrieve(query="peanut allergy", min_score=best)
    assert [r["why"]["probability"] for r in kept.body["results"]] == [best]
    assert retrieve(query="peanut allergy", min_score=1).body["results"] == []


def test_the_mcp_tool_takes_min_score(service: MemoryService) -> None:
    store("peanut allergy noted by the doctor")
    found, failed = tool("memory_retrieve", user_id="u1", query="peanut allergy", min_score=0)
    assert not failed and len(found["results"]) == 1
    none, failed = tool("memory_retrieve", user_id="u1", query="peanut allergy", min_score=1)
    assert not failed and none["results"] == []
    refused, failed = tool("memory_retrieve", user_id="u1", query="x", min_score=2)
    assert failed and "min_score" in refused["message"]


def test_min_score_keeps_the_newer_state_with_the_older_one(service: MemoryService) -> None:
    # the knowledge-update failure: the cut dropped the newest state and kept the older one
    now = datetime.now(UTC)
    for content, days in (
        ("I live in Beijing, my home is a flat near the old park", 200),
        ("I moved, I live in Shanghai now, my home is a flat near the new park", 5),
        ("tennis with Mark on Sunday", 50),
        ("the dentist said to floss more", 50),
    ):
        reply = call(
            "POST",
            "/v1/memories",
            body={
                "user_id": "u1",
                "content": content,
                "occurred_at": (now - timedelta(days=days)).isoformat(),
            },
            key=ADMIN_KEY,
        )
        assert reply.status == 201, reply.body
    query = "my home flat in Beijing"
    everything = retrieve(query=query, min_score=0).body["results"]
    probable = {r["content"].split(",")[0]: r["why"]["probability"] for r in everything}
    older, newer = probable["I live in Beijing"], probable["I moved"]
    assert older > newer  # the older state is the likelier answer to this query
    kept = retrieve(query=query, min_score=older).body["results"]
    assert [r["content"].split(",")[0] for r in kept] == ["I moved", "I live in Beijing"]
    assert kept[1]["updated_later"] is True
    # under the cut, back with the state it updates, whose score it takes
    assert kept[0]["why"]["probability"] < older
    assert kept[0]["score"] >= kept[1]["score"] and kept[0]["why"]["state"]["factor"] > 1.0
