"""Unit-test fixtures: the real use cases on in-memory adapters and fakes, no network."""

from __future__ import annotations

import pytest

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService, Policy
from tests.fakes import FixedClock, HashingEmbedder, ScriptedReflector, SequentialIds


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def reflector() -> ScriptedReflector:
    return ScriptedReflector()


@pytest.fixture
def service(clock: FixedClock, reflector: ScriptedReflector) -> MemoryService:
    return MemoryService(
        records=InMemoryRecordStore(),
        index=InMemorySearchIndex(),
        embedder=HashingEmbedder(),
        reflector=reflector,
        clock=clock,
        ids=SequentialIds(),
        policy=Policy(),
    )


@pytest.fixture
def principal() -> Principal:
    return Principal(tenant_id="acme")


@pytest.fixture
def other_tenant() -> Principal:
    return Principal(tenant_id="globex")
