"""Per-user leases (``RecordStore.acquire_lease``/``release_lease``) on every record store:
of racing takers exactly one wins (in processes too: ``test_record_store_races.py``).

Reflection holds its user's lease while it runs, so that two reflections of one user never
both turn the same episodes into facts.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight.core.commands import ReflectCommand
from hindsight.core.errors import ConflictError
from hindsight.core.ports import RecordStore
from hindsight.core.service import MemoryService
from hindsight.core.usecases import reflect as reflect_module
from tests.concurrency.conftest import PRINCIPAL, race, store

NOW = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
LATER = NOW + timedelta(minutes=15)
ROOT = Path(__file__).resolve().parents[2]


def take(store: RecordStore, holder: str, user: str = "u1", now: datetime = NOW) -> bool:
    return store.acquire_lease("t1", user, "reflection", holder, now + timedelta(minutes=15), now)


def test_of_racing_takers_exactly_one_wins(record_store: RecordStore) -> None:
    for round_number in range(3):
        user = f"u{round_number}"
        won = race(*[lambda n=n, user=user: take(record_store, f"h{n}", user) for n in range(8)])
        assert won.count(True) == 1, won


def test_a_lease_is_held_until_released_or_expired(record_store: RecordStore) -> None:
    assert take(record_store, "first")
    assert take(record_store, "first")  # its holder extends it
    assert not take(record_store, "second")
    assert take(record_store, "second", user="u2")  # each user has their own
    record_store.release_lease("t1", "u1", "reflection", "second")  # not the holder: no effect
    assert not take(record_store, "second")
    assert take(record_store, "second", now=LATER)  # expired: anyone may take it
    assert not take(record_store, "first", now=LATER)
    record_store.release_lease("t1", "u1", "reflection", "second")
    assert take(record_store, "first", now=LATER)


def test_erasing_a_user_removes_their_lease(record_store: RecordStore) -> None:
    assert take(record_store, "first")
    record_store.erase_user("t1", "u1")
    assert take(record_store, "second")


def test_a_reflection_waits_for_a_running_one_then_answers_409(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reflect_module, "LEASE_WAIT_SECONDS", 0.3)
    store(service, "busy", "I keep a peanut-free kitchen")
    records, now = service.ports.records, service.ports.clock.now()
    until = now + timedelta(hours=1)
    assert records.acquire_lease("acme", "busy", "reflection", "elsewhere", until, now)
    with pytest.raises(ConflictError, match="already running"):
        service.reflect(PRINCIPAL, ReflectCommand(user_id="busy"))
    dry = service.reflect(PRINCIPAL, ReflectCommand(user_id="busy", dry_run=True))
    assert len(dry.created) == 1  # a dry run writes nothing and needs no lease
    records.release_lease("acme", "busy", "reflection", "elsewhere")
    assert len(service.reflect(PRINCIPAL, ReflectCommand(user_id="busy")).created) == 1
