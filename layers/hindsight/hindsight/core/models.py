"""Domain models: episodic and semantic memories, principals, search documents.

These are the core's own models. HTTP request/response models live in
``hindsight.api.schemas`` and are mapped to and from these explicitly.
All datetimes are timezone-aware UTC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

GLOBAL_SCOPE = "global"


class MemoryKind(StrEnum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


class Confidence(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    def raised(self) -> Confidence:
        """One step more confident (a repeated fact); high stays high."""
        return {Confidence.LOW: Confidence.MEDIUM}.get(self, Confidence.HIGH)


class FactStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    SUPERSEDED = "superseded"
    # not a fact's status: what a list filter (status=archived) and the record stores'
    # status column name an archived memory by (hindsight.core.lifecycle)
    ARCHIVED = "archived"


class FactCategory(StrEnum):
    """What kind of durable knowledge a semantic memory holds."""

    FACT = "fact"
    PREFERENCE = "preference"
    CONSTRAINT = "constraint"
    TASK = "task"
    MOOD = "mood"


def utc(dt: datetime) -> datetime:
    """Normalise a datetime to aware UTC (naive values are taken as UTC)."""
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


class TimeRange(BaseModel):
    """A span of time an event refers to, e.g. "next week" resolved to dates."""

    model_config = ConfigDict(frozen=True)

    start: datetime
    end: datetime
    expression: str = Field(description="the words in the text that named this time")

    @field_validator("start", "end")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return utc(value)

    def overlaps(self, other: TimeRange) -> bool:
        return self.start < other.end and other.start < self.end

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


class _MemoryBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    memory_id: str
    tenant_id: str
    user_id: str
    scope: str = GLOBAL_SCOPE
    content: str
    category: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    occurred_at: datetime
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    # access tracking (hindsight.core.hit_log): how often retrieval returned the memory and
    # when last; written by the record store's record_hits only, never by an update
    hit_count: int = 0
    last_hit_at: datetime | None = None
    # lifecycle (hindsight.core.lifecycle): a pinned memory is never archived; an archived
    # one is kept in the record store but left out of the search index until restored
    pinned: bool = False
    archived_at: datetime | None = None

    @field_validator(
        "occurred_at", "created_at", "updated_at", "expires_at", "last_hit_at", "archived_at"
    )
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return None if value is None else utc(value)

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


class EpisodicMemory(_MemoryBase):
    """One interaction event: what was said or happened, when, by whom."""

    kind: Literal[MemoryKind.EPISODIC] = MemoryKind.EPISODIC
    session_id: str | None = None
    speaker: str | None = None
    participants: list[str] = Field(default_factory=list)
    emotion: str | None = None
    agent_action: str | None = None
    outcome: str | None = None
    event_time: list[TimeRange] = Field(
        default_factory=list,
        description="time expressions in the content resolved against occurred_at",
    )
    content_hash: str = ""
    context: str | None = Field(
        default=None,
        description="the turn before this one in its session, set by store: searched "
        "together with the content, never returned as content",
    )
    search_keys: list[str] = Field(
        default_factory=list,
        description="extra keyword-search keys derived at store time (a KeyExpander: what "
        "the memory is about, in English and Chinese); indexed beside the text, never embedded",
    )


class SemanticMemory(_MemoryBase):
    """A durable fact, preference, constraint, task or mood pattern from reflection."""

    kind: Literal[MemoryKind.SEMANTIC] = MemoryKind.SEMANTIC
    confidence: Confidence = Confidence.MEDIUM
    status: FactStatus = FactStatus.PENDING
    topic: str = Field(
        default="",
        description="normalised key of what the fact is about; facts with one topic and "
        "different content contradict each other",
    )
    source_memory_ids: list[str] = Field(default_factory=list)
    supersedes: list[str] = Field(default_factory=list)
    superseded_by: str | None = None
    reflector: str = Field(default="", description="which reflector produced the fact")
    mention_count: int = 1
    valid_from: datetime | None = Field(
        default=None, description="when it began to hold: its earliest source episode"
    )
    valid_until: datetime | None = Field(
        default=None,
        description="when it stopped holding: when the fact or episode that superseded it "
        "began to hold",
    )

    @field_validator("valid_from", "valid_until")
    @classmethod
    def _aware_validity(cls, value: datetime | None) -> datetime | None:
        return None if value is None else utc(value)

    def valid_at(self, moment: datetime) -> bool:
        """Whether the fact held at ``moment`` (a superseded one until it was replaced)."""
        start = self.valid_from or self.occurred_at
        if start > moment:
            return False
        if self.status == FactStatus.SUPERSEDED:
            return self.valid_until is not None and moment < self.valid_until
        return self.valid_until is None or moment < self.valid_until


Memory = Annotated[EpisodicMemory | SemanticMemory, Field(discriminator="kind")]


def listed_status(memory: EpisodicMemory | SemanticMemory) -> FactStatus | None:
    """The status a list filters on: ``archived`` for an archived memory, else a fact's
    review status (None for a live episode)."""
    if memory.archived_at is not None:
        return FactStatus.ARCHIVED
    return memory.status if isinstance(memory, SemanticMemory) else None


class Principal(BaseModel):
    """Who is calling: the tenant an API key maps to and the scopes it may use."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    key_id: str = "anonymous"
    read_scopes: frozenset[str] = frozenset({"*"})
    write_scopes: frozenset[str] = frozenset({"*"})
    default_scope: str = GLOBAL_SCOPE
    # this key's own secrets policy ("redact", "refuse", "off"); None: the deployment's
    secrets: str | None = None

    def can_read(self, scope: str) -> bool:
        return scope == GLOBAL_SCOPE or "*" in self.read_scopes or scope in self.read_scopes

    def can_write(self, scope: str) -> bool:
        return "*" in self.write_scopes or scope in self.write_scopes


Span = tuple[int, int]  # [start, end) character offsets into a memory's content


@dataclass(frozen=True)
class StoredVector:
    """An embedding together with the model that made it (never mix vector spaces).

    A memory short enough for the model's window has one vector: ``values`` of shape
    ``(dim,)`` and no ``spans``. A long memory is searched by chunks (``core/chunking.py``):
    ``values`` has one row per chunk, shape ``(len(spans), dim)``, and ``spans`` holds each
    chunk's character span of the content, in order.
    """

    model: str
    # float32 rows of unit length; a session turn's row mixes two (core/embedding.py), so
    # its length is at most 1 and its inner product with a query is the mix of cosines
    values: np.ndarray
    spans: tuple[Span, ...] = ()

    def __post_init__(self) -> None:
        expected = 1 if not self.spans else 2
        if self.values.ndim != expected or (self.spans and len(self.values) != len(self.spans)):
            raise ValueError(
                f"a vector with {len(self.spans)} chunk spans must have "
                f"{'one row per span' if self.spans else 'one dimension'}; "
                f"got shape {self.values.shape}"
            )

    @property
    def dim(self) -> int:
        return int(self.values.shape[-1])

    @property
    def chunked(self) -> bool:
        return bool(self.spans)

    @property
    def rows(self) -> np.ndarray:
        """Every chunk's vector as a ``(chunks, dim)`` matrix (one row when not chunked)."""
        return self.values.reshape(-1, self.values.shape[-1])

    def similarity(self, query: np.ndarray) -> float:
        """Cosine similarity of the best-matching chunk to a (unit) query vector."""
        return float(np.max(self.rows @ np.asarray(query, dtype=np.float32)))


@dataclass(frozen=True)
class IndexChunk:
    """One searchable piece of a long memory: its text, vector and span of the content."""

    text: str
    values: np.ndarray  # (dim,)
    span: Span


@dataclass(frozen=True)
class IndexDocument:
    """What a search index holds for one memory: text, vector and filter fields.

    A long memory also has ``chunks`` (see ``core/chunking.py``): the index searches each
    chunk's text and vector and scores the memory by its best chunk, so it still comes back
    once. ``text`` is then the whole memory's text and ``vector`` holds every chunk's row.
    """

    memory_id: str
    tenant_id: str
    user_id: str
    kind: MemoryKind
    scope: str
    text: str
    vector: StoredVector
    occurred_at: datetime
    created_at: datetime
    category: str | None = None
    emotion: str | None = None
    status: FactStatus | None = None
    expires_at: datetime | None = None
    event_start: datetime | None = None
    event_end: datetime | None = None
    session_id: str | None = None
    chunks: tuple[IndexChunk, ...] = ()
    # store-time search keys (EpisodicMemory.search_keys): keyword-searched with every piece
    keys: tuple[str, ...] = ()

    def pieces(self) -> list[tuple[int, str, np.ndarray, Span | None]]:
        """(chunk number, text, vector, span) of everything searchable: one piece per chunk,
        or the whole memory (span None) when it is not chunked."""
        if not self.chunks:
            return [(0, self.text, np.asarray(self.vector.values, dtype=np.float32), None)]
        return [
            (number, chunk.text, np.asarray(chunk.values, dtype=np.float32), chunk.span)
            for number, chunk in enumerate(self.chunks)
        ]


@dataclass(frozen=True)
class SearchFilter:
    """Filters every search applies inside the index, tenant and user always."""

    tenant_id: str
    user_id: str
    scopes: frozenset[str] | None = None  # None: every scope
    kinds: frozenset[MemoryKind] | None = None
    categories: frozenset[str] | None = None
    emotions: frozenset[str] | None = None
    statuses: frozenset[FactStatus] | None = None  # applies to semantic memories only
    since: datetime | None = None  # occurred_at >= since
    until: datetime | None = None  # occurred_at < until
    now: datetime | None = None  # exclude documents with expires_at <= now
    session_id: str | None = None

    def admits(self, item: IndexDocument | Memory) -> bool:
        """Whether an index document, or the memory it was made from, passes this filter.

        The one rule every index applies (in its own query language) and retrieve
        re-checks on the source of truth, which the index may lag behind. Statuses
        apply to facts only; emotions and sessions belong to episodes, so a filter on
        either leaves facts out.
        """
        if item.tenant_id != self.tenant_id or item.user_id != self.user_id:
            return False
        if self.scopes is not None and item.scope not in self.scopes:
            return False
        if self.kinds is not None and item.kind not in self.kinds:
            return False
        if self.categories is not None and item.category not in self.categories:
            return False
        if self.emotions is not None and getattr(item, "emotion", None) not in self.emotions:
            return False
        if (
            self.statuses is not None
            and item.kind == MemoryKind.SEMANTIC
            and getattr(item, "status", None) not in self.statuses
        ):
            return False
        if self.since is not None and item.occurred_at < self.since:
            return False
        if self.until is not None and item.occurred_at >= self.until:
            return False
        if self.now is not None and item.expires_at is not None and item.expires_at <= self.now:
            return False
        return self.session_id is None or getattr(item, "session_id", None) == self.session_id


@dataclass(frozen=True, slots=True)
class HitFacts:
    """What an index holds of a hit besides its score: enough to bound the hit's final rank.

    With these for every candidate, retrieve reads from the record store only the
    candidates that can still reach the requested page (see ``core/retrieval/ranking.py``).
    """

    kind: MemoryKind
    session_id: str | None = None


@dataclass(frozen=True)
class SearchHit:
    memory_id: str
    score: float  # cosine similarity for vector search, BM25-like score for keyword search
    facts: HitFacts | None = None  # None: the index does not know them
    # a chunked memory's best chunk: its number and character span of the content
    chunk: int | None = None
    span: Span | None = None


@dataclass(frozen=True)
class Page:
    items: list[Any]
    next_cursor: str | None = None

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None


@dataclass(frozen=True)
class ListQuery:
    """Filters for listing a user's memories (newest first)."""

    kinds: frozenset[MemoryKind] | None = None
    statuses: frozenset[FactStatus] | None = None
    categories: frozenset[str] | None = None
    scopes: frozenset[str] | None = None
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    created_after: datetime | None = None  # created_at > this (reflection cursor)
    include_expired: bool = False
    now: datetime | None = None
    oldest_first: bool = False

    def admits(self, memory: Memory) -> bool:
        """Whether a memory passes this query's filters (a status filter selects facts)."""
        if self.kinds is not None and memory.kind not in self.kinds:
            return False
        if self.statuses is not None and listed_status(memory) not in self.statuses:
            return False
        if self.categories is not None and memory.category not in self.categories:
            return False
        if self.scopes is not None and memory.scope not in self.scopes:
            return False
        if self.session_id is not None and getattr(memory, "session_id", None) != self.session_id:
            return False
        if self.since is not None and memory.occurred_at < self.since:
            return False
        if self.until is not None and memory.occurred_at >= self.until:
            return False
        if self.created_after is not None and memory.created_at <= self.created_after:
            return False
        expired = self.now is not None and memory.is_expired(self.now)
        return self.include_expired or not expired


@dataclass(frozen=True)
class ExtractedFact:
    """One item a reflector distilled from episodic memories."""

    content: str
    category: FactCategory
    confidence: Confidence
    source_memory_ids: list[str]
    topic: str = ""


@dataclass(frozen=True)
class ReflectorUsage:
    """What an LLM reflector spent on one reflect call, and what went wrong (the facts of
    a failed call are the offline extractor's)."""

    calls: int = 0  # LLM calls, retries included
    input_tokens: int = 0
    output_tokens: int = 0
    token_budget: int | None = None  # tokens per reflection run; None: no limit
    budget_exhausted: bool = False
    failures: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReflectionOutput:
    facts: list[ExtractedFact]
    reflector: str  # label, e.g. "rule-based (offline, no LLM)" or "bedrock:<model id>"
    usage: ReflectorUsage | None = None  # set by LLM reflectors


@dataclass(frozen=True)
class SessionSummary:
    """Structured summary of a session's older turns (working memory)."""

    intent: str = ""
    entities: list[str] = field(default_factory=list)
    open_tasks: list[str] = field(default_factory=list)
    mood: str = ""
    summarizer: str = ""
