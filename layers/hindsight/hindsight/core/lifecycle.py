"""Forgetting by use: the rules that weigh and archive memories nobody retrieves.

- ``last_used``: when a memory was last useful, its last hit (``hit_count``/``last_hit_at``,
  core/hit_log.py) or, never hit, when it was stored (``created_at``: an imported history
  is not stale the day it arrives, whatever its ``occurred_at``).
- ``use_weight``: an episode unused for ``Policy.unused_after_days`` (30) ranks with
  ``Policy.unused_weight`` (0.97) on top of its recency; facts and pinned memories keep 1.
- ``archivable``: an episode unused for ``Policy.archive_after_days`` (90) is archived by
  the maintenance run (core/usecases/archive.py), unless it is pinned, already archived,
  or a source of an approved fact (``protected``). Facts are never archived.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import numpy as np

from hindsight.core.list_all import list_all
from hindsight.core.models import EpisodicMemory, FactStatus, ListQuery, Memory, SemanticMemory
from hindsight.core.policy import Policy

DAY_SECONDS = 86_400.0


def last_used(memory: Memory) -> datetime:
    if memory.last_hit_at is not None and memory.last_hit_at > memory.created_at:
        return memory.last_hit_at
    return memory.created_at


def unused_days(memory: Memory, now: datetime) -> float:
    return max(0.0, (now - last_used(memory)).total_seconds() / DAY_SECONDS)


def use_weight(memory: Memory, now: datetime, policy: Policy) -> float:
    """The ranking weight of a memory's use: ``unused_weight`` for a stale episode."""
    if not isinstance(memory, EpisodicMemory) or memory.pinned:
        return 1.0
    if unused_days(memory, now) >= policy.unused_after_days:
        return policy.unused_weight
    return 1.0


def protected_sources(facts: Iterable[Memory]) -> set[str]:
    """Ids of the episodes approved facts were drawn from (never archived)."""
    return {
        source
        for fact in facts
        if isinstance(fact, SemanticMemory) and fact.status == FactStatus.APPROVED
        for source in fact.source_memory_ids
    }


def archivable(memory: Memory, now: datetime, policy: Policy, protected: set[str]) -> bool:
    """Whether the maintenance run archives this memory now."""
    return (
        isinstance(memory, EpisodicMemory)
        and not memory.pinned
        and memory.archived_at is None
        and memory.memory_id not in protected
        and not memory.is_expired(now)
        and unused_days(memory, now) >= policy.archive_after_days
    )


def archived_hits(search: Any, pool: int) -> dict[str, float]:
    """``include_archived``: the archived memories most similar to the query, by cosine.

    Archived memories are not in the search index, so this reads the user's archived
    memories and their stored vectors from the record store and compares them here (the
    slower path, proportional to the archive); ``search`` is the retrieve use case's
    search (its records, tenant, command, filter and query vector). A chunked memory
    scores by its best chunk. Returns up to ``pool`` (memory id, similarity) pairs.
    """
    records = search.use_case.records
    query = ListQuery(
        statuses=frozenset({FactStatus.ARCHIVED}),
        scopes=search.filter.scopes,
        kinds=search.filter.kinds,
        now=search.filter.now,
    )
    archived = list_all(records, search.tenant_id, search.command.user_id, query)
    vectors = records.get_vectors(search.tenant_id, [m.memory_id for m in archived])
    # scored as the vector search scores (by the centred query, if centred: retrieve.py)
    target = np.asarray(search.searched(search.query_vector).values, dtype=np.float32)
    scores = {
        memory_id: float(np.max(np.atleast_2d(vector.values) @ target))
        for memory_id, vector in vectors.items()
        if vector.model == search.query_vector.model
    }
    best = sorted(scores.items(), key=lambda item: -item[1])[:pool]
    return dict(best)
