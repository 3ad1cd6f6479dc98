"""Retrieve: hybrid (vector + keyword) search, ranked by ``hindsight.core.ranking``.

The use case runs the two searches within the time budget, reads the records that can
still reach the requested page (re-checking on the source of truth what the index
filtered), and pages the ranked results with an opaque cursor
(``hindsight.core.retrieve_cursor``). Results are computed up to ``policy.max_results``.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import numpy as np

from hindsight.core.access import readable_scopes
from hindsight.core.commands import RetrieveCommand, RetrieveResult, ScoredMemory
from hindsight.core.embedding import embed_query, neutral_vector
from hindsight.core.models import (
    FactStatus,
    HitFacts,
    Memory,
    MemoryKind,
    Principal,
    SearchFilter,
    SemanticMemory,
)
from hindsight.core.policy import Policy
from hindsight.core.ports import Clock, Embedder, RecordStore, SearchIndex
from hindsight.core.ranking import Candidate, Scoring, rank
from hindsight.core.retrieve_cursor import decode_cursor, encode_cursor, fingerprint
from hindsight.core.temporal import parse_query_time
from hindsight.core.text import tokenize

logger = logging.getLogger(__name__)


class RetrieveMemories:
    """Hybrid search over one user's memories, ranked and paged."""

    def __init__(
        self,
        records: RecordStore,
        index: SearchIndex,
        embedder: Embedder,
        clock: Clock,
        policy: Policy,
    ) -> None:
        self.records = records
        self.index = index
        self.embedder = embedder
        self.clock = clock
        self.policy = policy

    def __call__(self, principal: Principal, command: RetrieveCommand) -> RetrieveResult:
        clock, policy = self.clock, self.policy
        # the first call loads the embedding model (seconds); that is start-up, not search,
        # so it happens before the time budget starts
        neutral = neutral_vector(self.embedder)
        deadline = clock.monotonic() + policy.retrieve_budget_seconds
        query_fingerprint = fingerprint(command)
        offset = 0
        as_of = command.as_of or clock.now()
        if command.cursor:
            offset, as_of = decode_cursor(command.cursor, query_fingerprint)

        kinds = frozenset(command.kinds) if command.kinds else None
        statuses = (
            frozenset(command.statuses) if command.statuses else frozenset({FactStatus.APPROVED})
        )
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

        keyword_list = self.index.keyword_search(
            search_filter, command.query, policy.candidate_pool
        )
        keyword_hits = {h.memory_id: h.score for h in keyword_list}
        facts: dict[str, HitFacts | None] = {h.memory_id: h.facts for h in keyword_list}
        query_vector = None
        vector_hits: dict[str, float] = {}  # cosine similarity, as the index computed it
        if clock.monotonic() < deadline:
            query_vector = embed_query(self.embedder, command.query)
            for hit in self.index.vector_search(search_filter, query_vector, policy.candidate_pool):
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
            found = {m.memory_id: m for m in self.records.get_many(principal.tenant_id, memory_ids)}
            for memory_id in memory_ids:
                memory = found.get(memory_id)
                allowed = memory is not None and _allowed(memory, search_filter, as_of)
                fetched[memory_id] = memory if allowed else None

        if all(facts.get(memory_id) is not None for memory_id in candidate_ids):
            # the index described every hit: records are read only for candidates that can
            # still reach the page (see _rank)
            candidates = [Candidate.of_hit(i, facts[i]) for i in candidate_ids]  # type: ignore[arg-type]
        else:
            fetch(candidate_ids)
            candidates = [
                Candidate.of_memory(memory)
                for memory in (fetched[i] for i in candidate_ids)
                if memory is not None
            ]

        similarities = {
            c.memory_id: vector_hits[c.memory_id] for c in candidates if c.memory_id in vector_hits
        }
        keyword_only = [c.memory_id for c in candidates if c.memory_id not in vector_hits]
        if query_vector is not None and keyword_only and clock.monotonic() < deadline:
            # keyword hits the vector search did not return: their similarity, from the store
            stored = self.records.get_vectors(principal.tenant_id, keyword_only)
            for memory_id, vector in stored.items():
                if vector.model == query_vector.model and vector.dim == query_vector.dim:
                    similarities[memory_id] = float(np.dot(vector.values, query_vector.values))
        elif query_vector is not None and keyword_only:
            partial = True

        if command.min_similarity is not None:
            candidates = [
                c
                for c in candidates
                if similarities.get(c.memory_id, -1.0) >= command.min_similarity
            ]

        floor = float(np.dot(neutral, query_vector.values)) if query_vector is not None else 0.0
        wanted = min(offset + command.top_k, policy.max_results)
        ranked, total = rank(
            policy,
            candidates,
            Scoring(
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
            _result(memory, score, parts.why()) for _, score, memory, parts in ranked[offset:wanted]
        ]
        has_more = offset + command.top_k < min(total, policy.max_results)
        next_cursor = (
            encode_cursor(offset + command.top_k, as_of, query_fingerprint) if has_more else None
        )
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


def _allowed(memory: Memory, search_filter: SearchFilter, as_of: datetime) -> bool:
    """Re-check on the source of truth what the index filtered (it may lag behind); an
    episode that occurred after ``as_of`` had not happened yet."""
    if memory.occurred_at > as_of and memory.kind == MemoryKind.EPISODIC:
        return False
    return search_filter.admits(memory)


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
