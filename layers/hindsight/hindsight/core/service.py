"""The application service: one object that entry points call, one method per use case.

It wires the ports to the use-case functions in ``hindsight.core.usecases``;
entry points (Lambda handlers, the CLI, the MCP server) only parse input, call
one of these methods and shape the output.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hindsight.core.commands import (
    ContextCommand,
    ContextResult,
    ListMemoriesCommand,
    ListResult,
    ReflectCommand,
    ReflectResult,
    RetrieveCommand,
    RetrieveResult,
    StoreBatchCommand,
    StoreMemoryCommand,
    StoreOutcome,
)
from hindsight.core.models import Principal
from hindsight.core.ports import (
    Clock,
    Embedder,
    IdGenerator,
    Ports,
    RecordStore,
    Reflector,
    SearchIndex,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Policy:
    """Tunable behaviour, read from settings by the bootstrap."""

    dedup_window_seconds: float = 3_600.0
    retrieve_budget_seconds: float = 5.0
    auto_approve_high_confidence: bool = False
    candidate_pool: int = 100  # how many hits each search returns before fusion
    max_results: int = 200  # how many fused results are ranked (and so can be paged)
    reflect_batch_size: int = 50  # episodes per reflector call
    semantic_boost: float = 1.25
    semantic_first_min_relevance: float = 0.5  # facts at least this relevant rank first
    confidence_weights: dict[str, float] = field(
        default_factory=lambda: {"high": 1.0, "medium": 0.85, "low": 0.6}
    )
    time_cue_boost: float = 1.5
    vector_weight: float = 0.6  # share of vector similarity in relevance; the rest is keyword
    # recency weight of an episode = decay_floor + (1 - decay_floor) * time_decay ** age_days:
    # recency orders equally relevant memories without burying relevant old ones
    decay_floor: float = 0.9
    # relevance' = (1 - session_pooling) * relevance + session_pooling * best relevance among
    # the candidates of the same session (evidence clusters in conversations' sessions)
    session_pooling: float = 0.5
    # an episode whose speaker the query names ("What did Caroline paint?") is boosted;
    # 1.15 was best on LoCoMo (1.1: 0.797, 1.15: 0.803, 1.25: 0.798 recall@10): higher
    # values hurt questions that name the wrong person on purpose
    speaker_boost: float = 1.15


@dataclass
class MemoryService:
    records: RecordStore
    index: SearchIndex
    embedder: Embedder
    reflector: Reflector
    clock: Clock
    ids: IdGenerator
    policy: Policy = field(default_factory=Policy)

    # --- store ---------------------------------------------------------------
    def store(self, principal: Principal, command: StoreMemoryCommand) -> StoreOutcome:
        from hindsight.core.usecases.store import store_memories

        return store_memories(self, principal, [command])[0]

    def store_batch(self, principal: Principal, command: StoreBatchCommand) -> list[StoreOutcome]:
        from hindsight.core.usecases.store import store_memories

        return store_memories(self, principal, command.commands())

    # --- retrieve ------------------------------------------------------------
    def retrieve(self, principal: Principal, command: RetrieveCommand) -> RetrieveResult:
        from hindsight.core.usecases.retrieve import retrieve_memories

        return retrieve_memories(self, principal, command)

    # --- reflect -------------------------------------------------------------
    def reflect(self, principal: Principal, command: ReflectCommand) -> ReflectResult:
        from hindsight.core.usecases.reflect import reflect_on_memories

        return reflect_on_memories(self, principal, command)

    def approve(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        from hindsight.core.usecases.review import review_fact

        return review_fact(self, principal, memory_id, approve=True)

    def reject(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        from hindsight.core.usecases.review import review_fact

        return review_fact(self, principal, memory_id, approve=False)

    # --- context -------------------------------------------------------------
    def context(self, principal: Principal, command: ContextCommand) -> ContextResult:
        from hindsight.core.usecases.context import build_context

        return build_context(self, principal, command)

    # --- read / forget -------------------------------------------------------
    def list_memories(self, principal: Principal, command: ListMemoriesCommand) -> ListResult:
        from hindsight.core.usecases.browse import list_memories

        return list_memories(self, principal, command)

    def get_memory(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        from hindsight.core.usecases.browse import get_memory

        return get_memory(self, principal, memory_id)

    def delete_memory(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        from hindsight.core.usecases.forget import forget_memory

        return forget_memory(self, principal, memory_id)

    def erase_user(self, principal: Principal, user_id: str) -> dict[str, Any]:
        from hindsight.core.usecases.forget import erase_user

        return erase_user(self, principal, user_id)

    def reindex(
        self, re_embed: bool = False, progress: Callable[[int, int], None] | None = None
    ) -> dict[str, Any]:
        """Operator task (no principal): rebuild the index, optionally re-embedding."""
        from hindsight.core.usecases.maintenance import reindex_memories

        return reindex_memories(self, re_embed=re_embed, progress=progress)

    @property
    def ports(self) -> Ports:
        """The adapters this service was built from: for operators, tests and benchmarks.

        Entry points never reach through the facade; what they need is a method here.
        """
        return Ports(
            records=self.records,
            index=self.index,
            embedder=self.embedder,
            reflector=self.reflector,
            clock=self.clock,
            ids=self.ids,
        )

    def now(self) -> datetime:
        """The service clock's current time (aware UTC)."""
        return self.clock.now()

    def warm_up(self) -> None:
        """Load the embedding model now rather than on the first request."""
        self.embedder.embed_query("warm up")

    def users_with_episodes_since(self, since: datetime) -> list[tuple[str, str]]:
        """(tenant_id, user_id) of every user with episodes created after ``since``."""
        return list(self.records.users_with_episodes_since(since))

    def health(self) -> dict[str, Any]:
        return {
            "status": "success",
            "embedding_model": self.embedder.model_name,
            "embedding_dimension": self.embedder.dimension,
            "reflector": self.reflector.label,
            "indexed_documents": self.index.count(),
        }
