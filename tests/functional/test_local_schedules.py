"""hindsight serve's own reflection schedule on the embedded store, with a fake clock."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.commands import ListMemoriesCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.service import MemoryService
from hindsight.server.runner import start_schedules
from hindsight.server.scheduler import LocalScheduler, scheduled_jobs
from hindsight.settings import Settings
from tests.fakes import FixedClock, HashingEmbedder, ScriptedReflector, SequentialIds

START = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


def embedded(data_dir: Path, clock: FixedClock, reflector: ScriptedReflector) -> MemoryService:
    """One server's service over the data directory (two calls: two servers, one file)."""
    ports = local_ports(
        SqliteRecordStore(data_dir / "hindsight.db"),
        EmbeddedSearchIndex(data_dir / f"index-{id(reflector)}"),
        HashingEmbedder(),
        reflector,
        clock=clock,
        ids=SequentialIds(),
    )
    return assemble(ports, Policy())


def store(service: MemoryService, tenant: str, user: str, content: str) -> None:
    command = StoreMemoryCommand(user_id=user, content=content)
    service.store(Principal(tenant_id=tenant), command)


def facts(service: MemoryService, tenant: str, user: str) -> list[str]:
    listed = service.list_memories(
        Principal(tenant_id=tenant), ListMemoriesCommand(user_id=user, kind="semantic")
    )
    return [fact["content"] for fact in listed.results]


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(START)


@pytest.fixture
def reflector() -> ScriptedReflector:
    return ScriptedReflector().when("peanuts", "The user is allergic to peanuts", "constraint")


def scheduler(service: MemoryService, **env: str) -> LocalScheduler:
    """The server's scheduler; the maintenance schedule off unless named (its own test)."""
    env.setdefault("maintenance_schedule", "off")
    settings = Settings.from_env({f"HINDSIGHT_{k.upper()}": v for k, v in env.items()})
    return LocalScheduler(service, scheduled_jobs(settings, service))


def test_the_nightly_run_reflects_every_user_with_new_episodes(
    tmp_path: Path, clock: FixedClock, reflector: ScriptedReflector
) -> None:
    service = embedded(tmp_path, clock, reflector)
    nightly = scheduler(service)
    assert [run.outcome for run in nightly.tick()] == ["first-seen"]  # a fresh data dir
    store(service, "acme", "u1", "I am allergic to peanuts")
    store(service, "globex", "u2", "peanuts make me ill")
    assert [run.outcome for run in nightly.tick()] == ["already-served"]  # 02:00 not yet
    assert facts(service, "acme", "u1") == []

    clock.advance(hours=17)  # 02:00 the next night
    [run] = nightly.tick()
    assert run.outcome == "ran"
    assert {k: run.counts[k] for k in ("users", "episodes", "facts_created")} == {
        "users": 2,
        "episodes": 2,
        "facts_created": 2,
    }
    assert facts(service, "acme", "u1") == ["The user is allergic to peanuts"]
    assert facts(service, "globex", "u2") == ["The user is allergic to peanuts"]

    clock.advance(hours=1)
    assert [r.outcome for r in nightly.tick()] == ["already-served"]
    clock.advance(days=1)  # nothing new since the fan-out's cursor: nobody reflected
    [quiet] = nightly.tick()
    assert (quiet.outcome, quiet.counts["users"]) == ("ran", 0)


def test_a_run_missed_while_the_server_was_down_runs_once_at_start(
    tmp_path: Path, clock: FixedClock, reflector: ScriptedReflector
) -> None:
    first = embedded(tmp_path, clock, reflector)
    scheduler(first).tick()
    store(first, "acme", "u1", "I am allergic to peanuts")
    clock.advance(days=3)  # the server was down for three nights
    restarted = embedded(tmp_path, clock, reflector)
    nightly = scheduler(restarted)
    runs = [run.outcome for run in nightly.tick()]
    assert runs == ["ran"]
    assert len(reflector.calls) == 1
    assert [run.outcome for run in nightly.tick()] == ["already-served"]


def test_two_servers_on_one_data_dir_run_the_schedule_once(
    tmp_path: Path, clock: FixedClock, reflector: ScriptedReflector
) -> None:
    entered, release = threading.Event(), threading.Event()
    slow = ScriptedReflector().when("peanuts", "The user is allergic to peanuts")
    original = slow.reflect

    def blocking(*args, **kwargs):  # type: ignore[no-untyped-def]
        entered.set()
        release.wait(10)
        return original(*args, **kwargs)

    slow.reflect = blocking  # type: ignore[method-assign]
    one, two = embedded(tmp_path, clock, slow), embedded(tmp_path, clock, reflector)
    scheduler(one).tick()
    store(one, "acme", "u1", "I am allergic to peanuts")
    clock.advance(days=1)
    outcomes: list[str] = []
    running = threading.Thread(
        target=lambda: outcomes.extend(r.outcome for r in scheduler(one).tick())
    )
    running.start()
    assert entered.wait(10)
    assert [r.outcome for r in scheduler(two).tick()] == ["running-elsewhere"]
    release.set()
    running.join(10)
    assert outcomes == ["ran"]
    assert [r.outcome for r in scheduler(two).tick()] == ["already-served"]
    assert reflector.calls == []  # the second server never reflected
    assert facts(two, "acme", "u1") == ["The user is allergic to peanuts"]


def test_a_busy_schedule_and_the_switches(
    tmp_path: Path, clock: FixedClock, reflector: ScriptedReflector
) -> None:
    service = embedded(tmp_path, clock, reflector)
    every_four = scheduler(service, reflection_schedule="rate(4 hours)")
    every_four.tick()
    store(service, "acme", "u1", "I am allergic to peanuts")
    clock.advance(hours=4)
    assert [r.outcome for r in every_four.tick()] == ["ran"]
    assert scheduler(service, schedules="off").jobs == []
    assert scheduler(service, reflection_schedule="off").jobs == []
    assert 0.5 <= every_four.seconds_to_next() <= 60


def test_the_background_thread_ticks_and_stops(
    tmp_path: Path, clock: FixedClock, reflector: ScriptedReflector
) -> None:
    service = embedded(tmp_path, clock, reflector)
    background = scheduler(service).start()
    try:
        for _ in range(200):  # the first tick records the schedule
            if service.last_scheduled_run("reflection") is not None:
                break
            threading.Event().wait(0.02)
        assert service.last_scheduled_run("reflection") == START.replace(hour=2)
    finally:
        background.stop()


def test_the_nightly_maintenance_archives_unused_episodes(
    tmp_path: Path, clock: FixedClock, reflector: ScriptedReflector
) -> None:
    service = embedded(tmp_path, clock, reflector)
    nightly = scheduler(
        service, reflection_schedule="off", maintenance_schedule="cron(0 3 * * ? *)"
    )
    nightly.tick()
    store(service, "acme", "u1", "the weather was fine")
    clock.advance(days=91)
    [run] = nightly.tick()
    assert (run.outcome, run.counts["archived"], run.counts["users"]) == ("ran", 1, 1)
    assert "records_pages" in run.counts and "ann_graphs_saved" in run.counts
    archived = service.list_memories(
        Principal(tenant_id="acme"), ListMemoriesCommand(user_id="u1", status="archived")
    ).results
    assert [m["content"] for m in archived] == ["the weather was fine"]


def test_the_aws_backend_leaves_the_schedules_to_eventbridge() -> None:
    assert start_schedules(Settings(backend="aws")) is None
