"""The rerank stage (core/retrieval/rerank.py) through the real retrieve use case, with scripted
rerankers: its order is its score, ``why`` names it, a slow, failing or nonsensical
reranker leaves the first-stage order standing, and without one nothing changes."""

from __future__ import annotations

import itertools
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindsight.bootstrap import rewire
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.ports import Reranker
from hindsight.core.retrieval.rerank import Reranking
from hindsight.core.service import MemoryService

TOPICS = [
    "the user drives a blue Toyota Corolla",
    "the user bought new running shoes",
    "the user is allergic to peanuts",
    "the user lives in Berlin near the park",
    "the user plays tennis on Sunday mornings",
    "the user's sister lives in Rome",
    "the user is learning French",
    "the user moved the desk closer to the window",
    "用户对花生过敏",
    "用户住在杭州",
    "用户在学法语",
    "the user's car needs new tyres before winter",
]


class ScriptedReranker:
    """A reranker whose relevance is a function of the text; it counts its calls."""

    def __init__(
        self,
        relevance: Callable[[str], float],
        delay: float = 0.0,
        error: Exception | None = None,
        answer: Callable[[int], list[float]] | None = None,
        warm_error: Exception | None = None,
    ) -> None:
        self.relevance = relevance
        self.delay = delay
        self.error = error
        self.answer = answer
        self.warm_error = warm_error
        self.calls: list[tuple[str, list[str]]] = []
        self.warmed = 0
        self.released = threading.Event()

    @property
    def label(self) -> str:
        return "scripted:test"

    def warm(self) -> None:
        self.warmed += 1
        if self.warm_error is not None:
            raise self.warm_error

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        self.calls.append((query, list(texts)))
        if self.delay:
            self.released.wait(self.delay)
        if self.error is not None:
            raise self.error
        if self.answer is not None:
            return self.answer(len(texts))
        return [self.relevance(text) for text in texts]


def _mentions(word: str) -> Callable[[str], float]:
    return lambda text: 1.0 if word in text else 0.1


def with_reranker(
    service: MemoryService, reranker: Reranker | None, top_n: int = 8, budget: float = 30.0
) -> MemoryService:
    policy = Policy(rerank_top_n=top_n, rerank_budget_seconds=budget)
    return rewire(service, policy, reranker=reranker)


def fill(service: MemoryService, principal: Principal, copies: int = 2) -> None:
    for copy in range(copies):
        for text in TOPICS:
            command = StoreMemoryCommand(user_id="u1", content=f"{text} ({copy})")
            service.store(principal, command)


def retrieve(service: MemoryService, principal: Principal, query: str, **fields: object):  # type: ignore[no-untyped-def]
    command = RetrieveCommand.model_validate({"user_id": "u1", "query": query, **fields})
    return service.retrieve(principal, command)


def scores(result) -> list[float]:  # type: ignore[no-untyped-def]
    return [r.score for r in result.results]


def non_increasing(values: list[float]) -> bool:
    return all(a >= b for a, b in itertools.pairwise(values))


def test_the_reranker_decides_the_order_of_the_top_n_and_the_rest_stays(
    service: MemoryService, principal: Principal
) -> None:
    fill(service, principal)
    first = retrieve(service, principal, "Toyota", min_score=0, top_k=20)
    reranker = ScriptedReranker(_mentions("花生"))
    reranking = with_reranker(service, reranker, top_n=8)
    reranked = retrieve(reranking, principal, "Toyota", min_score=0, top_k=20)
    top8 = {r.memory_id for r in first.results[:8]}
    assert {r.memory_id for r in reranked.results[:8]} == top8  # the same N, reordered
    assert [r.memory_id for r in reranked.results[8:]] == [r.memory_id for r in first.results[8:]]
    favoured = [r for r in first.results[:8] if "花生" in r.content]
    assert favoured and "花生" not in first.results[0].content  # the scenario: they move up
    assert all("花生" in r.content for r in reranked.results[: len(favoured)])
    assert non_increasing(scores(reranked))
    for result in reranked.results[:8]:
        part = result.why["rerank"]
        assert part["reranker"] == "scripted:test"
        assert result.why["score"] == result.score
        assert first.results[part["first_stage_rank"] - 1].memory_id == result.memory_id
    assert all("rerank" not in r.why for r in reranked.results[8:])
    assert reranker.warmed == 1 and len(reranker.calls) == 1
    query_seen, texts = reranker.calls[0]
    assert query_seen == "Toyota" and len(texts) == 8


def test_the_relevance_is_folded_between_the_best_score_and_the_best_after_the_n(
    service: MemoryService, principal: Principal
) -> None:
    fill(service, principal)
    first = retrieve(service, principal, "Toyota", min_score=0, top_k=12)
    # first-stage scores 0.90, 0.85, ... (the retrieve's here are all near 0)
    results = [
        r.model_copy(update={"score": round(0.9 - 0.05 * i, 6)})
        for i, r in enumerate(first.results)
    ]
    memories = service.ports.records.get_many("acme", [r.memory_id for r in results])
    by_id = {m.memory_id: m for m in memories}
    relevances = {r.memory_id: 0.1 * (i % 4) for i, r in enumerate(results)}
    reranker = ScriptedReranker(lambda text: 0.0)
    reranker.answer = lambda n: [relevances[r.memory_id] for r in results[:n]]
    rerank = Reranking(reranker, 5, 1.0, service.ports.clock)
    out = rerank("Toyota", results, [by_id[r.memory_id] for r in results])
    floor, ceiling = 0.65, 0.9  # the 6th's score, the best of the 5
    assert [r.memory_id for r in out[5:]] == [r.memory_id for r in results[5:]]
    for result in out[:5]:
        part = result.why["rerank"]
        expected = round(floor + (ceiling - floor) * relevances[result.memory_id], 6)
        assert result.score == expected and part["range"] == [floor, ceiling]
        assert part["change"] == pytest.approx(result.score - part["first_stage_score"], abs=2e-6)
    # relevances 0, .1, .2, .3, 0: the 4th first, the 1st and 5th (equal) in first-stage order
    assert [r.why["rerank"]["first_stage_rank"] for r in out[:5]] == [4, 3, 2, 1, 5]
    assert non_increasing(scores_of(out))


def scores_of(results: list) -> list[float]:  # type: ignore[type-arg]
    return [r.score for r in results]


def test_later_pages_continue_the_reranked_order_and_past_n_need_no_call(
    service: MemoryService, principal: Principal
) -> None:
    fill(service, principal)
    reranker = ScriptedReranker(_mentions("用户"))
    reranking = with_reranker(service, reranker, top_n=8)
    whole = retrieve(reranking, principal, "the user", min_score=0, top_k=20)
    pages, cursor = [], None
    for _ in range(4):
        page = retrieve(reranking, principal, "the user", min_score=0, top_k=5, cursor=cursor)
        pages.extend(page.results)
        cursor = page.next_cursor
    assert [r.memory_id for r in pages] == [r.memory_id for r in whole.results]
    assert non_increasing([r.score for r in pages])
    assert len(reranker.calls) == 1 + 2  # the whole, then the two pages holding the top 8


def test_without_a_reranker_nothing_changes(service: MemoryService, principal: Principal) -> None:
    fill(service, principal)
    plain = retrieve(service, principal, "peanut allergy", min_score=0)
    off = retrieve(with_reranker(service, None), principal, "peanut allergy", min_score=0)
    assert [(r.memory_id, r.score, r.why) for r in off.results] == [
        (r.memory_id, r.score, r.why) for r in plain.results
    ]


def test_a_slow_reranker_leaves_the_first_stage_order_within_the_budget(
    service: MemoryService, principal: Principal, caplog: pytest.LogCaptureFixture
) -> None:
    fill(service, principal)
    first = retrieve(service, principal, "tennis", min_score=0)
    slow = ScriptedReranker(_mentions("tyres"), delay=15.0)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="hindsight.core.retrieval.rerank"):
        result = retrieve(
            with_reranker(service, slow, budget=0.2), principal, "tennis", min_score=0
        )
    elapsed = time.monotonic() - started
    slow.released.set()
    assert elapsed < 5.0
    assert [(r.memory_id, r.score) for r in result.results] == [
        (r.memory_id, r.score) for r in first.results
    ]
    assert result.partial is False  # no result is missing: partial is the search's
    for r in result.results[:8]:
        assert r.why["rerank"] == {
            "reranker": "scripted:test",
            "skipped": "the reranker did not answer within 0.2 s",
        }
    assert "over budget" in caplog.text


@pytest.mark.parametrize(
    ("reranker", "reason"),
    [
        (ScriptedReranker(_mentions("x"), error=ConnectionError("refused")), "ConnectionError"),
        (ScriptedReranker(_mentions("x"), answer=lambda n: [0.5] * (n - 1)), "relevances for"),
        (ScriptedReranker(_mentions("x"), answer=lambda n: [1.5] * n), "outside [0, 1]"),
        (ScriptedReranker(_mentions("x"), answer=lambda n: [float("nan")] * n), "outside"),
        (ScriptedReranker(_mentions("x"), warm_error=OSError("no model at /m")), "no model"),
    ],
    ids=["raises", "too-few", "out-of-range", "nan", "cannot-load"],
)
def test_a_failing_or_nonsensical_reranker_never_fails_the_retrieve(
    service: MemoryService,
    principal: Principal,
    reranker: ScriptedReranker,
    reason: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fill(service, principal)
    first = retrieve(service, principal, "Berlin", min_score=0)
    with caplog.at_level(logging.WARNING, logger="hindsight.core.retrieval.rerank"):
        result = retrieve(with_reranker(service, reranker), principal, "Berlin", min_score=0)
    assert [(r.memory_id, r.score) for r in result.results] == [
        (r.memory_id, r.score) for r in first.results
    ]
    skipped = result.results[0].why["rerank"]["skipped"]
    assert skipped.startswith("the reranker failed") and reason in skipped
    assert "rerank failed" in caplog.text


def random_relevance(rng: random.Random) -> Callable[[str], float]:
    """A relevance drawn at random for each text, the same for it at every call."""
    drawn: dict[str, float] = {}
    return lambda text: drawn.setdefault(text, rng.random())


def test_scores_never_increase_down_a_page_or_across_pages_whatever_the_reranker_says(
    service: MemoryService, principal: Principal
) -> None:
    fill(service, principal, copies=3)
    rng = random.Random(40)
    queries = ["user", "peanuts", "杭州", "car tyres", "French", "sister Rome", "desk"]
    for trial in range(12):
        reranker = ScriptedReranker(random_relevance(rng))
        top_n = rng.choice([1, 3, 8, 20, 40])
        reranking = with_reranker(service, reranker, top_n=top_n)
        query = rng.choice(queries)
        seen: list[float] = []
        cursor = None
        for _ in range(6):
            page = retrieve(reranking, principal, query, min_score=0, top_k=7, cursor=cursor)
            seen.extend(scores(page))
            if not (cursor := page.next_cursor):
                break
        assert non_increasing(seen), (trial, query, top_n, seen)


def test_a_long_memory_is_read_by_the_chunk_it_was_found_by_with_its_speaker(
    service: MemoryService, principal: Principal
) -> None:
    filler = " ".join(f"word{i}" for i in range(900))
    service.store(
        principal,
        StoreMemoryCommand(
            user_id="u1", content=f"{filler} the zebra crossing at noon", speaker="Caroline"
        ),
    )
    reranker = ScriptedReranker(_mentions("zebra"))
    retrieve(with_reranker(service, reranker), principal, "zebra crossing", min_score=0)
    (text,) = reranker.calls[0][1]
    assert text.startswith("Caroline: ") and "zebra crossing" in text
    assert len(text) <= 2_000


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first_stage=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30),
    relevances=st.lists(st.floats(0.0, 1.0), min_size=30, max_size=30),
    top_n=st.integers(1, 35),
)
def test_folded_scores_never_increase_and_stay_between_floor_and_ceiling(
    service: MemoryService,
    principal: Principal,
    first_stage: list[float],
    relevances: list[float],
    top_n: int,
) -> None:
    """Over any first-stage scores (best first, as the first stage orders them) and any
    relevances: the reranked list is non-increasing, holds the same results, leaves those
    after the N as they were, and keeps every reranked score within [floor, ceiling]."""
    found = retrieve(service, principal, "the user", min_score=0, top_k=20)
    if not found.results:  # the first example fills the store the others read
        fill(service, principal, copies=3)
        found = retrieve(service, principal, "the user", min_score=0, top_k=20)
    pool = (found.results * 2)[: len(first_stage)]
    scores_in = sorted((round(s, 6) for s in first_stage), reverse=True)
    results = [r.model_copy(update={"score": s}) for r, s in zip(pool, scores_in, strict=True)]
    memories = service.ports.records.get_many("acme", [r.memory_id for r in results])
    by_id = {m.memory_id: m for m in memories}
    reranker = ScriptedReranker(lambda text: 0.0, answer=lambda n: relevances[:n])
    out = Reranking(reranker, top_n, 5.0, service.ports.clock)(
        "q", results, [by_id[r.memory_id] for r in results]
    )
    count = min(top_n, len(results))
    assert non_increasing(scores_of(out))
    assert [r.memory_id for r in out[count:]] == [r.memory_id for r in results[count:]]
    ceiling = max(scores_in[:count])
    floor = min(scores_in[count], ceiling) if count < len(results) else min(scores_in[:count])
    for result in out[:count]:
        assert floor - 1e-6 <= result.score <= ceiling + 1e-6
