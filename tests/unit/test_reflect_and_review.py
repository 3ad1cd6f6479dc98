"""Reflect use case: cursor, merge (repeat / contradiction), review queue, dry runs."""

from __future__ import annotations

import pytest

from hindsight.bootstrap import rewire
from hindsight.core.commands import ListMemoriesCommand, ReflectCommand, StoreMemoryCommand
from hindsight.core.errors import ConflictError, NotFoundError, UnavailableError
from hindsight.core.policy import Policy


def store(service, principal, content, **fields):
    command = StoreMemoryCommand(**{"user_id": "u1", "content": content, **fields})
    return service.store(principal, command).memory_id


def reflect(service, principal, **fields):
    return service.reflect(principal, ReflectCommand(user_id="u1", **fields))


def facts(service, principal, status=None):
    return service.list_memories(
        principal, ListMemoriesCommand(user_id="u1", kind="semantic", status=status)
    ).results


def test_new_facts_are_pending_with_their_sources(service, principal, reflector):
    source = store(service, principal, "I am allergic to peanuts")
    store(service, principal, "nice weather today")
    reflector.when(
        "peanuts", "The user is allergic to peanuts", "constraint", "high", "allergy:peanut"
    )
    result = reflect(service, principal)
    assert result.episodes_considered == 2
    assert len(result.created) == 1
    fact = result.created[0]
    assert fact["status"] == "pending"
    assert fact["source_memory_ids"] == [source]
    assert fact["confidence"] == "high"
    assert fact["category"] == "constraint"
    assert fact["reflector"] == "scripted (test)"
    assert [f["memory_id"] for f in result.pending] == [fact["memory_id"]]


def test_cursor_means_each_episode_is_reflected_once(service, principal, reflector, clock):
    store(service, principal, "first")
    reflect(service, principal)
    assert reflect(service, principal).episodes_considered == 0
    clock.advance(seconds=1)
    store(service, principal, "second")
    assert reflect(service, principal).episodes_considered == 1
    assert reflector.calls[-1] and len(reflector.calls[-1]) == 1


def test_since_overrides_the_cursor(service, principal, clock):
    from datetime import timedelta

    store(service, principal, "first")
    reflect(service, principal)
    result = reflect(service, principal, since=clock.now() - timedelta(days=1))
    assert result.episodes_considered == 1


def test_a_repeat_raises_confidence_and_adds_sources(service, principal, reflector, clock):
    reflector.when("hiking", "The user loves hiking", "preference", "medium", "preference:hiking")
    first = store(service, principal, "I love hiking")
    created = reflect(service, principal).created[0]
    clock.advance(hours=3)
    second = store(service, principal, "hiking again this weekend, love it")
    result = reflect(service, principal)
    assert result.created == []
    assert len(result.updated) == 1
    updated = result.updated[0]
    assert updated["memory_id"] == created["memory_id"]
    assert updated["confidence"] == "high"
    assert updated["source_memory_ids"] == [first, second]
    assert updated["mention_count"] == 2


def approved_fact_then_its_contradiction(service, principal, reflector, clock):
    """An approved fact ("loves hiking"), then an episode that contradicts it; the fact."""
    reflector.when(
        "love hiking", "The user loves hiking", "preference", "medium", "preference:hiking"
    )
    store(service, principal, "I love hiking")
    old = reflect(service, principal).created[0]
    service.approve(principal, old["memory_id"])
    reflector.rules.clear()
    reflector.when(
        "no longer", "The user no longer likes hiking", "preference", "medium", "preference:hiking"
    )
    clock.advance(days=2)
    store(service, principal, "I no longer like hiking, my knees hurt")
    return old


def test_a_contradiction_supersedes_the_old_fact(service, principal, reflector, clock):
    old = approved_fact_then_its_contradiction(service, principal, reflector, clock)
    result = reflect(service, principal)
    new = result.created[0]
    assert new["supersedes"] == [old["memory_id"]]
    assert result.superseded[0]["memory_id"] == old["memory_id"]
    assert result.superseded[0]["superseded_by"] == new["memory_id"]
    kept = service.get_memory(principal, old["memory_id"])["memory"]
    assert kept["status"] == "superseded"
    with pytest.raises(ConflictError, match="superseded"):
        service.approve(principal, old["memory_id"])


def test_auto_approve_policy_approves_high_confidence_only(service, principal, reflector):
    service = rewire(service, Policy(auto_approve_high_confidence=True))
    reflector.when("peanuts", "Allergic to peanuts", "constraint", "high", "allergy:peanut")
    reflector.when("tea", "Likes tea", "preference", "medium", "preference:tea")
    store(service, principal, "I am allergic to peanuts and I like tea")
    statuses = {f["content"]: f["status"] for f in reflect(service, principal).created}
    assert statuses == {"Allergic to peanuts": "approved", "Likes tea": "pending"}


def test_dry_run_writes_nothing(service, principal, reflector):
    reflector.when("tea", "Likes tea", "preference", "medium", "preference:tea")
    store(service, principal, "I like tea")
    preview = reflect(service, principal, dry_run=True)
    assert len(preview.created) == 1
    assert facts(service, principal) == []
    assert len(reflect(service, principal).created) == 1


def test_reject_and_approve(service, principal, reflector):
    reflector.when("tea", "Likes tea", "preference", "medium", "preference:tea")
    store(service, principal, "I like tea")
    fact_id = reflect(service, principal).created[0]["memory_id"]
    assert service.reject(principal, fact_id)["memory"]["status"] == "rejected"
    assert [f["memory_id"] for f in facts(service, principal, status="rejected")] == [fact_id]
    assert service.approve(principal, fact_id)["memory"]["status"] == "approved"


def test_reviewing_an_episode_or_unknown_id_fails_clearly(
    service, principal, other_tenant, reflector
):
    episode = store(service, principal, "hello")
    with pytest.raises(ConflictError, match="episodic"):
        service.approve(principal, episode)
    with pytest.raises(NotFoundError):
        service.approve(principal, "fact_nope")
    reflector.when("tea", "Likes tea")
    store(service, principal, "tea please")
    fact_id = reflect(service, principal).created[0]["memory_id"]
    with pytest.raises(NotFoundError):
        service.approve(other_tenant, fact_id)


class IndexFailingAfter:
    """An index whose upserts fail once ``budget`` of them have gone through."""

    def __init__(self, inner, budget):  # type: ignore[no-untyped-def]
        self.inner = inner
        self.budget = budget

    def upsert(self, documents):  # type: ignore[no-untyped-def]
        from hindsight.core.errors import UnavailableError

        if self.budget <= 0:
            raise UnavailableError("the search index is down (test)")
        self.budget -= 1
        self.inner.upsert(documents)

    def __getattr__(self, name):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)


def test_a_failed_supersede_leaves_no_new_fact_beside_the_old(service, principal, reflector, clock):
    old = approved_fact_then_its_contradiction(service, principal, reflector, clock)
    # the new fact is indexed (one upsert), then superseding the old one fails
    failing = rewire(service, index=IndexFailingAfter(service.ports.index, budget=1))
    with pytest.raises(UnavailableError):
        reflect(failing, principal)
    assert [f["memory_id"] for f in facts(service, principal)] == [old["memory_id"]]
    assert facts(service, principal)[0]["status"] == "approved"
    # nothing moved the cursor: the next run supersedes as it should
    result = reflect(service, principal)
    assert result.superseded[0]["memory_id"] == old["memory_id"]
