"""A retrieve's index searches side by side (``Policy.parallel_searches``,
core/retrieval/parallel.py).

Side by side, the keyword search runs while the query is embedded and the two vector
searches (centred and plain) are in flight at once; the results are exactly those of the
searches one by one. The overlap is shown by searches that wait for each other: run one
by one they would wait in vain (a short timeout), so each test fails without the overlap.
"""

from __future__ import annotations

import contextvars
import random
import threading
from typing import Any

import pytest

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.bootstrap import assemble, local_ports, rewire
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import UnavailableError
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.retrieval.parallel import started
from hindsight.core.service import MemoryService
from tests.fakes import FixedClock, HashingEmbedder, ScriptedReflector, SequentialIds

PRINCIPAL = Principal(tenant_id="acme")
WAIT = 5.0  # seconds a search waits for the other side: long enough on a busy machine
ALONE = 0.3  # ... and run one by one, how long before it gives up (the test then fails)
WORDS = ["peanut", "allergy", "hiking", "berlin", "coffee", "chess", "花生", "过敏", "爬山"]
QUERIES = ["peanut allergy", "what do I drink", "爬山 berlin", "chess", "过敏"]


class MeetingIndex:
    """An index whose vector searches wait for each other (a barrier of two)."""

    def __init__(self, inner: InMemorySearchIndex, timeout: float) -> None:
        self.inner = inner
        self.barrier = threading.Barrier(2, timeout=timeout)
        self.met = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def vector_search(self, *args: Any) -> Any:
        try:
            self.barrier.wait()
            self.met += 1
        except threading.BrokenBarrierError:
            self.barrier.reset()
        return self.inner.vector_search(*args)


class WaitingKeywords:
    """An index whose keyword search waits until the query is being embedded."""

    def __init__(self, inner: InMemorySearchIndex, embedding: threading.Event, timeout: float):
        self.inner, self.embedding, self.timeout = inner, embedding, timeout
        self.saw_embedding: list[bool] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def keyword_search(self, *args: Any) -> Any:
        self.saw_embedding.append(self.embedding.wait(self.timeout))
        return self.inner.keyword_search(*args)


class SignallingEmbedder(HashingEmbedder):
    """Says when it starts embedding a query (and waits a little, as a model does)."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = threading.Event()

    def embed_query(self, text: str) -> Any:
        self.embedding.set()
        return super().embed_query(text)


def service(parallel: bool, embedder: HashingEmbedder | None = None) -> MemoryService:
    rng = random.Random(3)
    built = assemble(
        local_ports(
            InMemoryRecordStore(),
            InMemorySearchIndex(),
            embedder or HashingEmbedder(),
            ScriptedReflector(),
            clock=FixedClock(),
            ids=SequentialIds(),
        ),
        Policy(parallel_searches=parallel),
    )
    for n in range(60):
        words = " ".join(rng.sample(WORDS, rng.randint(1, 3)))
        command = StoreMemoryCommand(user_id="u1", content=f"{words} {n}", session_id=f"s{n % 7}")
        built.store(PRINCIPAL, command)
    return built


def test_started_side_by_side_runs_on_another_thread_and_gives_its_result() -> None:
    pending = started(True, lambda a, b: (threading.get_ident(), a + b), 2, 3)
    ident, total = pending()
    assert total == 5
    assert ident != threading.get_ident()


def test_started_one_by_one_runs_here_before_its_result_is_asked() -> None:
    calls: list[int] = []
    pending = started(False, lambda: calls.append(threading.get_ident()) or 7)
    assert calls == [threading.get_ident()]
    assert pending() == 7


def test_started_raises_what_the_search_raised_when_its_result_is_asked() -> None:
    def down() -> None:
        raise UnavailableError("the search index is unavailable")

    pending = started(True, down)
    with pytest.raises(UnavailableError, match="unavailable"):
        pending()


REQUEST = contextvars.ContextVar[str]("request", default="none")


def test_started_runs_in_the_callers_context() -> None:
    def in_request() -> str:
        REQUEST.set("req-1")
        return started(True, REQUEST.get)()

    assert contextvars.copy_context().run(in_request) == "req-1"


@pytest.mark.parametrize("query", QUERIES)
def test_side_by_side_ranks_exactly_as_one_by_one(query: str) -> None:
    one_by_one = service(parallel=False)
    side_by_side = rewire(one_by_one, policy=Policy(parallel_searches=True))
    command = RetrieveCommand(user_id="u1", query=query, top_k=10)
    expected = one_by_one.retrieve(PRINCIPAL, command)
    got = side_by_side.retrieve(PRINCIPAL, command)
    assert [(r.memory_id, r.score, r.why) for r in got.results] == [
        (r.memory_id, r.score, r.why) for r in expected.results
    ]
    assert expected.results
    assert got.partial is expected.partial is False


@pytest.mark.parametrize(("parallel", "met"), [(True, 2), (False, 0)])
def test_the_two_vector_searches_are_in_flight_at_once(parallel: bool, met: int) -> None:
    built = service(parallel)
    meeting = MeetingIndex(built.ports.index, WAIT if parallel else ALONE)  # type: ignore[arg-type]
    result = rewire(built, index=meeting).retrieve(
        PRINCIPAL, RetrieveCommand(user_id="u1", query="peanut allergy")
    )
    assert meeting.met == met
    assert result.results


@pytest.mark.parametrize("parallel", [True, False])
def test_the_keyword_search_runs_while_the_query_is_embedded(parallel: bool) -> None:
    embedder = SignallingEmbedder()
    built = service(parallel, embedder)
    embedder.embedding.clear()  # storing embedded documents, not queries
    index = WaitingKeywords(built.ports.index, embedder.embedding, WAIT if parallel else ALONE)  # type: ignore[arg-type]
    result = rewire(built, index=index).retrieve(
        PRINCIPAL, RetrieveCommand(user_id="u1", query="berlin coffee")
    )
    assert index.saw_embedding == [parallel]
    assert result.results


@pytest.mark.parametrize(
    ("env", "parallel"),
    [
        ({}, False),  # one process: a search holds the interpreter, nothing to gain
        ({"HINDSIGHT_BACKEND": "aws"}, True),  # each search a round trip to OpenSearch
        ({"HINDSIGHT_BACKEND": "aws", "HINDSIGHT_PARALLEL_SEARCHES": "false"}, False),
        ({"HINDSIGHT_PARALLEL_SEARCHES": "true"}, True),
    ],
)
def test_the_searches_run_side_by_side_by_default_where_each_is_a_round_trip(
    env: dict[str, str], parallel: bool
) -> None:
    from hindsight.bootstrap import policy_from
    from hindsight.settings import Settings

    assert policy_from(Settings.from_env(env)).parallel_searches is parallel


def test_a_wrong_value_says_what_the_setting_takes() -> None:
    from hindsight.core.errors import ConfigurationError
    from hindsight.settings import Settings

    with pytest.raises(ConfigurationError, match=r"PARALLEL_SEARCHES.*set it to true or false"):
        Settings.from_env({"HINDSIGHT_PARALLEL_SEARCHES": "maybe"})
