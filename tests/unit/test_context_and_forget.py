"""Context (working memory) and forgetting."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hindsight.core.commands import (
    ContextCommand,
    ListMemoriesCommand,
    ReflectCommand,
    StoreMemoryCommand,
)
from hindsight.core.errors import ForbiddenError, NotFoundError
from hindsight.core.models import Principal
from hindsight.core.usecases.context import estimate_tokens


def store(service, principal, content, **fields):
    command = StoreMemoryCommand(**{"user_id": "u1", "content": content, **fields})
    return service.store(principal, command).memory_id


def session(service, principal, clock, turns):
    start = clock.now() - timedelta(hours=1)
    for i, text in enumerate(turns):
        store(
            service,
            principal,
            text,
            session_id="s1",
            speaker="user",
            occurred_at=start + timedelta(minutes=i),
        )


def test_context_has_recent_turns_summary_and_approved_facts(service, principal, clock, reflector):
    store(service, principal, "I am allergic to peanuts", session_id="old")
    reflector.when(
        "peanuts", "The user is allergic to peanuts", "constraint", "high", "allergy:peanut"
    )
    fact_id = service.reflect(principal, ReflectCommand(user_id="u1")).created[0]["memory_id"]
    service.approve(principal, fact_id)
    session(service, principal, clock, [f"turn {i} about the Beijing trip" for i in range(8)])
    result = service.context(principal, ContextCommand(user_id="u1", session_id="s1"))
    assert [t["content"] for t in result.recent_turns] == [
        f"turn {i} about the Beijing trip" for i in range(3, 8)
    ]
    assert result.summary["intent"] == "summary of 3 turns"
    assert [f["memory_id"] for f in result.facts] == [fact_id]
    text = result.context
    assert (
        text.index("allergic to peanuts") < text.index("summary of 3 turns") < text.index("turn 7")
    )
    assert "turn 2 about" not in text  # older turns only appear summarised
    assert result.tokens <= result.budget_tokens
    assert result.truncated is False


def test_pending_facts_stay_out_of_context(service, principal, clock, reflector):
    store(service, principal, "I like tea", session_id="s1")
    reflector.when("tea", "Likes tea")
    service.reflect(principal, ReflectCommand(user_id="u1"))
    result = service.context(principal, ContextCommand(user_id="u1", session_id="s1"))
    assert result.facts == []


def test_context_respects_a_small_budget(service, principal, clock):
    session(service, principal, clock, ["a long turn " * 40 for _ in range(6)])
    result = service.context(
        principal, ContextCommand(user_id="u1", session_id="s1", budget_tokens=100)
    )
    assert result.truncated is True
    assert estimate_tokens(result.context) <= 100
    assert result.recent_turns, "the newest turn should still be there"


def test_token_estimate_counts_chinese_characters():
    assert estimate_tokens("用户对花生过敏") == 7
    assert 4 <= estimate_tokens("the user is allergic") <= 6


def test_forgetting_an_episode_removes_facts_that_only_it_supported(service, principal, reflector):
    only = store(service, principal, "I like tea")
    a = store(service, principal, "I like jazz")
    b = store(service, principal, "jazz again tonight")
    reflector.when("tea", "Likes tea", topic="preference:tea")
    reflector.when("jazz", "Likes jazz", topic="preference:jazz")
    created = {
        f["content"]: f for f in service.reflect(principal, ReflectCommand(user_id="u1")).created
    }
    result = service.delete_memory(principal, only)
    assert result["deleted_facts"] == [created["Likes tea"]["memory_id"]]
    with pytest.raises(NotFoundError):
        service.get_memory(principal, only)
    service.delete_memory(principal, a)
    jazz = service.get_memory(principal, created["Likes jazz"]["memory_id"])["memory"]
    assert jazz["source_memory_ids"] == [b]


def test_another_tenant_cannot_delete(service, principal, other_tenant):
    memory_id = store(service, principal, "mine")
    with pytest.raises(NotFoundError):
        service.delete_memory(other_tenant, memory_id)
    assert service.get_memory(principal, memory_id)["memory"]["content"] == "mine"


def test_erase_user_removes_only_that_user(service, principal):
    store(service, principal, "u1 memory")
    store(service, principal, "u2 memory", user_id="u2")
    assert service.erase_user(principal, "u1")["deleted"] == 1
    assert service.list_memories(principal, ListMemoriesCommand(user_id="u1")).results == []
    assert len(service.list_memories(principal, ListMemoriesCommand(user_id="u2")).results) == 1
    limited = Principal(tenant_id="acme", write_scopes=frozenset({"calendar"}))
    with pytest.raises(ForbiddenError):
        service.erase_user(limited, "u2")
