"""Retrieve: hybrid (vector + keyword) search, fused and re-ranked by time and kind.

Score of a candidate =
    relevance          (1 - session_pooling) * own + session_pooling * session_best
                       own = vector_weight * similarity' + (1 - vector_weight) * keyword'
  x recency            decay_floor + (1 - decay_floor) * decay   (episodic only)
                       decay = time_decay ** age_days, age relative to as_of
  x kind_boost         policy.semantic_boost for semantic facts, 1 for episodes
  x confidence_weight  by the fact's confidence (high 1.0, medium 0.85, low 0.6)
  x time_boost         policy.time_cue_boost when the query names a time the memory matches

Semantic facts whose relevance is at least ``policy.semantic_first_min_relevance`` are
ranked ahead of every episode (facts are the distilled, reviewed layer); the rest are
ordered by score.

similarity' is the cosine similarity scaled from the query's similarity to an empty text
(what "unrelated" looks like for the model) up to the best candidate, and keyword'
the BM25 score divided by the best one, so both live in [0, 1]. session_best is the best
``own`` among the candidates of the episode's session (episodes without a session keep
their own): evidence clusters in sessions, so a turn of the session that answers the
query is lifted even when its own words do not match. The recency floor keeps decay a
tie-breaker between similarly relevant memories instead of burying relevant old ones
(with the default 0.95 a day and floor 0.9, a year-old episode keeps 0.9 of its score).
Both defaults (``Policy.decay_floor`` 0.9, ``Policy.session_pooling`` 0.5) were chosen on
the LoCoMo benchmark (bench/locomo.py). Each result's ``why``
holds every part. Results are computed up to ``policy.max_results`` and paged with an
opaque cursor that freezes ``as_of`` so pages agree with each other.

Records are read lazily: relevance and the tier need only the index's hits (score, kind,
session); the other factors are bounded (recency <= 1, the largest confidence weight, the
time-cue boost), so the record store is asked only for candidates whose bound can still
reach the requested page. At 100k memories of one user that cut the records read per
query from ~160 to ~55 with the same ranking (tests/unit/test_retrieve_reads_few_records.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from hindsight.core.commands import RetrieveCommand, RetrieveResult, ScoredMemory
from hindsight.core.errors import InvalidRequestError
from hindsight.core.models import (
    EpisodicMemory,
    FactStatus,
    HitFacts,
    Memory,
    MemoryKind,
    Principal,
    SearchFilter,
    SemanticMemory,
    TimeRange,
    utc,
)
from hindsight.core.temporal import parse_query_time
from hindsight.core.text import tokenize
from hindsight.core.usecases.common import embed_query, neutral_vector, readable_scopes

if TYPE_CHECKING:
    from hindsight.core.service import MemoryService, Policy

logger = logging.getLogger(__name__)

SECONDS_PER_DAY = 86_400.0


def _fingerprint(command: RetrieveCommand) -> str:
    fields = command.model_dump(mode="json", exclude={"cursor", "top_k", "as_of"})
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def _encode_cursor(offset: int, as_of: datetime, fingerprint: str) -> str:
    raw = json.dumps({"o": offset, "a": as_of.isoformat(), "f": fingerprint})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, fingerprint: str) -> tuple[int, datetime]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        offset, as_of, seen = int(data["o"]), utc(datetime.fromisoformat(data["a"])), data["f"]
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidRequestError(
            "cursor is invalid; pass next_cursor exactly as a previous response returned it"
        ) from exc
    if seen != fingerprint or offset < 0:
        raise InvalidRequestError(
            "cursor belongs to a different query; repeat the same query and filters "
            "with the cursor, or drop the cursor to start again"
        )
    return offset, as_of


def _age_days(memory: EpisodicMemory, as_of: datetime) -> float:
    """Days since the memory mattered: an upcoming or ongoing event does not age."""
    if any(r.end > as_of for r in memory.event_time):
        return 0.0
    reference = memory.occurred_at
    past_events = [r.end for r in memory.event_time if r.end <= as_of]
    if past_events:
        reference = max(reference, max(past_events))
    return max(0.0, (as_of - reference).total_seconds() / SECONDS_PER_DAY)


def _time_match(memory: Memory, query_time: TimeRange) -> bool:
    if query_time.contains(memory.occurred_at):
        return True
    if isinstance(memory, EpisodicMemory):
        return any(r.overlaps(query_time) for r in memory.event_time)
    return False


def _allowed(memory: Memory, search_filter: SearchFilter, as_of: datetime) -> bool:
    """Re-check on the source of truth what the index filtered (it may lag behind)."""
    if memory.user_id != search_filter.user_id or memory.is_expired(as_of):
        return False
    if memory.occurred_at > as_of and memory.kind == MemoryKind.EPISODIC:
        return False
    if search_filter.scopes is not None and memory.scope not in search_filter.scopes:
        return False
    if search_filter.kinds is not None and memory.kind not in search_filter.kinds:
        return False
    if search_filter.categories is not None and memory.category not in search_filter.categories:
        return False
    if isinstance(memory, SemanticMemory):
        if search_filter.statuses is not None and memory.status not in search_filter.statuses:
            return False
        if search_filter.emotions is not None:
            return False
    else:
        if search_filter.emotions is not None and memory.emotion not in search_filter.emotions:
            return False
        if search_filter.session_id is not None and memory.session_id != search_filter.session_id:
            return False
    if search_filter.since is not None and memory.occurred_at < search_filter.since:
        return False
    return not (search_filter.until is not None and memory.occurred_at >= search_filter.until)


def retrieve_memories(
    service: MemoryService, principal: Principal, command: RetrieveCommand
) -> RetrieveResult:
    clock, policy = service.clock, service.policy
    # the first call loads the embedding model (seconds); that is start-up, not search,
    # so it happens before the time budget starts
    neutral = neutral_vector(service.embedder)
    deadline = clock.monotonic() + policy.retrieve_budget_seconds
    fingerprint = _fingerprint(command)
    offset = 0
    as_of = command.as_of or clock.now()
    if command.cursor:
        offset, as_of = _decode_cursor(command.cursor, fingerprint)

    kinds = frozenset(command.kinds) if command.kinds else None
    statuses = frozenset(command.statuses) if command.statuses else frozenset({FactStatus.APPROVED})
    search_filter = SearchFilter(
        tenant_id=principal.tenant_id,
        user_id=command.user_id,
        scopes=readable_scopes(principal, command.scopes),
        kinds=kinds,
        categories=frozenset(command.categories) if command.categories else None,
        emotions=frozenset(command.emotions) if command.emotions else None,
        statuses=statuses,
        since=command.since,
        until=command.until,
        now=as_of,
        session_id=command.session_id,
    )
    query_time = parse_query_time(command.query, as_of)
    partial = False

    keyword_list = service.index.keyword_search(search_filter, command.query, policy.candidate_pool)
    keyword_hits = {h.memory_id: h.score for h in keyword_list}
    facts: dict[str, HitFacts | None] = {h.memory_id: h.facts for h in keyword_list}
    query_vector = None
    vector_hits: dict[str, float] = {}  # cosine similarity, as the index computed it
    if clock.monotonic() < deadline:
        query_vector = embed_query(service.embedder, command.query)
        for hit in service.index.vector_search(search_filter, query_vector, policy.candidate_pool):
            vector_hits[hit.memory_id] = hit.score
            facts[hit.memory_id] = facts.get(hit.memory_id) or hit.facts
    else:
        partial = True

    candidate_ids = list(dict.fromkeys([*keyword_hits, *vector_hits]))
    if clock.monotonic() >= deadline:
        partial = True
    fetched: dict[str, Memory | None] = {}  # None: gone from the store, or filtered out

    def fetch(memory_ids: list[str]) -> None:
        """Read memories and re-check on the source of truth what the index filtered."""
        found = {m.memory_id: m for m in service.records.get_many(principal.tenant_id, memory_ids)}
        for memory_id in memory_ids:
            memory = found.get(memory_id)
            allowed = memory is not None and _allowed(memory, search_filter, as_of)
            fetched[memory_id] = memory if allowed else None

    if all(facts.get(memory_id) is not None for memory_id in candidate_ids):
        # the index described every hit: records are read only for candidates that can
        # still reach the page (see _rank)
        candidates = [_Candidate.of_hit(i, facts[i]) for i in candidate_ids]  # type: ignore[arg-type]
    else:
        fetch(candidate_ids)
        candidates = [
            _Candidate.of_memory(memory)
            for memory in (fetched[i] for i in candidate_ids)
            if memory is not None
        ]

    similarities = {
        c.memory_id: vector_hits[c.memory_id] for c in candidates if c.memory_id in vector_hits
    }
    keyword_only = [c.memory_id for c in candidates if c.memory_id not in vector_hits]
    if query_vector is not None and keyword_only and clock.monotonic() < deadline:
        # keyword hits the vector search did not return: their similarity, from the store
        stored = service.records.get_vectors(principal.tenant_id, keyword_only)
        for memory_id, vector in stored.items():
            if vector.model == query_vector.model and vector.dim == query_vector.dim:
                similarities[memory_id] = float(np.dot(vector.values, query_vector.values))
    elif query_vector is not None and keyword_only:
        partial = True

    if command.min_similarity is not None:
        candidates = [
            c for c in candidates if similarities.get(c.memory_id, -1.0) >= command.min_similarity
        ]

    floor = float(np.dot(neutral, query_vector.values)) if query_vector is not None else 0.0
    wanted = min(offset + command.top_k, policy.max_results)
    ranked, total = _rank(
        service,
        candidates,
        _Scoring(
            similarities,
            keyword_hits,
            as_of,
            command,
            query_time,
            floor,
            frozenset(tokenize(command.query)) if policy.speaker_boost != 1.0 else frozenset(),
        ),
        fetched,
        fetch,
        wanted,
    )
    page = [
        _result(memory, score, parts.why(memory, policy, command.time_decay))
        for _, score, memory, parts in ranked[offset:wanted]
    ]
    has_more = offset + command.top_k < min(total, policy.max_results)
    next_cursor = _encode_cursor(offset + command.top_k, as_of, fingerprint) if has_more else None
    logger.info(
        "retrieve tenant=%s candidates=%d read=%d results=%d partial=%s",
        principal.tenant_id,
        len(candidate_ids),
        len(fetched),
        len(page),
        partial,
    )
    return RetrieveResult(
        results=page,
        has_more=has_more,
        next_cursor=next_cursor,
        partial=partial,
        query_time=query_time,
    )


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A hit as ranking sees it before (or without) reading its record."""

    memory_id: str
    kind: MemoryKind
    session: str | None  # the pooling key: an episode's session

    @classmethod
    def of_hit(cls, memory_id: str, facts: HitFacts) -> _Candidate:
        session = facts.session_id if facts.kind == MemoryKind.EPISODIC else None
        return cls(memory_id, facts.kind, session or None)

    @classmethod
    def of_memory(cls, memory: Memory) -> _Candidate:
        return cls(memory.memory_id, memory.kind, _session_key(memory))


@dataclass(frozen=True, slots=True)
class _Scoring:
    """The per-query inputs of scoring."""

    similarities: dict[str, float]
    keyword_hits: dict[str, float]
    as_of: datetime
    command: RetrieveCommand
    query_time: TimeRange | None
    floor: float
    query_terms: frozenset[str]


def _rank(
    service: MemoryService,
    candidates: list[_Candidate],
    scoring: _Scoring,
    fetched: dict[str, Memory | None],
    fetch: Callable[[list[str]], None],
    wanted: int,
) -> tuple[list[tuple[int, float, Memory, _Parts]], int]:
    """The best ``wanted`` candidates as (tier, score, memory, parts), and how many rank.

    Relevance (similarity, keyword, session pooling) and the tier need only what the
    index returned; the other factors (recency from event times, a fact's confidence,
    time cues matched by event times) need the record. Every factor has an upper bound
    (recency <= 1, the largest confidence weight, the time-cue boost), so candidates are
    read best bound first, and reading stops once no unread candidate's bound can beat
    the ``wanted``-th exact score: the result equals scoring every candidate. Candidates
    never read are counted as ranking (the index already filtered them).
    """
    policy = service.policy
    if not candidates or wanted <= 0:
        return [], len(candidates)
    similarities, keyword_hits = scoring.similarities, scoring.keyword_hits
    sims = [similarities[c.memory_id] for c in candidates if c.memory_id in similarities]
    # similarity is scaled from the query's similarity to an empty text (or the weakest
    # candidate, if lower) up to the best candidate
    low, high = (min([*sims, scoring.floor]), max(sims)) if sims else (0.0, 1.0)
    spread = high - low if high - low > 1e-6 else 1.0
    best_keyword = max((keyword_hits.get(c.memory_id, 0.0) for c in candidates), default=0.0)
    vector_weight = policy.vector_weight if sims else 0.0
    if best_keyword <= 0.0 and sims:
        vector_weight = 1.0

    own: dict[str, float] = {}
    session_best: dict[str, float] = {}
    for c in candidates:
        similarity = similarities.get(c.memory_id)
        sim_part = (similarity - low) / spread if similarity is not None else 0.0
        keyword_part = keyword_hits.get(c.memory_id, 0.0) / best_keyword if best_keyword else 0.0
        own[c.memory_id] = vector_weight * sim_part + (1.0 - vector_weight) * keyword_part
        if c.session is not None:
            session_best[c.session] = max(session_best.get(c.session, 0.0), own[c.memory_id])
    pooling = policy.session_pooling

    def relevance(c: _Candidate) -> float:
        if pooling > 0.0 and c.session is not None:
            return (1.0 - pooling) * own[c.memory_id] + pooling * session_best[c.session]
        return own[c.memory_id]

    def tier(c: _Candidate, rel: float) -> int:
        # relevant facts come before every episode; the rest is ordered by score
        return (
            0 if c.kind == MemoryKind.SEMANTIC and rel >= policy.semantic_first_min_relevance else 1
        )

    time_bound = max(1.0, policy.time_cue_boost) if scoring.query_time is not None else 1.0
    episode_bound = max(1.0, policy.decay_floor) * time_bound * max(1.0, policy.speaker_boost)
    fact_bound = (
        policy.semantic_boost * max([1.0, *policy.confidence_weights.values()]) * time_bound
    )
    ordered = []
    for c in candidates:
        rel = relevance(c)
        bound = rel * (fact_bound if c.kind == MemoryKind.SEMANTIC else episode_bound)
        ordered.append((tier(c, rel), -bound, c.memory_id, c, rel))
    ordered.sort(key=lambda o: o[:3])

    scored: list[tuple[int, float, Memory, _Parts]] = []
    position = 0  # ordered[:position] have been scored (or found gone)
    # records already read (an index without facts) are all scored: nothing to save
    everything_read = all(c.memory_id in fetched for c in candidates)
    batch = ordered if everything_read else ordered[: wanted + 10]
    while batch:
        unread = [o[3].memory_id for o in batch if o[3].memory_id not in fetched]
        if unread:
            fetch(unread)
        for _, _, _, c, rel in batch:
            memory = fetched.get(c.memory_id)
            if memory is not None:
                pooled = (
                    session_best[c.session] if pooling > 0.0 and c.session is not None else None
                )
                parts = _Parts(
                    similarity=similarities.get(c.memory_id),
                    low=low,
                    spread=spread,
                    keyword=keyword_hits.get(c.memory_id, 0.0),
                    best_keyword=best_keyword,
                    own=own[c.memory_id],
                    pooled=pooled,
                    relevance=rel,
                )
                scored.append(_score(policy, memory, parts, scoring))
        position += len(batch)
        rest = ordered[position:]
        if not rest:
            break
        scored.sort(key=_order)
        if len(scored) < wanted:
            batch = rest[: wanted - len(scored) + 10]
            continue
        last_tier, last_score = scored[wanted - 1][0], scored[wanted - 1][1]
        # ordered is sorted by (tier, -bound): the candidates that can still beat the
        # wanted-th come first; the margin absorbs rounding of the bound
        count = 0
        for o in rest:
            if o[0] > last_tier or (o[0] == last_tier and -o[1] * (1 + 1e-9) + 1e-12 < last_score):
                break
            count += 1
        batch = rest[:count]
    scored.sort(key=_order)
    unread_total = len(ordered) - position
    return scored[:wanted], len(scored) + unread_total


def _order(row: tuple[int, float, Memory, _Parts]) -> tuple[int, float, float, str]:
    return (row[0], -row[1], -row[2].occurred_at.timestamp(), row[2].memory_id)


def _score(
    policy: Policy, memory: Memory, parts: _Parts, scoring: _Scoring
) -> tuple[int, float, Memory, _Parts]:
    """The exact (tier, score) of a read memory; ``parts`` gain age, time boost and score."""
    relevance = parts.relevance
    if isinstance(memory, EpisodicMemory):
        parts.age = _age_days(memory, scoring.as_of)
        decay = scoring.command.time_decay**parts.age
        factor = policy.decay_floor + (1.0 - policy.decay_floor) * decay
        if policy.speaker_boost != 1.0 and _names_speaker(memory, scoring.query_terms):
            parts.speaker_boost = policy.speaker_boost
            factor *= policy.speaker_boost
    else:
        factor = policy.semantic_boost * policy.confidence_weights.get(memory.confidence.value, 1.0)
    if scoring.query_time is not None:
        parts.time_boost = policy.time_cue_boost if _time_match(memory, scoring.query_time) else 1.0
        factor *= parts.time_boost
    parts.score = relevance * factor
    first = memory.kind == MemoryKind.SEMANTIC and relevance >= policy.semantic_first_min_relevance
    return (0 if first else 1, parts.score, memory, parts)


@dataclass(slots=True)
class _Parts:
    """The numbers behind one candidate's score, turned into ``why`` for returned results."""

    similarity: float | None
    low: float
    spread: float
    keyword: float
    best_keyword: float
    own: float
    pooled: float | None
    relevance: float
    age: float | None = None
    time_boost: float | None = None
    speaker_boost: float | None = None
    score: float = 0.0

    def why(self, memory: Memory, policy: Policy, time_decay: float) -> dict[str, Any]:
        sim_part = (
            (self.similarity - self.low) / self.spread if self.similarity is not None else 0.0
        )
        keyword_part = self.keyword / self.best_keyword if self.best_keyword > 0 else 0.0
        why: dict[str, Any] = {
            "similarity": round(self.similarity, 4) if self.similarity is not None else None,
            "similarity_scaled": round(sim_part, 4),
            "keyword": round(keyword_part, 4),
            "keyword_bm25": round(self.keyword, 4),
        }
        if self.pooled is not None:
            why.update(own_relevance=round(self.own, 4), session_relevance=round(self.pooled, 4))
        why["relevance"] = round(self.relevance, 4)
        if self.age is not None:
            decay = time_decay**self.age
            recency = policy.decay_floor + (1.0 - policy.decay_floor) * decay
            why.update(
                age_days=round(self.age, 2), decay=round(decay, 4), recency=round(recency, 4)
            )
        elif isinstance(memory, SemanticMemory):
            weight = policy.confidence_weights.get(memory.confidence.value, 1.0)
            why.update(kind_boost=policy.semantic_boost, confidence_weight=weight)
        if self.speaker_boost is not None:
            why["speaker_boost"] = self.speaker_boost
        if self.time_boost is not None:
            why["time_boost"] = self.time_boost
        why["score"] = round(self.score, 6)
        return why


def _names_speaker(memory: EpisodicMemory, query_terms: frozenset[str]) -> bool:
    """Whether every word of the episode's speaker occurs in the query."""
    if not memory.speaker:
        return False
    words = _speaker_terms(memory.speaker)
    return bool(words) and words <= query_terms


@lru_cache(maxsize=4_096)
def _speaker_terms(speaker: str) -> frozenset[str]:
    return frozenset(tokenize(speaker))


def _session_key(memory: Memory) -> str | None:
    if isinstance(memory, EpisodicMemory) and memory.session_id:
        return memory.session_id
    return None


def _result(memory: Memory, score: float, why: dict[str, Any]) -> ScoredMemory:
    common: dict[str, Any] = {
        "memory_id": memory.memory_id,
        "kind": memory.kind,
        "content": memory.content,
        "category": memory.category,
        "scope": memory.scope,
        "occurred_at": memory.occurred_at,
        "created_at": memory.created_at,
        "expires_at": memory.expires_at,
        "metadata": memory.metadata,
        "score": round(score, 6),
        "why": why,
    }
    if isinstance(memory, SemanticMemory):
        return ScoredMemory(
            **common,
            confidence=memory.confidence,
            status=memory.status,
            source_memory_ids=memory.source_memory_ids,
            supersedes=memory.supersedes,
        )
    return ScoredMemory(
        **common,
        emotion=memory.emotion,
        session_id=memory.session_id,
        speaker=memory.speaker,
        event_time=memory.event_time,
    )
