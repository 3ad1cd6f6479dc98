"""POST /v1/memories and /v1/memories/batch through the store function's handler."""

from __future__ import annotations

import json

from hindsight.core.service import MemoryService
from tests.functional.conftest import (
    ADMIN_KEY,
    CALENDAR_KEY,
    READONLY_KEY,
    assert_error,
    call,
    listed,
)


def store(body: dict, key: str | None = ADMIN_KEY, **kwargs):  # type: ignore[no-untyped-def]
    return call("POST", "/v1/memories", body=body, key=key, **kwargs)


def test_store_returns_the_new_id_and_the_memory_is_readable(service: MemoryService) -> None:
    reply = store(
        {
            "user_id": "u1",
            "content": "用户对花生过敏",
            "category": "constraint",
            "session_id": "s1",
            "metadata": {"source": "chat"},
        }
    )
    assert reply.status == 201
    assert reply.body["status"] == "success"
    memory_id = reply.body["memory_id"]
    got = call("GET", "/v1/memories/{memory_id}", path_params={"memory_id": memory_id})
    assert got.status == 200
    assert got.body["status"] == "success"
    assert got.body["memory"]["content"] == "用户对花生过敏"
    assert got.body["memory"]["category"] == "constraint"
    assert got.body["memory"]["metadata"] == {"source": "chat"}
    assert got.body["memory"]["scope"] == "global"


def test_x_api_key_header_is_accepted(service: MemoryService) -> None:
    reply = store({"user_id": "u1", "content": "likes green tea"}, header="x-api-key")
    assert reply.status == 201


def test_same_content_within_the_window_is_skipped_with_the_existing_id(
    service: MemoryService,
) -> None:
    first = store({"user_id": "u1", "content": "I am allergic to peanuts"})
    second = store({"user_id": "u1", "content": "I am allergic to peanuts"})
    assert first.status == 201
    assert second.status == 200
    assert second.body["status"] == "skipped"
    assert second.body["reason"] == "duplicate"
    assert second.body["memory_id"] == first.body["memory_id"]
    assert len(listed("u1")) == 1


def test_batch_stores_each_item_and_reports_one_outcome_each(service: MemoryService) -> None:
    reply = call(
        "POST",
        "/v1/memories/batch",
        body={
            "user_id": "u1",
            "items": [
                {"content": "prefers window seats"},
                {"content": "下周三和王总开会", "category": "task"},
                {"content": "prefers window seats"},
            ],
        },
    )
    assert reply.status == 200, reply.body
    assert reply.body["status"] == "success"
    statuses = [r["status"] for r in reply.body["results"]]
    assert statuses == ["success", "success", "skipped"]
    assert reply.body["results"][2]["memory_id"] == reply.body["results"][0]["memory_id"]
    assert len(listed("u1")) == 2


def test_missing_content_is_422_naming_the_field_and_nothing_is_stored(
    service: MemoryService,
) -> None:
    message = assert_error(store({"user_id": "u1"}), 422, "content: field required")
    assert "user_id" not in message
    assert listed("u1") == []


def test_wrong_types_are_422_naming_each_field(service: MemoryService) -> None:
    reply = store({"user_id": "u1", "content": 42, "ttl_seconds": "soon", "participants": "bob"})
    message = assert_error(reply, 422)
    assert "content: must be a string" in message
    assert "ttl_seconds: must be an integer" in message
    assert "participants: must be a list" in message
    assert listed("u1") == []


def test_content_over_the_limit_is_413_naming_the_limit_and_setting(
    service: MemoryService,
) -> None:
    reply = store({"user_id": "u1", "content": "x" * 100_001})
    message = assert_error(reply, 413, "the limit is 100,000 (HINDSIGHT_MAX_CONTENT_CHARS)")
    assert "Split the text" in message
    assert listed("u1") == []


def test_a_long_memory_is_stored_whole_and_found_with_a_highlight(service: MemoryService) -> None:
    paragraphs = [
        f"Section {i}. The quarterly vendor review covered invoices, budgets and deadlines."
        for i in range(1_200)
    ]
    paragraphs[1_100] = "Section 1100. The spare key to the workshop is under the blue flowerpot."
    content = "\n\n".join(paragraphs)
    assert len(content) > 90_000
    reply = store({"user_id": "u1", "content": content})
    assert reply.status == 201, reply.body
    memory_id = reply.body["memory_id"]
    assert [m["content"] for m in listed("u1")] == [content]
    found = call(
        "POST",
        "/v1/retrieve",
        body={"user_id": "u1", "query": "where is the workshop spare key", "top_k": 3},
    )
    assert found.status == 200, found.body
    results = found.body["results"]
    assert [r["memory_id"] for r in results][:1] == [memory_id]
    assert [r["memory_id"] for r in results].count(memory_id) == 1
    assert "blue flowerpot" in results[0]["highlights"][0]["excerpt"]


def test_unknown_field_and_bad_date_are_422(service: MemoryService) -> None:
    reply = store({"user_id": "u1", "content": "hello there", "colour": "red", "occurred_at": "x"})
    message = assert_error(reply, 422, "colour: unknown field")
    assert "occurred_at: must be an ISO 8601 date-time" in message
    assert listed("u1") == []


def test_body_over_the_limit_is_413(service: MemoryService) -> None:
    body = json.dumps({"user_id": "u1", "content": "a", "metadata": {"blob": "x" * 6_400_000}})
    message = assert_error(call("POST", "/v1/memories", raw_body=body), 413, "6.0 MiB")
    assert "HINDSIGHT_MAX_CONTENT_CHARS" in message
    assert listed("u1") == []


def test_malformed_json_is_400(service: MemoryService) -> None:
    assert_error(call("POST", "/v1/memories", raw_body='{"user_id": "u1", '), 400, "not valid JSON")
    assert_error(call("POST", "/v1/memories", raw_body='["u1"]'), 400, "JSON object")
    assert_error(call("POST", "/v1/memories", raw_body=""), 400, "empty")
    assert listed("u1") == []


def test_base64_encoded_body_is_decoded(service: MemoryService) -> None:
    reply = call(
        "POST",
        "/v1/memories",
        body={"user_id": "u1", "content": "喜欢喝乌龙茶"},
        base64_body=True,
    )
    assert reply.status == 201, reply.body
    assert listed("u1")[0]["content"] == "喜欢喝乌龙茶"


def test_batch_with_one_bad_item_stores_nothing(service: MemoryService) -> None:
    reply = call(
        "POST",
        "/v1/memories/batch",
        body={"user_id": "u1", "items": [{"content": "fine"}, {"category": "task"}]},
    )
    assert_error(reply, 422, "items[1].content: field required")
    assert listed("u1") == []


def test_batch_over_100_items_is_422(service: MemoryService) -> None:
    items = [{"content": f"memory number {i}"} for i in range(101)]
    reply = call("POST", "/v1/memories/batch", body={"user_id": "u1", "items": items})
    assert_error(reply, 422, "items: must have at most 100 items")
    assert listed("u1") == []


def test_key_without_the_scope_is_403_and_nothing_is_stored(service: MemoryService) -> None:
    reply = store({"user_id": "u1", "content": "quarterly review", "scope": "work"}, CALENDAR_KEY)
    assert_error(reply, 403, "work")
    reply = store({"user_id": "u1", "content": "quarterly review"}, READONLY_KEY)
    assert_error(reply, 403)
    assert listed("u1") == []


def test_calendar_key_writes_its_default_scope(service: MemoryService) -> None:
    reply = store({"user_id": "u1", "content": "dentist on Friday"}, CALENDAR_KEY)
    assert reply.status == 201, reply.body
    assert listed("u1")[0]["scope"] == "calendar"
