"""memory_store's ``idempotency_key`` through the MCP function (functions/mcp): the same
records as the HTTP ``Idempotency-Key`` (``api.idempotency``; here the memory backend's
SQLite, DynamoDB on AWS), under an operation of its own."""

from __future__ import annotations

from hindsight.api.idempotency import MAX_KEY_CHARS
from hindsight.core.service import MemoryService
from hindsight.mcp.tool_schemas import IDEMPOTENCY_KEY_MAX_CHARS, StoreArguments
from tests.functional.conftest import GLOBEX_KEY, invoke, listed, proxy_event
from tests.functional.test_mcp_function import PEANUTS, tool


def test_a_retried_store_answers_the_first_result_and_stores_nothing(
    service: MemoryService,
) -> None:
    first, failed = tool("memory_store", **PEANUTS, idempotency_key="retry-1")
    again, failed_again = tool("memory_store", **PEANUTS, idempotency_key="retry-1")
    assert not failed and not failed_again
    assert first["status"] == "success"
    assert again == first  # the first answer, not a 'skipped' duplicate
    assert [m["memory_id"] for m in listed("test_user")] == [first["memory_id"]]


def test_the_same_key_with_other_arguments_is_an_error_that_says_so(
    service: MemoryService,
) -> None:
    tool("memory_store", **PEANUTS, idempotency_key="retry-2")
    other, failed = tool(
        "memory_store", **{**PEANUTS, "content": "用户喜欢靠窗的座位"}, idempotency_key="retry-2"
    )
    assert failed
    assert other["status"] == "error"
    assert "idempotency_key 'retry-2' was already used for another request" in other["message"]
    assert len(listed("test_user")) == 1


def test_a_new_key_stores_again_and_the_duplicate_rule_still_holds(
    service: MemoryService,
) -> None:
    first, _ = tool("memory_store", **PEANUTS, idempotency_key="retry-3")
    second, failed = tool("memory_store", **PEANUTS, idempotency_key="retry-4")
    assert not failed
    assert second["status"] == "skipped" and second["memory_id"] == first["memory_id"]


def test_a_key_is_per_tenant_and_apart_from_the_http_header(service: MemoryService) -> None:
    acme, _ = tool("memory_store", **PEANUTS, idempotency_key="shared-key")
    globex, failed = tool("memory_store", key=GLOBEX_KEY, **PEANUTS, idempotency_key="shared-key")
    assert not failed and globex["memory_id"] != acme["memory_id"]
    event = proxy_event("POST", "/v1/memories", body={"user_id": "u2", "content": "other"})
    event["headers"]["Idempotency-Key"] = "shared-key"
    event["multiValueHeaders"]["Idempotency-Key"] = ["shared-key"]
    http = invoke(event)
    assert http.status == 201, http.body  # not a replay of the MCP call's answer


def test_a_bad_key_is_an_error_saying_what_a_key_may_be(service: MemoryService) -> None:
    spaced, failed = tool("memory_store", **PEANUTS, idempotency_key="has a space")
    assert failed and "idempotency_key must be 1 to 255 visible ASCII" in spaced["message"]
    empty, failed_empty = tool("memory_store", **PEANUTS, idempotency_key="")
    assert failed_empty and "idempotency_key" in empty["message"]
    assert listed("test_user") == []


def test_a_failed_store_is_not_remembered(service: MemoryService) -> None:
    refused, failed = tool("memory_store", user_id="bad id", content="x", idempotency_key="k-5")
    assert failed and "user_id" in refused["message"]
    # had the error been kept under the key, other arguments would be refused as a reuse
    stored, failed_again = tool("memory_store", user_id="u5", content="x", idempotency_key="k-5")
    assert not failed_again and stored["status"] == "success"


def test_the_tool_schema_states_the_key_limit_the_records_apply() -> None:
    assert IDEMPOTENCY_KEY_MAX_CHARS == MAX_KEY_CHARS
    schema = StoreArguments.model_json_schema()["properties"]["idempotency_key"]
    assert {"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS} in schema["anyOf"]
