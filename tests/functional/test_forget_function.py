"""Deleting memories and erasing users through the forget function."""

from __future__ import annotations

from hindsight.core.service import MemoryService
from tests.functional.conftest import (
    ADMIN_KEY,
    CALENDAR_KEY,
    GLOBEX_KEY,
    assert_error,
    call,
    listed,
)


def store(content: str, user_id: str = "u1", key: str = ADMIN_KEY) -> str:
    reply = call("POST", "/v1/memories", body={"user_id": user_id, "content": content}, key=key)
    assert reply.status == 201, reply.body
    return reply.body["memory_id"]


def delete(memory_id: str, key: str = ADMIN_KEY):  # type: ignore[no-untyped-def]
    return call("DELETE", "/v1/memories/{memory_id}", path_params={"memory_id": memory_id}, key=key)


def test_delete_removes_the_memory(service: MemoryService) -> None:
    gone = store("forget me")
    kept = store("keep me")
    reply = delete(gone)
    assert reply.status == 200, reply.body
    assert reply.body["status"] == "success"
    assert reply.body["memory_id"] == gone
    assert [m["memory_id"] for m in listed("u1")] == [kept]
    assert_error(call("GET", "/v1/memories/{memory_id}", path_params={"memory_id": gone}), 404)
    assert_error(delete(gone), 404)


def test_another_tenants_memory_is_404_and_not_deleted(service: MemoryService) -> None:
    theirs = store("globex secret", key=GLOBEX_KEY)
    assert_error(delete(theirs), 404)
    assert [m["memory_id"] for m in listed("u1", key=GLOBEX_KEY)] == [theirs]


def test_erase_user_removes_only_that_user(service: MemoryService) -> None:
    store("one")
    store("two")
    other = store("someone else's", user_id="u2")
    reply = call("DELETE", "/v1/users/{user_id}", path_params={"user_id": "u1"})
    assert reply.status == 200, reply.body
    assert reply.body["deleted"] == 2
    assert listed("u1") == []
    assert [m["memory_id"] for m in listed("u2")] == [other]


def test_erase_needs_a_key_that_writes_every_scope(service: MemoryService) -> None:
    store("one")
    reply = call("DELETE", "/v1/users/{user_id}", path_params={"user_id": "u1"}, key=CALENDAR_KEY)
    assert_error(reply, 403)
    assert len(listed("u1")) == 1


def test_erase_of_another_tenants_user_touches_nothing(service: MemoryService) -> None:
    store("globex data", key=GLOBEX_KEY)
    reply = call("DELETE", "/v1/users/{user_id}", path_params={"user_id": "u1"})
    assert reply.status == 200
    assert reply.body["deleted"] == 0
    assert len(listed("u1", key=GLOBEX_KEY)) == 1


def test_invalid_user_id_in_the_path_is_422(service: MemoryService) -> None:
    reply = call("DELETE", "/v1/users/{user_id}", path_params={"user_id": "bad id!"})
    assert_error(reply, 422, "user_id:")


def test_delete_without_a_key_is_401(service: MemoryService) -> None:
    kept = store("keep me")
    assert_error(delete(kept, key=None), 401)
    assert len(listed("u1")) == 1
