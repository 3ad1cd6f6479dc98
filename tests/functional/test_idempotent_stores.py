"""Idempotency-Key on the store routes through the real store function (memory backend,
records on SQLite in memory): a retried store or batch gets the first answer, marked
``Idempotent-Replayed``, and stores nothing new; another body for the key is a 422."""

from __future__ import annotations

from typing import Any

from hindsight.core.service import MemoryService
from tests.functional.conftest import (
    GLOBEX_KEY,
    Reply,
    assert_error,
    invoke,
    listed,
    proxy_event,
)

MEMORY = {"user_id": "u1", "content": "the flight to Lisbon lands at 9"}
BATCH = {"user_id": "u1", "items": [{"content": "first of two"}, {"content": "second of two"}]}


def post(resource: str, body: dict[str, Any], key_value: str | None, **kwargs: Any) -> Reply:
    event = proxy_event("POST", resource, body=body, **kwargs)
    if key_value is not None:
        event["headers"]["Idempotency-Key"] = key_value
        event["multiValueHeaders"]["Idempotency-Key"] = [key_value]
    return invoke(event)


def test_a_retried_store_gets_the_first_answer(service: MemoryService) -> None:
    first = post("/v1/memories", MEMORY, "retry-1")
    again = post("/v1/memories", MEMORY, "retry-1")
    assert first.status == again.status == 201
    assert again.body == first.body
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert len(listed("u1")) == 1


def test_without_the_header_a_repeat_is_a_duplicate_as_before(service: MemoryService) -> None:
    post("/v1/memories", MEMORY, None)
    repeat = post("/v1/memories", MEMORY, None)
    assert repeat.status == 200 and repeat.body["status"] == "skipped"


def test_a_retried_batch_creates_nothing_new(service: MemoryService) -> None:
    first = post("/v1/memories/batch", BATCH, "batch-1")
    again = post("/v1/memories/batch", BATCH, "batch-1")
    assert first.status == again.status == 200
    assert again.body == first.body
    assert [r["status"] for r in again.body["results"]] == ["success", "success"]
    assert len(listed("u1")) == 2


def test_the_same_key_with_another_body_is_a_422(service: MemoryService) -> None:
    post("/v1/memories", MEMORY, "reused-1")
    other = post("/v1/memories", {**MEMORY, "content": "something else"}, "reused-1")
    assert_error(other, 422, "Idempotency-Key", "another request")
    assert len(listed("u1")) == 1


def test_keys_belong_to_a_tenant(service: MemoryService) -> None:
    post("/v1/memories", MEMORY, "shared-1")
    theirs = post("/v1/memories", MEMORY, "shared-1", key=GLOBEX_KEY)
    assert theirs.status == 201
    assert "Idempotent-Replayed" not in theirs.headers


def test_a_malformed_key_is_a_400(service: MemoryService) -> None:
    assert_error(post("/v1/memories", MEMORY, "has space"), 400, "Idempotency-Key")
    assert listed("u1") == []
