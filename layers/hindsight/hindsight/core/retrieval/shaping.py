"""How retrieve presents a result: its highlights, its content cut if asked, its fields.

The ranking (``core/retrieval/ranking.py``) decides the order and the score; this shapes each
result of the page: the chunks of a long memory it was found by (``highlights``), the
content cut around the best one when the request sets ``max_content_chars``, and the
fields of an episode or of a fact.
"""

from __future__ import annotations

from typing import Any

from hindsight.core.models import FactStatus, Memory, SemanticMemory
from hindsight.core.results import Highlight, ScoredMemory
from hindsight.core.retrieval.highlight import Match, cut_around, highlight
from hindsight.core.retrieval.ranking import SCORE_DIGITS


class Shaping:
    """How results are presented: highlights of long memories, contents cut if asked."""

    def __init__(
        self, words: list[str], max_content_chars: int | None, vector_weight: float
    ) -> None:
        self.words = words
        self.max_content_chars = max_content_chars
        self.vector_weight = vector_weight

    def result(
        self, memory: Memory, score: float, why: dict[str, Any], matches: list[Match]
    ) -> ScoredMemory:
        ordered = _ordered(
            matches, _vector_led(why, self.vector_weight), memory.content, self.words
        )
        highlights = [highlight(memory.content, match, self.words) for match in ordered]
        if highlights:
            first = highlights[0]
            why = {**why, "chunk": {k: first[k] for k in ("chunk", "start", "end", "matched_by")}}
        shaped = _result(memory, score, why)
        update: dict[str, Any] = {"highlights": [Highlight.model_validate(h) for h in highlights]}
        limit = self.max_content_chars
        if limit is not None and len(memory.content) > limit:
            span = ordered[0].span if ordered else None
            content, kept = cut_around(memory.content, span, self.words, limit)
            update.update(content=content, content_truncated=True, content_span=kept)
        return shaped.model_copy(update=update)


def _vector_led(why: dict[str, Any], vector_weight: float) -> bool:
    """Whether meaning (the vector search) contributed more to the relevance than keywords."""
    similarity = float(why.get("similarity_scaled") or 0.0) * vector_weight
    return similarity >= float(why.get("keyword") or 0.0) * (1.0 - vector_weight)


def _ordered(
    matches: list[Match], vector_first: bool, content: str, words: list[str]
) -> list[Match]:
    """The chunks a memory was found by, one per chunk: first those holding at least half
    of the query's words (an exact statement), then the one of the search that contributed
    most to the memory's relevance. On bench/longmem.py, whose questions are paraphrases,
    the needle's chunk came first for 31 of 55 needles found (34 by the leading search
    alone, 30 with the most words held first, 25 with keyword matches always first); the
    first rule keeps a chunk that states the query's own words first, as a user quoting a
    document expects."""
    first = "vector" if vector_first else "keyword"
    enough = max(1, (len(words) + 1) // 2)

    def states(match: Match) -> bool:
        text = content[match.span[0] : match.span[1]].casefold()
        return sum(1 for word in words if word in text) >= enough

    seen: set[int] = set()
    out = []
    for match in sorted(matches, key=lambda m: (not states(m), m.by != first)):
        if match.chunk not in seen:
            seen.add(match.chunk)
            out.append(match)
    return out


def _result(memory: Memory, score: float, why: dict[str, Any]) -> ScoredMemory:
    common: dict[str, Any] = {
        "archived": memory.archived_at is not None,
        "memory_id": memory.memory_id,
        "kind": memory.kind,
        "content": memory.content,
        "category": memory.category,
        "scope": memory.scope,
        "occurred_at": memory.occurred_at,
        "created_at": memory.created_at,
        "expires_at": memory.expires_at,
        "metadata": memory.metadata,
        "score": round(score, SCORE_DIGITS),
        "why": why,
    }
    if isinstance(memory, SemanticMemory):
        if memory.superseded_by:
            common["why"] = {
                **why,
                "updated_later": {
                    "by": memory.superseded_by,
                    "at": memory.valid_until.isoformat() if memory.valid_until else None,
                    "reason": "superseded: a newer memory (by: a fact or an episode) "
                    "states what holds now",
                },
            }
        return ScoredMemory(
            **common,
            confidence=memory.confidence,
            status=memory.status,
            source_memory_ids=memory.source_memory_ids,
            supersedes=memory.supersedes,
            superseded_by=memory.superseded_by,
            updated_later=memory.status == FactStatus.SUPERSEDED,
            valid_from=memory.valid_from,
            valid_until=memory.valid_until,
        )
    return ScoredMemory(
        **common,
        emotion=memory.emotion,
        session_id=memory.session_id,
        speaker=memory.speaker,
        event_time=memory.event_time,
    )
