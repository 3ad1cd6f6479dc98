"""functions/maintain: the scheduled archive pass, one run at a time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from hindsight.bootstrap import build_memory_service, configure, rewire
from hindsight.core.commands import ListMemoriesCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import FixedClock, HashingEmbedder
from tests.functional.conftest import KEYS, LambdaContextStub, _reflector, load_function

SCHEDULE_EVENT = {
    "source": "hindsight.scheduler",
    "detail-type": "Scheduled maintenance",
    "scheduled_time": "2026-04-06T03:00:00Z",
    "execution_id": "exec-1",
}


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))


@pytest.fixture
def service(clock: FixedClock) -> Iterator[MemoryService]:
    settings = Settings(backend="memory", api_keys=json.dumps(KEYS))
    built = build_memory_service(settings, embedder=HashingEmbedder(), reflector=_reflector())
    service = rewire(built, clock=clock)
    configure(settings, service)
    yield service
    configure()


def test_the_schedule_archives_unused_episodes(service: MemoryService, clock: FixedClock) -> None:
    owner = Principal(tenant_id="acme")
    service.store(owner, StoreMemoryCommand(user_id="u1", content="an old remark"))
    service.store(owner, StoreMemoryCommand(user_id="u1", content="keep me", pinned=True))
    clock.advance(days=91)
    handler = load_function("maintain")
    answer = handler(SCHEDULE_EVENT, LambdaContextStub("maintain-function"))
    assert answer["status"] == "success"
    assert (answer["outcome"], answer["archived"], answer["users"]) == ("ran", 1, 1)
    archived = service.list_memories(
        owner, ListMemoriesCommand(user_id="u1", status="archived")
    ).results
    assert [m["content"] for m in archived] == ["an old remark"]
    again = handler(SCHEDULE_EVENT, LambdaContextStub("maintain-function"))
    assert (again["outcome"], again["archived"]) == ("ran", 0)


def test_a_run_still_going_makes_a_retry_do_nothing(service: MemoryService) -> None:
    handler = load_function("maintain")
    nested: list[dict] = []

    def busy(renew):  # type: ignore[no-untyped-def]
        nested.append(handler(SCHEDULE_EVENT, LambdaContextStub("maintain-function")))
        return {}

    service.run_exclusive("maintenance", busy)
    assert nested[0]["outcome"] == "running-elsewhere"


class _TableMadeBefore:
    """A record store with an older layout to upgrade (DynamoDB's): counts the runs."""

    def __init__(self, records) -> None:  # type: ignore[no-untyped-def]
        self._records = records
        self.budgets: list[bool] = []

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._records, name)

    def upgrade(self) -> dict[str, int]:  # the maintenance run's share (Upgradable)
        self.budgets.append(True)
        return {"facts_indexed": 7}


def test_the_schedule_brings_a_table_made_before_the_facts_index_in_step(
    service: MemoryService,
) -> None:
    records = _TableMadeBefore(service.ports.records)
    settings = Settings(backend="memory", api_keys=json.dumps(KEYS))
    configure(settings, rewire(service, records=records))
    answer = load_function("maintain")(SCHEDULE_EVENT, LambdaContextStub("maintain-function"))
    assert (answer["outcome"], answer["facts_indexed"]) == ("ran", 7)
    assert records.budgets == [True]  # once a run
