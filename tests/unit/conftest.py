"""Unit-test fixtures: the real use cases on in-memory adapters and fakes, no network."""

from __future__ import annotations

import pytest

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.service import MemoryService
from tests.fakes import FixedClock, HashingEmbedder, ScriptedReflector, SequentialIds


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def reflector() -> ScriptedReflector:
    return ScriptedReflector()


@pytest.fixture
def service(clock: FixedClock, reflector: ScriptedReflector) -> MemoryService:
    ports = local_ports(
        InMemoryRecordStore(),
        InMemorySearchIndex(),
        HashingEmbedder(),
        reflector,
        clock=clock,
        ids=SequentialIds(),
    )
    return assemble(ports, Policy())


@pytest.fixture
def principal() -> Principal:
    return Principal(tenant_id="acme")


@pytest.fixture
def other_tenant() -> Principal:
    return Principal(tenant_id="globex")
