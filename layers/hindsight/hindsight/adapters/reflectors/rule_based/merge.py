"""Candidates merged into facts: one per topic and stance, the latest stance winning.

The same fact found in several episodes becomes one fact with every source id, its
confidence raised one step (moods excepted: they count their episodes already).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from hindsight.adapters.reflectors.rule_based.candidates import Candidate
from hindsight.core.models import Confidence, ExtractedFact
from hindsight.core.retrieval.states import is_state_topic

_RANK = {Confidence.LOW: 0, Confidence.MEDIUM: 1, Confidence.HIGH: 2}


@dataclass
class _Group:
    candidates: list[Candidate] = field(default_factory=list)

    @property
    def latest(self) -> Candidate:
        return max(self.candidates, key=lambda c: c.occurred_at)

    @property
    def first_seen(self) -> datetime:
        return min(c.occurred_at for c in self.candidates)


def merge(candidates: Sequence[Candidate]) -> list[ExtractedFact]:
    """One fact per (topic, stance); within a topic the most recent stance wins, except
    for states: each is kept, oldest first, so that the newer supersedes the older when
    the facts are merged (``core/fact_merge.py``) and the history stays."""
    groups: dict[tuple[str, str], _Group] = {}
    for candidate in candidates:
        groups.setdefault((candidate.topic, candidate.stance), _Group()).candidates.append(
            candidate
        )
    newest_by_topic: dict[str, datetime] = {}
    for (topic, _), group in groups.items():
        moment = group.latest.occurred_at
        if topic not in newest_by_topic or moment > newest_by_topic[topic]:
            newest_by_topic[topic] = moment
    facts: list[tuple[datetime, ExtractedFact]] = []
    for (topic, _), group in groups.items():
        latest = group.latest
        if latest.occurred_at < newest_by_topic[topic] and not is_state_topic(topic):
            continue  # contradicted later in the same batch (a state is kept: superseded)
        sources = list(dict.fromkeys(c.memory_id for c in group.candidates))
        confidence = max((c.confidence for c in group.candidates), key=_RANK.__getitem__)
        if len(sources) > 1 and latest.repeatable:
            confidence = confidence.raised()
        facts.append(
            (
                latest.occurred_at if is_state_topic(topic) else group.first_seen,
                ExtractedFact(
                    content=latest.content,
                    category=latest.category,
                    confidence=confidence,
                    source_memory_ids=sources,
                    topic=topic,
                ),
            )
        )
    facts.sort(key=lambda item: item[0])
    return [fact for _, fact in facts]
