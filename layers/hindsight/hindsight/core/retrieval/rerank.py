"""Rerank: the optional second stage of retrieve, a model reading the query with each memory.

The first stage (``core/retrieval/ranking.py``) scores every candidate from its similarity, keyword
evidence and the factors of ``why``. When a reranker is configured (``HINDSIGHT_RERANKER``,
the ``Reranker`` port), its top N results are given to the reranker with the query; each
gets a relevance in [0, 1], and its score becomes

    score = floor + (ceiling - floor) × relevance

where ``ceiling`` is the best first-stage score of the N and ``floor`` the best score
after them (the lowest of the N when nothing follows). The N are ordered by that score:
the reranker decides their order, while every reranked result stays at or above every
result it did not read, and at or below the best first-stage score, so the order is the
score across the whole ranking and a page's ``min_score`` cut means what it meant. ``why``
keeps the first-stage score and names the reranker, its relevance and the change.

The reranker runs within its own time budget (``Policy.rerank_budget_seconds``), on a small
thread pool. When it does not answer in time, fails, or answers something unusable, the
first-stage order and scores stand, each of the N says why in ``why["rerank"]``, and the
failure is logged; the retrieve never fails for it. ``partial`` keeps its meaning (the
search ran out of time and results may be missing): a skipped rerank loses no result.
"""

from __future__ import annotations

import contextvars
import logging
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from hindsight.core.models import Memory
from hindsight.core.policy import Policy
from hindsight.core.ports import Clock, Reranker
from hindsight.core.results import ScoredMemory
from hindsight.core.retrieval.ranking import SCORE_DIGITS

logger = logging.getLogger(__name__)

# what a reranker reads of one memory: its speaker and content, a long memory's the chunk
# it was found by; cross-encoders read about 512 tokens, and an LLM's prompt holds N of them
TEXT_CHARS = 2_000
_Row = TypeVar("_Row")
# reranks that wait on a slow model keep a thread until the model's own timeout; a few
# retrieves at once each have one
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hindsight-rerank")


@dataclass(frozen=True)
class Reranking:
    """The second stage: ``reranker`` over the first stage's ``top_n``, within a budget."""

    reranker: Reranker
    top_n: int
    budget_seconds: float
    clock: Clock

    @classmethod
    def of(cls, reranker: Reranker | None, policy: Policy, clock: Clock) -> Reranking | None:
        """The stage with the policy's N and budget; None without a reranker."""
        if reranker is None:
            return None
        return cls(reranker, policy.rerank_top_n, policy.rerank_budget_seconds, clock)

    @property
    def reads(self) -> int:
        """How many first-stage results it needs: the N, and the best after them (floor)."""
        return self.top_n + 1

    def covers(self, offset: int) -> bool:
        """Whether a page starting at ``offset`` holds reranked results (later pages hold
        first-stage results only, and need no reranker call)."""
        return offset < self.top_n

    def __call__(
        self, query: str, results: list[ScoredMemory], memories: Sequence[Memory]
    ) -> list[ScoredMemory]:
        """``results`` (the first stage's, best first, ``memories`` theirs) with the top N
        reranked and their scores folded, or as they were when the reranker does not answer."""
        count = min(self.top_n, len(results))
        if count == 0:
            return results
        block, rest = results[:count], results[count:]
        pairs = zip(memories, block, strict=False)  # memories may go past the block
        texts = [rerank_text(memory, result) for memory, result in pairs]
        label = self.reranker.label
        try:
            self.reranker.warm()  # loading a model is start-up, not the rerank's time
        except Exception as exc:  # a model that cannot be loaded: the first stage stands
            return _skipped(block, label, _failure(exc)) + rest
        started = self.clock.monotonic()
        future = _POOL.submit(contextvars.copy_context().run, self.reranker.rerank, query, texts)
        try:
            relevances = _checked(future.result(timeout=self.budget_seconds), count)
        except TimeoutError as exc:
            if future.done():  # the reranker's own timeout, not the budget
                return _skipped(block, label, _failure(exc)) + rest
            future.cancel()  # still queued behind slow calls: never started, never will
            logger.warning(
                "rerank skipped: over budget reranker=%s budget_seconds=%g candidates=%d",
                label,
                self.budget_seconds,
                count,
            )
            reason = f"the reranker did not answer within {self.budget_seconds:g} s"
            return _skipped(block, label, reason) + rest
        except Exception as exc:  # any failure of the model: the first stage stands
            return _skipped(block, label, _failure(exc)) + rest
        seconds = self.clock.monotonic() - started
        logger.info("rerank reranker=%s candidates=%d seconds=%.3f", label, count, seconds)
        return _folded(block, rest, relevances, label, seconds) + rest


def rows_read(rerank: Reranking | None) -> int:
    """How many first-stage results the rerank reads (0 without a reranker)."""
    return rerank.reads if rerank is not None else 0


def page_rows(rerank: Reranking | None, rows: list[_Row], offset: int, wanted: int) -> list[_Row]:
    """The first-stage rows a page is made from: its own, or from the first when the page
    holds reranked results (the rerank reorders the top N as a whole)."""
    if rerank is None or not rerank.covers(offset):
        return rows[offset:wanted]
    return rows[: max(wanted, rerank.reads)]


def reranked_page(
    rerank: Reranking | None,
    query: str,
    results: list[ScoredMemory],
    memories: Sequence[Memory],
    offset: int,
    wanted: int,
) -> list[ScoredMemory]:
    """The page of ``results`` made from ``page_rows``: reranked when it holds the top N."""
    if rerank is None or not rerank.covers(offset):
        return results
    return rerank(query, results, memories)[offset:wanted]


def rerank_text(memory: Memory, result: ScoredMemory) -> str:
    """What the reranker reads of one result: its speaker, then its content (a long
    memory's: the chunk it was found by), at most ``TEXT_CHARS`` characters."""
    content = memory.content
    if result.highlights:
        first = result.highlights[0]
        content = content[first.start : first.end]
    speaker = getattr(memory, "speaker", None)
    text = f"{speaker}: {content}" if speaker else content
    return text[:TEXT_CHARS]


def _checked(relevances: Any, count: int) -> list[float]:
    """The reranker's answer if it is one finite relevance in [0, 1] per text."""
    values = list(relevances)
    if len(values) != count:
        raise ValueError(f"the reranker gave {len(values)} relevances for {count} texts")
    checked = [float(value) for value in values]
    if not all(math.isfinite(value) and 0.0 <= value <= 1.0 for value in checked):
        raise ValueError("the reranker gave a relevance outside [0, 1]")
    return checked


def _failure(exc: BaseException) -> str:
    logger.warning("rerank failed, the first-stage order stands: %s", exc, exc_info=exc)
    return f"the reranker failed ({type(exc).__name__}: {exc})"[:300]


def _skipped(block: list[ScoredMemory], label: str, reason: str) -> list[ScoredMemory]:
    """The results as the first stage ranked them, each saying why it was not reranked."""
    part = {"reranker": label, "skipped": reason}
    return [r.model_copy(update={"why": {**r.why, "rerank": part}}) for r in block]


def _folded(
    block: list[ScoredMemory],
    rest: list[ScoredMemory],
    relevances: list[float],
    label: str,
    seconds: float,
) -> list[ScoredMemory]:
    """The block ordered by its scores with the reranker's relevance folded in."""
    scores = [result.score for result in block]
    ceiling = max(scores)
    floor = min(max((result.score for result in rest), default=min(scores)), ceiling)
    folded = []
    for position, (result, relevance) in enumerate(zip(block, relevances, strict=True)):
        score = round(floor + (ceiling - floor) * relevance, SCORE_DIGITS)
        part = {
            "reranker": label,
            "relevance": round(relevance, 4),
            "first_stage_score": result.score,
            "first_stage_rank": position + 1,
            "range": [floor, ceiling],
            "change": round(score - result.score, SCORE_DIGITS),
            "seconds": round(seconds, 3),
        }
        why = {**result.why, "rerank": part, "score": score}
        folded.append(result.model_copy(update={"score": score, "why": why}))
    # best score first; among equal scores the more relevant, then the first stage's order
    order = sorted(range(len(folded)), key=lambda i: (-folded[i].score, -relevances[i], i))
    return [folded[i] for i in order]
