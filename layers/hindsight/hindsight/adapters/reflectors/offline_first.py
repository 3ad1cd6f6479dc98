"""Offline extraction first, then the LLM: what a configured LLM reflector really runs.

The offline reflector reads each batch of episodes first. The LLM is then shown the same
episodes with the offline facts as candidates; it refines them, rejects the ones the
episodes do not state, and adds what they miss. A candidate it neither refines nor
rejects is kept. A rejection alone is no evidence against what the episodes say (a
model rejects true facts too): a rejected candidate the model did not replace is kept
with low confidence, so it waits in review (``pending``) and is never auto-approved.
When the LLM call fails (timeout, HTTP error, refusal, invalid output twice, an answer
cut off twice) or the run's token budget is spent, the batch keeps the offline facts
and the failure is reported in the output's usage; the reflection never fails because
of the LLM. Summaries fall back to the offline summary the same way.

The token budget is per reflection run: the reflect use case asks ``for_run()`` for a
reflector with its own ``CallMeter``. So is the patience with a model that does not answer:
after ``MAX_TIMEOUTS_IN_A_ROW`` batches in a row timed out, the run's later batches keep
their offline facts without calling it (a local server on a CPU may go on generating an
answer the reflector stopped waiting for, and every later call would wait behind it).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from hindsight.adapters.reflectors.injection import instruction_like
from hindsight.adapters.reflectors.llm import (
    CallMeter,
    LlmReflector,
    LlmTimeoutError,
    Refinement,
    TokenBudgetExhaustedError,
    candidate_ids,
)
from hindsight.core.errors import HindsightError
from hindsight.core.models import (
    Confidence,
    EpisodicMemory,
    ExtractedFact,
    ReflectionOutput,
    SemanticMemory,
    SessionSummary,
    StoredVector,
)
from hindsight.core.ports import Reflector, VectorReusingReflector

logger = logging.getLogger(__name__)

# batches in a row whose LLM call timed out before the run stops calling the model
MAX_TIMEOUTS_IN_A_ROW = 2


def _covered(candidate: ExtractedFact, facts: Sequence[ExtractedFact]) -> bool:
    """Whether the LLM wrote this candidate again without citing it (same words, or the
    same topic from the same episodes)."""
    words = candidate.content.casefold().strip()
    sources = set(candidate.source_memory_ids)
    return any(
        f.content.casefold().strip() == words
        or (candidate.topic and f.topic == candidate.topic and sources & set(f.source_memory_ids))
        for f in facts
    )


def combine(
    candidates: Sequence[ExtractedFact],
    refinement: Refinement,
    episodes: Sequence[EpisodicMemory],
) -> list[ExtractedFact]:
    """The LLM's facts plus the candidates it did not replace (those it rejected at low
    confidence: pending review), oldest source first (so that a newer state supersedes an
    older one when they are merged in this order)."""
    kept = [
        replace(fact, confidence=Confidence.LOW) if candidate_id in refinement.rejected else fact
        for candidate_id, fact in zip(candidate_ids(candidates), candidates, strict=True)
        if candidate_id not in refinement.refined and not _covered(fact, refinement.facts)
    ]
    when = {e.memory_id: e.occurred_at for e in episodes}
    oldest = min(when.values(), default=datetime.min)

    def newest_source(fact: ExtractedFact) -> datetime:
        return max((when.get(i, oldest) for i in fact.source_memory_ids), default=oldest)

    return sorted([*kept, *refinement.facts], key=newest_source)


def _span(episodes: Sequence[EpisodicMemory]) -> str:
    ordered = sorted(episodes, key=lambda e: (e.occurred_at, e.memory_id))
    if len(ordered) == 1:
        return f"episode {ordered[0].memory_id}"
    return f"episodes {ordered[0].memory_id}..{ordered[-1].memory_id} ({len(ordered)})"


class OfflineFirstReflector:
    """The offline reflector's facts, refined and completed by an LLM when it answers."""

    def __init__(
        self,
        offline: Reflector,
        llm: LlmReflector,
        token_budget: int | None = None,
        meter: CallMeter | None = None,
    ) -> None:
        self._offline = offline
        self._llm = llm
        self._budget = token_budget
        self._meter = meter

    @property
    def label(self) -> str:
        return self._llm.label

    def for_run(self) -> OfflineFirstReflector:
        """A reflector for one reflection run, with its own token budget."""
        return OfflineFirstReflector(
            self._offline, self._llm, self._budget, CallMeter(budget=self._budget)
        )

    def reflect(
        self,
        user_id: str,
        episodes: Sequence[EpisodicMemory],
        existing_facts: Sequence[SemanticMemory],
    ) -> ReflectionOutput:
        return self.reflect_with_vectors(user_id, episodes, existing_facts, {})

    def reflect_with_vectors(
        self,
        user_id: str,
        episodes: Sequence[EpisodicMemory],
        existing_facts: Sequence[SemanticMemory],
        vectors: Mapping[str, StoredVector],
    ) -> ReflectionOutput:
        """``reflect``; the stored vectors go to an offline reflector that reuses them."""
        if isinstance(self._offline, VectorReusingReflector):
            offline = self._offline.reflect_with_vectors(user_id, episodes, existing_facts, vectors)
        else:
            offline = self._offline.reflect(user_id, episodes, existing_facts)
        if not episodes:
            return offline
        meter = self._meter or CallMeter(budget=self._budget)
        mark = meter.mark()
        if meter.exhausted or meter.unresponsive:  # the budget is spent / the model is gone
            return self._offline_output(offline, meter, mark)
        suspects = instruction_like(episodes)
        if suspects:  # a prompt injection: the LLM never sees it
            reason = f"{', '.join(suspects)} read as instructions to a model, not sent to it"
            return self._failed(offline, meter, mark, episodes, reason)
        try:
            refinement = self._llm.refine(user_id, episodes, existing_facts, offline.facts, meter)
        except TokenBudgetExhaustedError as exc:
            note = f"{exc}; {_span(episodes)} and later batches kept the offline facts only"
            logger.warning("llm skipped reflector=%s %s", self.label, note)
            meter.failures.append(note)
            return self._offline_output(offline, meter, mark)
        except LlmTimeoutError as exc:
            meter.timeouts_in_a_row += 1
            reason = exc.message
            if meter.timeouts_in_a_row >= MAX_TIMEOUTS_IN_A_ROW:
                meter.unresponsive = True
                reason += (
                    f"; {meter.timeouts_in_a_row} batches in a row timed out, so the later "
                    "batches of this run keep their offline facts without calling the model "
                    "(raise HINDSIGHT_REFLECTOR_TIMEOUT_SECONDS for a slow model)"
                )
            return self._failed(offline, meter, mark, episodes, reason)
        except HindsightError as exc:  # unavailable, refused, invalid twice
            meter.timeouts_in_a_row = 0
            return self._failed(offline, meter, mark, episodes, exc.message)
        except Exception as exc:  # an adapter's bug must not fail the reflection either
            logger.exception("llm reflector raised an unexpected error")
            return self._failed(offline, meter, mark, episodes, f"unexpected error: {exc!r}")
        meter.timeouts_in_a_row = 0
        facts = combine(offline.facts, refinement, episodes)
        logger.info(
            "llm refined offline facts %s offline=%d refined=%d rejected=%d final=%d",
            _span(episodes),
            len(offline.facts),
            len(refinement.refined),
            len(refinement.rejected),
            len(facts),
        )
        return ReflectionOutput(facts=facts, reflector=self.label, usage=meter.usage(mark))

    def _failed(
        self,
        offline: ReflectionOutput,
        meter: CallMeter,
        mark: tuple[int, int, int, int],
        episodes: Sequence[EpisodicMemory],
        reason: str,
    ) -> ReflectionOutput:
        failure = f"{_span(episodes)}: {reason}; the offline facts were kept"
        logger.warning("llm reflection failed reflector=%s %s", self.label, failure)
        meter.failures.append(failure)
        return self._offline_output(offline, meter, mark)

    @staticmethod
    def _offline_output(
        offline: ReflectionOutput, meter: CallMeter, mark: tuple[int, int, int, int]
    ) -> ReflectionOutput:
        return ReflectionOutput(
            facts=offline.facts, reflector=offline.reflector, usage=meter.usage(mark)
        )

    def summarize(self, episodes: Sequence[EpisodicMemory]) -> SessionSummary:
        """The LLM's summary; the offline one when the LLM fails."""
        try:
            return self._llm.summarize(episodes)
        except HindsightError as exc:
            logger.warning("llm summary failed, offline summary used: %s", exc.message)
        except Exception:
            logger.exception("llm summary raised an unexpected error, offline summary used")
        return self._offline.summarize(episodes)
