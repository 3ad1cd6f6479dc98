"""Knowledge updates on every backend pair (in-memory, embedded SQLite, AWS DynamoDB +
OpenSearch): the newest state ranks first and the older says it was updated, a question
about the past gets the state of then, reflection supersedes with both sources linked and
validity intervals, ``as_of`` reads the facts valid then, ``current_only`` false shows the
replaced ones, and an additive update keeps both.

The backends are those of ``test_long_memories_contract`` (HashingEmbedder) with the
offline rule-based reflector.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.core.commands import (
    BatchItem,
    ListMemoriesCommand,
    ReflectCommand,
    RetrieveCommand,
    StoreBatchCommand,
)
from hindsight.core.models import MemoryKind, Principal
from hindsight.core.policy import Policy
from hindsight.core.results import ScoredMemory
from hindsight.core.service import MemoryService
from tests.contract.conftest import SERVICE_BACKENDS, service_on
from tests.fakes import HashingEmbedder

PRINCIPAL = Principal(tenant_id="t1")
JANUARY = datetime(2026, 1, 12, 9, tzinfo=UTC)
JUNE = datetime(2026, 6, 3, 9, tzinfo=UTC)
JULY = datetime(2026, 7, 1, 9, tzinfo=UTC)
MARCH = datetime(2026, 3, 1, 9, tzinfo=UTC)
# by relevance alone the old statement ranks first (it says "live" twice)
OLD = "I live in Beijing near the river, in a small flat where I live alone."
NEW = "I live in Shanghai now, near the river, in a small flat."
NOISE = [
    (datetime(2026, 1, 20, tzinfo=UTC), "The football match went to penalties."),
    (datetime(2026, 2, 14, tzinfo=UTC), "Can you remind me to buy milk tomorrow?"),
    (datetime(2026, 6, 10, tzinfo=UTC), "I baked banana bread with my niece."),
]


@pytest.fixture(params=SERVICE_BACKENDS)
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    with service_on(
        request.param,
        tmp_path,
        HashingEmbedder(),
        RuleBasedReflector(),
        Policy(auto_approve_high_confidence=False),
    ) as built:
        yield built


def store(service: MemoryService, items: list[tuple[datetime, str]]) -> list[str]:
    batch = [BatchItem(content=text, occurred_at=when) for when, text in items]
    outcomes = service.store_batch(PRINCIPAL, StoreBatchCommand(user_id="u1", items=batch))
    return [str(o.memory_id) for o in outcomes]


def moved(service: MemoryService) -> tuple[str, str]:
    """January: Beijing; June: Shanghai; noise around; returns (old id, new id)."""
    ids = store(service, [(JANUARY, OLD), (JUNE, NEW), *NOISE])
    return ids[0], ids[1]


def ask(service: MemoryService, query: str, **fields: object) -> list[ScoredMemory]:
    command = RetrieveCommand(user_id="u1", query=query, **fields)  # type: ignore[arg-type]
    return service.retrieve(PRINCIPAL, command).results


def ids_of(results: list[ScoredMemory]) -> list[str]:
    return [r.memory_id for r in results]


def test_the_newest_state_ranks_first_and_the_old_says_it_was_updated(
    service: MemoryService,
) -> None:
    old, new = moved(service)
    results = ask(service, "Where does the user live?", as_of=JULY, kinds=["episodic"])
    order = ids_of(results)
    assert order.index(new) < order.index(old)
    stale = results[order.index(old)]
    assert stale.updated_later and stale.superseded_by == new
    assert stale.why["updated_later"]["by"] == new
    current = results[order.index(new)]
    assert not current.updated_later and current.superseded_by is None


def test_a_question_about_the_past_gets_the_state_of_then(service: MemoryService) -> None:
    old, new = moved(service)
    results = ask(service, "Where did the user live in January?", as_of=JULY, kinds=["episodic"])
    order = ids_of(results)
    assert order.index(old) < order.index(new)
    assert not results[order.index(old)].updated_later  # nothing had replaced it in January
    before = ids_of(ask(service, "Where does the user live?", as_of=MARCH))
    assert old in before and new not in before  # the move had not happened yet


def test_current_only_false_keeps_the_relevance_order(service: MemoryService) -> None:
    old, new = moved(service)
    current = ask(service, "Where does the user live?", as_of=JULY, kinds=["episodic"])
    plain = ask(
        service, "Where does the user live?", as_of=JULY, kinds=["episodic"], current_only=False
    )
    by_score = sorted(plain, key=lambda r: -r.why["fused_score"])  # the ranking order
    assert ids_of(plain) == ids_of(by_score)
    assert ids_of(plain)[:2] == [old, new] and ids_of(current)[:2] == [new, old]
    assert set(ids_of(plain)) == set(ids_of(current))
    assert any(r.updated_later for r in plain)  # still marked


def facts(service: MemoryService) -> list[dict]:
    listed = service.list_memories(
        PRINCIPAL, ListMemoriesCommand(user_id="u1", kind=MemoryKind.SEMANTIC, limit=50)
    )
    return listed.results


def test_reflection_supersedes_the_old_state_with_both_sources_and_validity(
    service: MemoryService,
) -> None:
    old, new = moved(service)
    service.reflect(PRINCIPAL, ReflectCommand(user_id="u1"))
    states = {f["status"]: f for f in facts(service) if f["topic"] == "state:residence"}
    assert set(states) == {"pending", "superseded"}
    current, replaced = states["pending"], states["superseded"]
    assert "Shanghai" in current["content"] and "Beijing" in replaced["content"]
    assert current["source_memory_ids"] == [new] and replaced["source_memory_ids"] == [old]
    assert replaced["superseded_by"] == current["memory_id"]
    assert current["supersedes"] == [replaced["memory_id"]]
    live = [f for f in facts(service) if f["status"] in ("pending", "approved")]
    assert not any("Beijing" in f["content"] and "Shanghai" not in f["content"] for f in live)


def test_as_of_reads_the_fact_valid_then(service: MemoryService) -> None:
    moved(service)
    service.reflect(PRINCIPAL, ReflectCommand(user_id="u1"))
    states = {f["status"]: f for f in facts(service) if f["topic"] == "state:residence"}
    service.approve(PRINCIPAL, states["pending"]["memory_id"])
    query = "Where does the user live?"
    now = ask(service, query, kinds=["semantic"])
    assert [r.content for r in now] == [states["pending"]["content"]]
    then = ask(service, query, kinds=["semantic"], as_of=MARCH)
    assert [r.content for r in then] == [states["superseded"]["content"]]
    assert then[0].valid_from == JANUARY and then[0].valid_until == JUNE
    everything = ask(service, query, kinds=["semantic"], current_only=False)
    replaced = [r for r in everything if r.memory_id == states["superseded"]["memory_id"]]
    assert replaced and replaced[0].updated_later
    assert replaced[0].superseded_by == states["pending"]["memory_id"]
    assert replaced[0].why["updated_later"]["by"] == states["pending"]["memory_id"]
    assert replaced[0].why["updated_later"]["at"] == JUNE.isoformat()


def test_an_additive_update_keeps_both(service: MemoryService) -> None:
    store(
        service,
        [
            (JANUARY, "I have a cat called Luna."),
            (JUNE, "We adopted a second cat, Milo, so Luna has company."),
            *NOISE,
        ],
    )
    results = ask(service, "What pets does the user have?", as_of=JULY, kinds=["episodic"])
    assert not any(r.updated_later for r in results)
    service.reflect(PRINCIPAL, ReflectCommand(user_id="u1"))
    live = " ".join(f["content"] for f in facts(service) if f["status"] == "pending")
    assert "Luna" in live and "Milo" in live
