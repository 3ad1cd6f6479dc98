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
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from hindsight.core.commands import RetrieveCommand, RetrieveResult, ScoredMemory
from hindsight.core.errors import InvalidRequestError
from hindsight.core.models import (
    EpisodicMemory,
    FactStatus,
    Memory,
    MemoryKind,
    Principal,
    SearchFilter,
    SemanticMemory,
    TimeRange,
    utc,
)
from hindsight.core.temporal import parse_query_time
from hindsight.core.usecases.common import embed_query, neutral_vector, readable_scopes

if TYPE_CHECKING:
    from hindsight.core.service import MemoryService

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

    keyword_hits = {
        h.memory_id: h.score
        for h in service.index.keyword_search(search_filter, command.query, policy.candidate_pool)
    }
    query_vector = None
    vector_hits: dict[str, float] = {}  # cosine similarity, as the index computed it
    if clock.monotonic() < deadline:
        query_vector = embed_query(service.embedder, command.query)
        vector_hits = {
            h.memory_id: h.score
            for h in service.index.vector_search(search_filter, query_vector, policy.candidate_pool)
        }
    else:
        partial = True
    vector_ids = set(vector_hits)

    candidate_ids = list(dict.fromkeys([*keyword_hits, *vector_ids]))
    if clock.monotonic() >= deadline:
        partial = True
    memories = [
        m
        for m in service.records.get_many(principal.tenant_id, candidate_ids)
        if _allowed(m, search_filter, as_of)
    ]
    similarities = {
        m.memory_id: vector_hits[m.memory_id] for m in memories if m.memory_id in vector_hits
    }
    keyword_only = [m.memory_id for m in memories if m.memory_id not in vector_hits]
    if query_vector is not None and keyword_only and clock.monotonic() < deadline:
        # keyword hits the vector search did not return: their similarity, from the store
        stored = service.records.get_vectors(principal.tenant_id, keyword_only)
        for memory_id, vector in stored.items():
            if vector.model == query_vector.model and vector.dim == query_vector.dim:
                similarities[memory_id] = float(np.dot(vector.values, query_vector.values))
    elif query_vector is not None and keyword_only:
        partial = True

    if command.min_similarity is not None:
        memories = [
            m for m in memories if similarities.get(m.memory_id, -1.0) >= command.min_similarity
        ]

    floor = float(np.dot(neutral, query_vector.values)) if query_vector is not None else 0.0
    ranked = _rank(service, memories, similarities, keyword_hits, as_of, command, query_time, floor)
    ranked = ranked[: policy.max_results]
    page = [
        _result(memory, score, why)
        for _, score, memory, why in ranked[offset : offset + command.top_k]
    ]
    has_more = offset + command.top_k < len(ranked)
    next_cursor = _encode_cursor(offset + command.top_k, as_of, fingerprint) if has_more else None
    logger.info(
        "retrieve tenant=%s candidates=%d results=%d partial=%s",
        principal.tenant_id,
        len(candidate_ids),
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


def _rank(
    service: MemoryService,
    memories: list[Memory],
    similarities: dict[str, float],
    keyword_hits: dict[str, float],
    as_of: datetime,
    command: RetrieveCommand,
    query_time: TimeRange | None,
    floor: float,
) -> list[tuple[int, float, Memory, dict[str, Any]]]:
    """(tier, score, memory, why) best first; result models are built for the page only."""
    policy = service.policy
    if not memories:
        return []
    sims = [similarities[m.memory_id] for m in memories if m.memory_id in similarities]
    # similarity is scaled from the query's similarity to an empty text (or the weakest
    # candidate, if lower) up to the best candidate
    low, high = (min([*sims, floor]), max(sims)) if sims else (0.0, 1.0)
    spread = high - low if high - low > 1e-6 else 1.0
    best_keyword = max((keyword_hits.get(m.memory_id, 0.0) for m in memories), default=0.0)
    vector_weight = policy.vector_weight if sims else 0.0
    if best_keyword <= 0.0 and sims:
        vector_weight = 1.0

    parts: dict[str, tuple[float | None, float, float, float]] = {}
    for memory in memories:
        similarity = similarities.get(memory.memory_id)
        sim_part = (similarity - low) / spread if similarity is not None else 0.0
        keyword = keyword_hits.get(memory.memory_id, 0.0)
        keyword_part = keyword / best_keyword if best_keyword > 0 else 0.0
        relevance = vector_weight * sim_part + (1.0 - vector_weight) * keyword_part
        parts[memory.memory_id] = (similarity, sim_part, keyword, relevance)
    session_best = _session_best(memories, {k: v[3] for k, v in parts.items()})

    scored: list[tuple[int, float, Memory, dict[str, Any]]] = []
    for memory in memories:
        similarity, sim_part, keyword, own = parts[memory.memory_id]
        keyword_part = keyword / best_keyword if best_keyword > 0 else 0.0
        relevance = own
        why: dict[str, Any] = {
            "similarity": round(similarity, 4) if similarity is not None else None,
            "similarity_scaled": round(sim_part, 4),
            "keyword": round(keyword_part, 4),
            "keyword_bm25": round(keyword, 4),
        }
        session = _session_key(memory)
        if policy.session_pooling > 0.0 and session is not None:
            pooled = session_best[session]
            relevance = (1.0 - policy.session_pooling) * own + policy.session_pooling * pooled
            why.update(own_relevance=round(own, 4), session_relevance=round(pooled, 4))
        why["relevance"] = round(relevance, 4)
        factor = 1.0
        if isinstance(memory, EpisodicMemory):
            age = _age_days(memory, as_of)
            decay = command.time_decay**age
            recency = policy.decay_floor + (1.0 - policy.decay_floor) * decay
            why.update(age_days=round(age, 2), decay=round(decay, 4), recency=round(recency, 4))
            factor *= recency
        else:
            weight = policy.confidence_weights.get(memory.confidence.value, 1.0)
            why.update(kind_boost=policy.semantic_boost, confidence_weight=weight)
            factor *= policy.semantic_boost * weight
        if query_time is not None:
            boost = policy.time_cue_boost if _time_match(memory, query_time) else 1.0
            why["time_boost"] = boost
            factor *= boost
        score = relevance * factor
        why["score"] = round(score, 6)
        # relevant facts come before every episode; the rest is ordered by score
        first = memory.kind == MemoryKind.SEMANTIC and (
            relevance >= policy.semantic_first_min_relevance
        )
        scored.append((0 if first else 1, score, memory, why))

    scored.sort(key=lambda r: (r[0], -r[1], -r[2].occurred_at.timestamp(), r[2].memory_id))
    return scored


def _session_key(memory: Memory) -> str | None:
    if isinstance(memory, EpisodicMemory) and memory.session_id:
        return memory.session_id
    return None


def _session_best(memories: list[Memory], relevance: dict[str, float]) -> dict[str, float]:
    """The best relevance among the candidates of each session."""
    best: dict[str, float] = {}
    for memory in memories:
        session = _session_key(memory)
        if session is not None:
            best[session] = max(best.get(session, 0.0), relevance[memory.memory_id])
    return best


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
