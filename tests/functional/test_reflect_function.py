"""Reflection and the review queue through the reflect function."""

from __future__ import annotations

from datetime import UTC, datetime

from hindsight.core.embedding import embed_documents
from hindsight.core.indexing import index_document
from hindsight.core.models import FactStatus, SemanticMemory
from hindsight.core.service import MemoryService
from tests.functional.conftest import ADMIN_KEY, GLOBEX_KEY, READONLY_KEY, assert_error, call


def store(content: str, key: str = ADMIN_KEY) -> str:
    reply = call("POST", "/v1/memories", body={"user_id": "u1", "content": content}, key=key)
    assert reply.status == 201, reply.body
    return reply.body["memory_id"]


def seed_fact(service: MemoryService, content: str, tenant: str = "acme") -> str:
    """A pending semantic memory written straight into the store and index."""
    now = datetime.now(UTC)
    fact = SemanticMemory(
        memory_id=service.ports.ids.new_id("sem"),
        tenant_id=tenant,
        user_id="u1",
        content=content,
        category="constraint",
        occurred_at=now,
        created_at=now,
        updated_at=now,
        status=FactStatus.PENDING,
        topic=content,
    )
    vector = embed_documents(service.ports.embedder, [content])[0]
    service.ports.records.put(fact, vector)
    service.ports.index.upsert([index_document(fact, vector)])
    return fact.memory_id


def semantic(key: str = ADMIN_KEY) -> list[dict]:
    reply = call(
        "GET",
        "/v1/users/{user_id}/memories",
        path_params={"user_id": "u1"},
        query={"kind": "semantic"},
        key=key,
    )
    assert reply.status == 200, reply.body
    return reply.body["results"]


def test_reflect_then_approve_puts_the_fact_first(service: MemoryService) -> None:
    store("我对花生过敏，吃了会起疹子")
    store("I am allergic to peanuts")
    store("今天天气不错")
    reply = call("POST", "/v1/reflect", body={"user_id": "u1"})
    assert reply.status == 200, reply.body
    body = reply.body
    assert body["status"] == "success"
    for field in (
        "reflector",
        "episodes_considered",
        "created",
        "updated",
        "superseded",
        "pending",
        "dry_run",
        "cursor",
    ):
        assert field in body
    assert body["episodes_considered"] == 3
    assert body["pending"], body
    fact_id = body["pending"][0]["memory_id"]
    approved = call("POST", "/v1/semantic/{memory_id}/approve", path_params={"memory_id": fact_id})
    assert approved.status == 200, approved.body
    assert approved.body["status"] == "success"
    assert approved.body["memory"]["status"] == "approved"
    found = call(
        "POST", "/v1/retrieve", body={"user_id": "u1", "query": "is the user allergic to anything?"}
    )
    assert found.body["results"][0]["memory_id"] == fact_id
    assert found.body["results"][0]["kind"] == "semantic"


def test_dry_run_writes_nothing(service: MemoryService) -> None:
    store("I am allergic to peanuts")
    reply = call("POST", "/v1/reflect", body={"user_id": "u1", "dry_run": True})
    assert reply.status == 200, reply.body
    assert reply.body["dry_run"] is True
    assert semantic() == []


def test_reject_a_pending_fact(service: MemoryService) -> None:
    fact_id = seed_fact(service, "用户不吃辣")
    reply = call("POST", "/v1/semantic/{memory_id}/reject", path_params={"memory_id": fact_id})
    assert reply.status == 200, reply.body
    assert reply.body["memory"]["status"] == "rejected"


def test_review_of_unknown_or_foreign_or_episodic_ids(service: MemoryService) -> None:
    theirs = seed_fact(service, "globex fact", tenant="globex")
    episode = store("just an episode")
    assert_error(
        call("POST", "/v1/semantic/{memory_id}/approve", path_params={"memory_id": "sem_missing"}),
        404,
        "sem_missing",
    )
    assert_error(
        call("POST", "/v1/semantic/{memory_id}/approve", path_params={"memory_id": theirs}), 404
    )
    assert service.ports.records.get("globex", theirs).status == FactStatus.PENDING  # type: ignore[union-attr]
    assert_error(
        call("POST", "/v1/semantic/{memory_id}/approve", path_params={"memory_id": episode}),
        409,
        "episodic",
    )
    reply = call(
        "POST",
        "/v1/semantic/{memory_id}/approve",
        path_params={"memory_id": theirs},
        key=GLOBEX_KEY,
    )
    assert reply.status == 200


def test_read_only_key_may_not_approve(service: MemoryService) -> None:
    fact_id = seed_fact(service, "用户住在上海")
    reply = call(
        "POST",
        "/v1/semantic/{memory_id}/approve",
        path_params={"memory_id": fact_id},
        key=READONLY_KEY,
    )
    assert_error(reply, 403)
    assert semantic()[0]["status"] == "pending"


def test_reflect_validation(service: MemoryService) -> None:
    assert_error(
        call("POST", "/v1/reflect", body={"user_id": "u1", "dry_run": "maybe"}),
        422,
        "dry_run: must be true or false",
    )
    assert_error(call("POST", "/v1/reflect", body={}), 422, "user_id: field required")
    assert semantic() == []
