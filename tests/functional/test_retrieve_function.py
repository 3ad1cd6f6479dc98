"""Retrieval, context, listing, reading and health through the retrieve function."""

from __future__ import annotations

from hindsight.bootstrap import configure, get_settings, rewire
from hindsight.core.service import MemoryService
from tests.functional.conftest import (
    ADMIN_KEY,
    CALENDAR_KEY,
    GLOBEX_KEY,
    assert_error,
    call,
)


def store(content: str, user_id: str = "u1", key: str = ADMIN_KEY, **fields: str) -> str:
    reply = call(
        "POST", "/v1/memories", body={"user_id": user_id, "content": content, **fields}, key=key
    )
    assert reply.status == 201, reply.body
    return reply.body["memory_id"]


def retrieve(body: dict, key: str = ADMIN_KEY):  # type: ignore[no-untyped-def]
    return call("POST", "/v1/retrieve", body=body, key=key)


def test_retrieve_ranks_the_matching_memory_first(service: MemoryService) -> None:
    allergy = store("用户对花生过敏", category="constraint")
    store("今天天气很好")
    store("the meeting moved to Thursday")
    reply = retrieve({"user_id": "u1", "query": "花生过敏", "top_k": 3})
    assert reply.status == 200, reply.body
    body = reply.body
    assert body["status"] == "success"
    assert {"results", "has_more", "next_cursor", "partial"} <= set(body)
    assert body["partial"] is False
    first = body["results"][0]
    assert first["memory_id"] == allergy
    for field in (
        "kind",
        "content",
        "category",
        "scope",
        "occurred_at",
        "created_at",
        "metadata",
        "score",
        "why",
    ):
        assert field in first
    assert first["kind"] == "episodic"


def test_retrieve_validation_names_every_bad_field(service: MemoryService) -> None:
    message = assert_error(retrieve({"user_id": "u1", "top_k": 50}), 422)
    assert "query: field required" in message
    assert "top_k: must be ≤ 20" in message
    assert_error(retrieve({"user_id": "u1", "query": "x", "kinds": ["dream"]}), 422, "kinds[0]")
    assert_error(retrieve({"user_id": "u1", "query": "x", "time_decay": 0}), 422, "time_decay")


def test_retrieve_never_returns_another_tenants_memories(service: MemoryService) -> None:
    store("secret plans for the launch", key=GLOBEX_KEY)
    reply = retrieve({"user_id": "u1", "query": "secret plans for the launch"})
    assert reply.status == 200
    assert reply.body["results"] == []


def test_retrieve_of_a_scope_the_key_may_not_read_is_403(service: MemoryService) -> None:
    reply = retrieve({"user_id": "u1", "query": "anything", "scopes": ["work"]}, CALENDAR_KEY)
    assert_error(reply, 403, "work")


def test_context_returns_the_prompt_block(service: MemoryService) -> None:
    store("我想订周五晚上的餐厅", session_id="s1")
    reply = call(
        "POST",
        "/v1/context",
        body={"user_id": "u1", "session_id": "s1", "query": "餐厅", "budget_tokens": 500},
    )
    assert reply.status == 200, reply.body
    body = reply.body
    assert body["status"] == "success"
    for field in (
        "context",
        "tokens",
        "budget_tokens",
        "recent_turns",
        "summary",
        "facts",
        "truncated",
    ):
        assert field in body
    assert body["budget_tokens"] == 500
    assert body["tokens"] <= 500
    assert "餐厅" in body["context"]


def test_context_requires_a_session(service: MemoryService) -> None:
    assert_error(
        call("POST", "/v1/context", body={"user_id": "u1"}), 422, "session_id: field required"
    )


def test_list_pages_through_every_memory_once(service: MemoryService) -> None:
    stored = {store(f"note number {i}") for i in range(5)}
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        query = {"limit": "2"} | ({"cursor": cursor} if cursor else {})
        reply = call(
            "GET", "/v1/users/{user_id}/memories", path_params={"user_id": "u1"}, query=query
        )
        assert reply.status == 200, reply.body
        assert set(reply.body) == {"status", "results", "has_more", "next_cursor"}
        assert len(reply.body["results"]) <= 2
        seen += [m["memory_id"] for m in reply.body["results"]]
        pages += 1
        cursor = reply.body["next_cursor"]
        assert reply.body["has_more"] is (cursor is not None)
        if not cursor:
            break
    assert pages == 3
    assert sorted(seen) == sorted(stored)


def test_list_filters_and_bad_query_parameters(service: MemoryService) -> None:
    store("note about tea", category="preference")
    store("note about work")
    reply = call(
        "GET",
        "/v1/users/{user_id}/memories",
        path_params={"user_id": "u1"},
        query={"category": "preference"},
    )
    assert [m["content"] for m in reply.body["results"]] == ["note about tea"]
    reply = call(
        "GET",
        "/v1/users/{user_id}/memories",
        path_params={"user_id": "u1"},
        query={"limit": "lots", "colour": "red"},
    )
    message = assert_error(reply, 422, "limit: must be an integer")
    assert "colour: unknown field" in message
    reply = call(
        "GET", "/v1/users/{user_id}/memories", path_params={"user_id": "u1"}, query={"limit": "51"}
    )
    assert_error(reply, 422, "limit: must be ≤ 50")


def test_get_unknown_or_another_tenants_id_is_404(service: MemoryService) -> None:
    theirs = store("globex roadmap", key=GLOBEX_KEY)
    assert_error(
        call("GET", "/v1/memories/{memory_id}", path_params={"memory_id": "mem_nope"}),
        404,
        "mem_nope",
    )
    reply = call("GET", "/v1/memories/{memory_id}", path_params={"memory_id": theirs})
    assert_error(reply, 404)
    assert (
        call(
            "GET", "/v1/memories/{memory_id}", path_params={"memory_id": theirs}, key=GLOBEX_KEY
        ).status
        == 200
    )


def test_health_reports_the_model(service: MemoryService) -> None:
    reply = call("GET", "/v1/health")
    assert reply.status == 200
    assert reply.body["status"] == "success"
    assert reply.body["embedding_model"] == "test-hashing-64"
    assert reply.body["embedding_dimension"] == 64


def test_unknown_route_is_a_404_json_error(service: MemoryService) -> None:
    reply = call("GET", "/v1/nothing-here", function="retrieve")
    assert_error(reply, 404, "/v1/nothing-here")
    reply = call("POST", "/v1/memories", function="retrieve", body={})
    assert_error(reply, 404)


def test_unexpected_failure_is_a_generic_500(service: MemoryService) -> None:
    class BrokenIndex:
        def count(self, tenant_id: str | None = None) -> int:
            raise KeyError("internal detail /var/secret")

    configure(get_settings(), rewire(service, index=BrokenIndex()))
    message = assert_error(call("GET", "/v1/health"), 500)
    assert "secret" not in message
    assert "internal error" in message
