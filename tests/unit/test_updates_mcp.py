"""memory_retrieve (MCP) reads what holds now by default and says what was updated later;
current_only false and as_of are passed through."""

from __future__ import annotations

import json
from typing import Any

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.policy import Policy
from hindsight.mcp.tools import call_tool_sync
from tests.contract.test_updates_contract import MARCH, PRINCIPAL, moved
from tests.fakes import HashingEmbedder


def retrieve(service: Any, **arguments: Any) -> list[dict[str, Any]]:
    result = call_tool_sync(
        "memory_retrieve",
        {"user_id": "u1", "query": "Where does the user live?", **arguments},
        lambda: PRINCIPAL,
        lambda: service,
    )
    assert not result.is_error, result.content
    body = result.structured_content or json.loads(result.content[0].text)  # type: ignore[union-attr]
    return list(body["results"])


def test_memory_retrieve_puts_the_newest_state_first_and_marks_the_old_one() -> None:
    ports = local_ports(
        InMemoryRecordStore(), InMemorySearchIndex(), HashingEmbedder(), RuleBasedReflector()
    )
    service = assemble(ports, Policy())
    old, new = moved(service)
    results = retrieve(service, kinds=["episodic"])
    assert [r["memory_id"] for r in results][:2] == [new, old]
    assert results[1]["updated_later"] is True and results[1]["superseded_by"] == new
    assert "updated_later" not in results[0]
    plain = retrieve(service, kinds=["episodic"], current_only=False)
    assert [r["memory_id"] for r in plain][:2] == [old, new]
    then = retrieve(service, as_of=MARCH.isoformat())
    found = [r["memory_id"] for r in then]
    assert found[:1] == [old] and new not in found
