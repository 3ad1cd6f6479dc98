"""Reflect: distil a user's new episodic memories into semantic memories (facts).

Episodes created after the user's reflection cursor (or ``since``) are grouped by
scope, in chunks of ``policy.reflect_batch_size`` in time order, and handed to the
reflector. Each extracted fact is merged with the user's existing facts:

* same topic (or near-identical wording) and the same meaning → a repeat: confidence
  rises one step, the new sources are added, mention_count grows;
* same topic, different content → a contradiction: the new fact supersedes the old
  one, which is kept with status ``superseded`` and linked both ways;
* otherwise a new fact, ``pending`` review unless policy auto-approves high confidence.

With ``dry_run`` nothing is written and the cursor stays where it was.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from hindsight.core.commands import ReflectCommand, ReflectResult
from hindsight.core.errors import ForbiddenError
from hindsight.core.models import (
    Confidence,
    EpisodicMemory,
    ExtractedFact,
    FactStatus,
    ListQuery,
    MemoryKind,
    Principal,
    SemanticMemory,
    StoredVector,
)
from hindsight.core.text import content_hash
from hindsight.core.usecases.common import embed_documents, index_document
from hindsight.core.views import memory_view

if TYPE_CHECKING:
    from hindsight.core.service import MemoryService

logger = logging.getLogger(__name__)

REFLECTION_CURSOR = "reflection"
REPEAT_SIMILARITY = 0.93  # cosine above which two facts say the same thing
PAGE = 500  # large pages: fewer requests on stores that filter after reading


def _list_all(service: MemoryService, tenant_id: str, user_id: str, query: ListQuery) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    while True:
        page = service.records.list(tenant_id, user_id, query, PAGE, cursor)
        items.extend(page.items)
        if not page.next_cursor:
            return items
        cursor = page.next_cursor


class _Merger:
    """Holds the user's live facts and decides create / repeat / supersede for new ones."""

    def __init__(self, service: MemoryService, principal: Principal, user_id: str, now: datetime):
        self.service = service
        self.principal = principal
        self.user_id = user_id
        self.now = now
        live = _list_all(
            service,
            principal.tenant_id,
            user_id,
            ListQuery(
                kinds=frozenset({MemoryKind.SEMANTIC}),
                statuses=frozenset({FactStatus.PENDING, FactStatus.APPROVED}),
                now=now,
            ),
        )
        self.facts: dict[str, SemanticMemory] = {f.memory_id: f for f in live}
        stored = service.records.get_vectors(principal.tenant_id, list(self.facts))
        self.vectors: dict[str, StoredVector] = dict(stored)
        self.created: dict[str, SemanticMemory] = {}
        self.updated: dict[str, SemanticMemory] = {}
        self.superseded: dict[str, SemanticMemory] = {}
        self.new_vectors: dict[str, StoredVector] = {}

    def live_facts(self, scope: str) -> list[SemanticMemory]:
        return [f for f in self.facts.values() if f.scope == scope]

    def _most_similar(
        self, scope: str, vector: StoredVector
    ) -> tuple[SemanticMemory | None, float]:
        best, best_sim = None, -1.0
        for fact in self.live_facts(scope):
            other = self.vectors.get(fact.memory_id)
            if other is None or other.model != vector.model or other.dim != vector.dim:
                continue
            sim = float(np.dot(other.values, vector.values))
            if sim > best_sim:
                best, best_sim = fact, sim
        return best, best_sim

    def merge(
        self,
        scope: str,
        extracted: ExtractedFact,
        vector: StoredVector,
        episodes: dict[str, EpisodicMemory],
        reflector: str,
    ) -> None:
        same_topic = [
            f for f in self.live_facts(scope) if extracted.topic and f.topic == extracted.topic
        ]
        similar, similarity = self._most_similar(scope, vector)
        repeat: SemanticMemory | None = None
        for fact in same_topic:
            other = self.vectors.get(fact.memory_id)
            same_text = content_hash(fact.content) == content_hash(extracted.content)
            close = other is not None and float(np.dot(other.values, vector.values)) >= (
                REPEAT_SIMILARITY
            )
            if same_text or close:
                repeat = fact
                break
        # near-identical wording is a repeat unless the topics say otherwise
        topic_agrees = not same_topic or (similar is not None and similar in same_topic)
        if (
            repeat is None
            and similar is not None
            and similarity >= REPEAT_SIMILARITY
            and (topic_agrees or not similar.topic)
        ):
            repeat = similar
        if repeat is not None:
            self._repeat(repeat, extracted, episodes)
            return
        contradicted = same_topic
        fact = self._create(scope, extracted, vector, episodes, reflector, contradicted)
        for old in contradicted:
            old_updated = old.model_copy(
                update={
                    "status": FactStatus.SUPERSEDED,
                    "superseded_by": fact.memory_id,
                    "updated_at": self.now,
                }
            )
            self.facts.pop(old.memory_id, None)
            self.updated.pop(old.memory_id, None)
            if old.memory_id in self.created:
                self.created[old.memory_id] = old_updated  # made and replaced in one run
            else:
                self.superseded[old.memory_id] = old_updated

    def _repeat(
        self, fact: SemanticMemory, extracted: ExtractedFact, episodes: dict[str, EpisodicMemory]
    ) -> None:
        new_sources = [s for s in extracted.source_memory_ids if s not in fact.source_memory_ids]
        if not new_sources:
            return  # the same episodes said it again: nothing new
        latest = max([fact.occurred_at] + [episodes[s].occurred_at for s in new_sources])
        confidence = max(fact.confidence.raised(), extracted.confidence, key=_confidence_rank)
        changed = fact.model_copy(
            update={
                "source_memory_ids": [*fact.source_memory_ids, *new_sources],
                "confidence": confidence,
                "mention_count": fact.mention_count + 1,
                "occurred_at": latest,
                "updated_at": self.now,
            }
        )
        self.facts[fact.memory_id] = changed
        if fact.memory_id in self.created:
            self.created[fact.memory_id] = changed
        else:
            self.updated[fact.memory_id] = changed

    def _create(
        self,
        scope: str,
        extracted: ExtractedFact,
        vector: StoredVector,
        episodes: dict[str, EpisodicMemory],
        reflector: str,
        contradicted: Sequence[SemanticMemory],
    ) -> SemanticMemory:
        policy = self.service.policy
        approved = policy.auto_approve_high_confidence and extracted.confidence == Confidence.HIGH
        fact = SemanticMemory(
            memory_id=self.service.ids.new_id("fact"),
            tenant_id=self.principal.tenant_id,
            user_id=self.user_id,
            scope=scope,
            content=extracted.content,
            category=extracted.category.value,
            occurred_at=max(episodes[s].occurred_at for s in extracted.source_memory_ids),
            created_at=self.now,
            updated_at=self.now,
            confidence=extracted.confidence,
            status=FactStatus.APPROVED if approved else FactStatus.PENDING,
            topic=extracted.topic,
            source_memory_ids=list(dict.fromkeys(extracted.source_memory_ids)),
            supersedes=[f.memory_id for f in contradicted],
            reflector=reflector,
        )
        self.facts[fact.memory_id] = fact
        self.vectors[fact.memory_id] = vector
        self.new_vectors[fact.memory_id] = vector
        self.created[fact.memory_id] = fact
        return fact


def _confidence_rank(confidence: Confidence) -> int:
    return {Confidence.LOW: 0, Confidence.MEDIUM: 1, Confidence.HIGH: 2}[confidence]


def reflect_on_memories(
    service: MemoryService, principal: Principal, command: ReflectCommand
) -> ReflectResult:
    tenant_id, user_id = principal.tenant_id, command.user_id
    now = service.clock.now()
    since = command.since or service.records.get_cursor(tenant_id, user_id, REFLECTION_CURSOR)
    episodes: list[EpisodicMemory] = _list_all(
        service,
        tenant_id,
        user_id,
        ListQuery(
            kinds=frozenset({MemoryKind.EPISODIC}),
            created_after=since,
            now=now,
            oldest_first=True,
        ),
    )
    readable = [e for e in episodes if principal.can_read(e.scope)]
    if episodes and not readable:
        raise ForbiddenError(
            "this API key may not read any scope this user's new memories are in; "
            "reflect with a key that can read them"
        )

    by_scope: dict[str, list[EpisodicMemory]] = defaultdict(list)
    for episode in readable:
        by_scope[episode.scope].append(episode)

    merger = _Merger(service, principal, user_id, now)
    batch = max(1, service.policy.reflect_batch_size)
    for scope, scoped in by_scope.items():
        scoped.sort(key=lambda e: (e.occurred_at, e.memory_id))
        for start in range(0, len(scoped), batch):
            chunk = scoped[start : start + batch]
            output = service.reflector.reflect(user_id, chunk, merger.live_facts(scope))
            if not output.facts:
                continue
            by_id = {e.memory_id: e for e in chunk}
            vectors = embed_documents(service.embedder, [f.content for f in output.facts])
            for extracted, vector in zip(output.facts, vectors, strict=True):
                merger.merge(scope, extracted, vector, by_id, output.reflector)

    cursor = max((e.created_at for e in readable), default=since)
    if not command.dry_run:
        _write(service, merger)
        if cursor is not None and readable:
            service.records.set_cursor(tenant_id, user_id, REFLECTION_CURSOR, cursor)

    created = list(merger.created.values())
    logger.info(
        "reflection done tenant=%s episodes=%d created=%d updated=%d superseded=%d dry_run=%s",
        tenant_id,
        len(readable),
        len(created),
        len(merger.updated),
        len(merger.superseded),
        command.dry_run,
    )
    return ReflectResult(
        reflector=service.reflector.label,
        episodes_considered=len(readable),
        created=[memory_view(f) for f in created],
        updated=[memory_view(f) for f in merger.updated.values()],
        superseded=[memory_view(f) for f in merger.superseded.values()],
        pending=[
            memory_view(f)
            for f in [*created, *merger.updated.values()]
            if f.status == FactStatus.PENDING
        ],
        dry_run=command.dry_run,
        cursor=cursor if not command.dry_run else since,
    )


def _write(service: MemoryService, merger: _Merger) -> None:
    """Persist created, updated and superseded facts, then index them."""
    documents = []
    for fact in merger.created.values():
        vector = merger.new_vectors[fact.memory_id]
        service.records.put(fact, vector)
        documents.append(index_document(fact, vector))
    changed = [*merger.updated.values(), *merger.superseded.values()]
    for fact in changed:
        service.records.update(fact)
    stored = service.records.get_vectors(merger.principal.tenant_id, [f.memory_id for f in changed])
    documents += [index_document(f, stored[f.memory_id]) for f in changed if f.memory_id in stored]
    if documents:
        service.index.upsert(documents)
