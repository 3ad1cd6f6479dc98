"""The rule-based reflector: the extractors, mood patterns and merge behind the port."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hindsight.adapters.reflectors.rule_based.candidates import Candidate
from hindsight.adapters.reflectors.rule_based.extractors import extract
from hindsight.adapters.reflectors.rule_based.merge import merge
from hindsight.adapters.reflectors.rule_based.moods import mood_patterns
from hindsight.adapters.reflectors.rule_based.speakers import turns
from hindsight.adapters.reflectors.rule_based.summary import (
    entities,
    intent,
    open_tasks,
    session_mood,
)
from hindsight.core.models import EpisodicMemory, ReflectionOutput, SemanticMemory, SessionSummary
from hindsight.core.retrieval.speakers import is_assistant

logger = logging.getLogger(__name__)

LABEL = "rule-based (offline, no LLM)"


class RuleBasedReflector:
    """Pattern-based reflector for English and Chinese; runs offline, deterministic."""

    def __init__(self, min_mood_episodes: int = 2) -> None:
        self._min_mood_episodes = min_mood_episodes

    @property
    def label(self) -> str:
        return LABEL

    def reflect(
        self,
        user_id: str,
        episodes: Sequence[EpisodicMemory],
        existing_facts: Sequence[SemanticMemory],
    ) -> ReflectionOutput:
        """Facts stated explicitly in the episodes; ``existing_facts`` are left to the merge."""
        ordered = sorted(episodes, key=lambda e: (e.occurred_at, e.memory_id))
        candidates: list[Candidate] = []
        for episode in ordered:
            for turn in turns(episode):
                if is_assistant(turn.speaker):
                    continue
                candidates.extend(extract(turn, user_id))
        candidates.extend(mood_patterns(ordered, user_id, self._min_mood_episodes))
        facts = merge(candidates)
        logger.info("rule-based reflection episodes=%d facts=%d", len(episodes), len(facts))
        return ReflectionOutput(facts=facts, reflector=self.label)

    def summarize(self, episodes: Sequence[EpisodicMemory]) -> SessionSummary:
        """Intent, entities, open tasks and mood of a session's episodes."""
        ordered = sorted(episodes, key=lambda e: (e.occurred_at, e.memory_id))
        all_turns = [t for e in ordered for t in turns(e)]
        said = [t for t in all_turns if not is_assistant(t.speaker)]
        return SessionSummary(
            intent=intent(said),
            entities=entities([t.text for t in all_turns]),
            open_tasks=open_tasks(said),
            mood=session_mood(ordered),
            summarizer=self.label,
        )
