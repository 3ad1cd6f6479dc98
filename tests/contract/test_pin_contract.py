"""Pinning a stored memory (PATCH /v1/memories/{id}) on every backend, with a fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import rewire
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import ForbiddenError, NotFoundError
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.service import MemoryService
from hindsight.core.usecases.pin import PatchMemoryCommand
from tests.contract.builders import T0
from tests.contract.conftest import SERVICE_BACKENDS, service_on
from tests.fakes import FixedClock, HashingEmbedder

OWNER = Principal(tenant_id="t1")
READER = Principal(tenant_id="t1", write_scopes=frozenset())
STRANGER = Principal(tenant_id="t2")
PIN = PatchMemoryCommand(pinned=True)
UNPIN = PatchMemoryCommand(pinned=False)


@pytest.fixture(params=SERVICE_BACKENDS)
def world(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[MemoryService, FixedClock]]:
    clock = FixedClock(T0)
    with service_on(
        request.param, tmp_path, HashingEmbedder(), RuleBasedReflector(), Policy()
    ) as built:
        yield rewire(built, clock=clock), clock


def store(service: MemoryService, content: str) -> str:
    outcome = service.store(OWNER, StoreMemoryCommand(user_id="u1", content=content))
    return str(outcome.memory_id)


def found(service: MemoryService, query: str) -> set[str]:
    result = service.retrieve(OWNER, RetrieveCommand(user_id="u1", query=query))
    return {r.memory_id for r in result.results}


def test_a_pinned_memory_is_kept_out_of_the_archive(
    world: tuple[MemoryService, FixedClock],
) -> None:
    service, clock = world
    kept = store(service, "the Lisbon passport office is on Rua Augusta")
    dropped = store(service, "the Lisbon hotel had a blue door")
    answer = service.patch_memory(OWNER, kept, PIN)
    assert answer["changed"] is True and answer["memory"]["pinned"] is True
    assert service.get_memory(OWNER, kept)["memory"]["pinned"] is True
    assert service.patch_memory(OWNER, kept, PIN)["changed"] is False

    clock.advance(days=91)
    assert service.maintain()["archived"] == 1
    assert service.get_memory(OWNER, dropped)["memory"]["archived_at"] is not None
    assert service.get_memory(OWNER, kept)["memory"]["archived_at"] is None
    assert kept in found(service, "Lisbon passport office")


def test_unpinned_it_is_archived_like_any_other(world: tuple[MemoryService, FixedClock]) -> None:
    service, clock = world
    memory_id = store(service, "the Lisbon passport office is on Rua Augusta")
    service.patch_memory(OWNER, memory_id, PIN)
    service.patch_memory(OWNER, memory_id, UNPIN)
    assert service.get_memory(OWNER, memory_id)["memory"]["pinned"] is False
    clock.advance(days=91)
    assert service.maintain()["archived"] == 1


def test_pinning_an_archived_memory_keeps_it_archived_and_out_of_search(
    world: tuple[MemoryService, FixedClock],
) -> None:
    service, clock = world
    memory_id = store(service, "the Lisbon hotel had a blue door")
    clock.advance(days=91)
    assert service.maintain()["archived"] == 1
    answer = service.patch_memory(OWNER, memory_id, PIN)
    assert answer["memory"]["pinned"] is True and answer["memory"]["archived_at"] is not None
    assert memory_id not in found(service, "Lisbon hotel blue door")
    service.restore_memory(OWNER, memory_id)
    clock.advance(days=200)
    assert service.maintain()["archived"] == 0  # pinned: never again


def test_only_a_writer_of_the_tenant_may_pin(world: tuple[MemoryService, FixedClock]) -> None:
    service, _ = world
    memory_id = store(service, "the Lisbon passport office is on Rua Augusta")
    with pytest.raises(NotFoundError):
        service.patch_memory(STRANGER, memory_id, PIN)
    with pytest.raises(ForbiddenError):
        service.patch_memory(READER, memory_id, PIN)
    with pytest.raises(NotFoundError):
        service.patch_memory(OWNER, "mem_absent", PIN)
    assert service.get_memory(OWNER, memory_id)["memory"]["pinned"] is False
