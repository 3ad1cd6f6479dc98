"""The service with HINDSIGHT_REFLECTOR=learned-e5 and the real bundled embedder: reflection's
promises (pending review, source ids, dry run, cursor, merge of repeats) hold with the
learned reflector as with the rule-based one."""

from __future__ import annotations

import pytest

from hindsight.bootstrap import build_memory_service
from hindsight.core.commands import ListMemoriesCommand, ReflectCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from hindsight.settings import Settings

PRINCIPAL = Principal(tenant_id="acme")


@pytest.fixture(scope="module")
def service() -> MemoryService:
    return build_memory_service(Settings(reflector="learned-e5", embedder="e5"))


def store(service: MemoryService, user: str, content: str) -> str:
    command = StoreMemoryCommand(user_id=user, content=content, speaker="user")
    return service.store(PRINCIPAL, command).memory_id


def test_reflection_with_the_learned_reflector(service: MemoryService) -> None:
    user = "learned-1"
    nurse = store(service, user, "Yeah, I'm a nurse at the children's hospital.")
    store(service, user, "Do you like pizza?")
    cat = store(service, user, "我养了一只猫，叫馒头。")

    dry = service.reflect(PRINCIPAL, ReflectCommand(user_id=user, dry_run=True))
    assert dry.created and all(f["status"] == "pending" for f in dry.created)
    listed = service.list_memories(PRINCIPAL, ListMemoriesCommand(user_id=user, kind="semantic"))
    assert listed.results == []  # a dry run stores nothing

    result = service.reflect(PRINCIPAL, ReflectCommand(user_id=user))
    assert result.episodes_considered == 3
    by_source = {tuple(f["source_memory_ids"]): f for f in result.created}
    assert "nurse" in by_source[(nurse,)]["content"]
    assert "猫" in by_source[(cat,)]["content"]
    assert all(
        f["reflector"] == "learned over e5 vectors (offline, no LLM)" for f in result.created
    )
    assert all(f["status"] == "pending" for f in result.created)
    assert service.reflect(PRINCIPAL, ReflectCommand(user_id=user)).episodes_considered == 0


@pytest.mark.parametrize(
    ("said", "again"),
    [
        ("I'm allergic to peanuts.", "Honestly, I am allergic to peanuts!"),  # a rule's topic
        ("I volunteer at the animal shelter.", "Oh, I volunteer at the animal shelter."),
    ],
)
def test_a_repeat_adds_its_source_to_the_same_fact(
    service: MemoryService, said: str, again: str
) -> None:
    user = f"learned-repeat-{len(said)}"
    first = store(service, user, said)
    (created,) = service.reflect(PRINCIPAL, ReflectCommand(user_id=user)).created
    second = store(service, user, again)
    result = service.reflect(PRINCIPAL, ReflectCommand(user_id=user))
    assert result.created == []
    (updated,) = result.updated
    assert updated["memory_id"] == created["memory_id"]
    assert updated["source_memory_ids"] == [first, second]
    assert updated["mention_count"] == 2
