"""Retrieve reads only the records that can reach the page, and ranks exactly as if it read all.

The same data is searched twice: through an index that describes its hits (kind, time,
session: the bounded, lazy path) and through the same index with those facts stripped
(every candidate read first). Pages, scores and explanations must be identical.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.bootstrap import assemble, local_ports, rewire
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.embedding import embed_documents
from hindsight.core.indexing import index_document
from hindsight.core.models import (
    Confidence,
    FactStatus,
    Principal,
    SearchHit,
    SemanticMemory,
)
from hindsight.core.policy import Policy
from hindsight.core.service import MemoryService
from tests.fakes import FixedClock, HashingEmbedder, ScriptedReflector, SequentialIds

WORDS = [
    "peanut",
    "allergy",
    "hiking",
    "berlin",
    "coffee",
    "chess",
    "sushi",
    "piano",
    "garden",
    "tennis",
    "sister",
    "花生",
    "过敏",
    "爬山",
    "咖啡",
    "下围棋",
    "寿司",
]
TIMES = ["", "", "", " next week", " tomorrow", " last month", " 下周五", " 昨天"]
PRINCIPAL = Principal(tenant_id="acme")


class CountingRecords(InMemoryRecordStore):
    def __init__(self) -> None:
        super().__init__()
        self.read = 0

    def get_many(self, tenant_id, memory_ids):  # type: ignore[no-untyped-def]
        self.read += len(memory_ids)
        return super().get_many(tenant_id, memory_ids)


class FactlessIndex:
    """The same index, but its hits say nothing besides id and score."""

    def __init__(self, inner: InMemorySearchIndex) -> None:
        self.inner = inner

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)

    def vector_search(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return [SearchHit(h.memory_id, h.score) for h in self.inner.vector_search(*args, **kwargs)]

    def keyword_search(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return [SearchHit(h.memory_id, h.score) for h in self.inner.keyword_search(*args, **kwargs)]


@pytest.fixture(scope="module")
def services() -> tuple[MemoryService, MemoryService, CountingRecords]:
    rng = random.Random(5)
    clock = FixedClock()
    records = CountingRecords()
    index = InMemorySearchIndex()
    lazy = assemble(
        local_ports(
            records, index, HashingEmbedder(), ScriptedReflector(), clock=clock, ids=SequentialIds()
        ),
        # no recency floor: recency then moves scores a lot, so the bounds are put to work
        Policy(candidate_pool=60, decay_floor=0.0),
    )
    for n in range(400):
        words = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        lazy.store(
            PRINCIPAL,
            StoreMemoryCommand(
                user_id="u1",
                content=f"{words} {n}{rng.choice(TIMES)}",
                session_id=f"s{rng.randrange(40)}" if rng.random() < 0.8 else None,
                speaker=rng.choice(["Alice", "Bob Stone", None]),
                occurred_at=clock.now() - timedelta(days=rng.uniform(0, 400)),
            ),
        )
    facts = []
    for n in range(40):
        occurred = clock.now() - timedelta(days=rng.uniform(0, 200))
        facts.append(
            SemanticMemory(
                memory_id=f"fact{n:03d}",
                tenant_id="acme",
                user_id="u1",
                content=f"The user {' '.join(rng.sample(WORDS, 2))}",
                occurred_at=occurred,
                created_at=occurred,
                updated_at=occurred,
                confidence=rng.choice(list(Confidence)),
                status=FactStatus.APPROVED,
                topic=f"t{n}",
            )
        )
    for fact, vector in zip(
        facts, embed_documents(lazy.ports.embedder, [f.content for f in facts]), strict=True
    ):
        records.put(fact, vector)
        index.upsert([index_document(fact, vector)])
    eager = rewire(lazy, index=FactlessIndex(index))
    return lazy, eager, records


def page(service: MemoryService, command: RetrieveCommand) -> tuple[list, bool, str | None]:
    result = service.retrieve(PRINCIPAL, command)
    rows = [(r.memory_id, r.score, r.why) for r in result.results]
    return rows, result.has_more, result.next_cursor


@pytest.mark.parametrize("seed", range(30))
def test_lazy_reading_ranks_exactly_like_reading_every_candidate(services, seed) -> None:  # type: ignore[no-untyped-def]
    lazy, eager, _records = services
    rng = random.Random(seed)
    query = (
        rng.choice(["", "what did Alice say about ", "Bob Stone on "])
        + " ".join(rng.sample(WORDS, rng.randint(1, 3)))
        + rng.choice(["", " last week", " 上个月", " recently"])
    )
    command = RetrieveCommand(
        user_id="u1",
        query=query,
        top_k=rng.choice([1, 5, 10, 20]),
        time_decay=rng.choice([0.5, 0.95, 1.0]),
        kinds=rng.choice([None, ["episodic"], ["semantic"]]),
    )
    lazy_cursor = eager_cursor = None
    for _ in range(4):  # a few pages deep
        lazy_rows, lazy_more, lazy_cursor = page(
            lazy, command.model_copy(update={"cursor": lazy_cursor})
        )
        eager_rows, eager_more, eager_cursor = page(
            eager, command.model_copy(update={"cursor": eager_cursor})
        )
        assert lazy_rows == eager_rows
        assert lazy_more == eager_more
        if not lazy_more:
            break


def test_lazy_reading_reads_fewer_records(services) -> None:  # type: ignore[no-untyped-def]
    lazy, eager, records = services
    # the default recency floor (0.9) keeps score bounds tight: few records are read
    policy = Policy(candidate_pool=60)
    reads = {}
    for name, service in (("lazy", lazy), ("eager", eager)):
        service = rewire(service, policy)
        records.read = 0
        for query in ["peanut allergy", "hiking berlin coffee", "花生 过敏", "chess sister"]:
            service.retrieve(PRINCIPAL, RetrieveCommand(user_id="u1", query=query, top_k=5))
        reads[name] = records.read
    assert reads["lazy"] < reads["eager"] / 2
