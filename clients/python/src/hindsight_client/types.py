"""Typed results: frozen dataclasses built from the server's JSON answers.

Times arrive as ISO 8601 strings and become aware ``datetime`` objects; nested objects
become their dataclasses. Fields the server adds later are kept in ``raw`` (the whole
JSON object as received), so an older client never loses data.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, Union

T = TypeVar("T")


def _raw() -> Any:
    """The ``raw`` field: the JSON object as received (not shown, not compared)."""
    return field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class TimeRange:
    """A span of time an event refers to ("next week" resolved to dates)."""

    start: datetime
    end: datetime
    expression: str = ""


@dataclass(frozen=True)
class StoreResult:
    """What storing one memory did: ``success`` (stored) or ``skipped`` (a duplicate)."""

    status: str
    memory_id: str
    reason: str | None = None
    event_time: list[TimeRange] = field(default_factory=list)
    raw: Mapping[str, Any] = _raw()

    @property
    def duplicate(self) -> bool:
        """True when the same content was already stored within the dedup window."""
        return self.status == "skipped"


@dataclass(frozen=True)
class RetrievedMemory:
    """One retrieval result: the memory, its ``score`` and ``why`` (the parts of the score)."""

    memory_id: str
    kind: str
    content: str
    score: float
    why: dict[str, Any] = field(default_factory=dict)
    category: str | None = None
    emotion: str | None = None
    confidence: str | None = None
    scope: str = "global"
    session_id: str | None = None
    speaker: str | None = None
    occurred_at: datetime | None = None
    created_at: datetime | None = None
    expires_at: datetime | None = None
    event_time: list[TimeRange] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    status: str | None = None
    source_memory_ids: list[str] | None = None
    supersedes: list[str] | None = None
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class RetrievePage:
    """One page of retrieval results; pass ``next_cursor`` as ``cursor`` for the next."""

    results: list[RetrievedMemory]
    has_more: bool
    next_cursor: str | None = None
    partial: bool = False
    query_time: TimeRange | None = None
    # the people the query asks about that no memory of the user mentions (then no result)
    unknown_names: list[str] = field(default_factory=list)
    raw: Mapping[str, Any] = _raw()

    def __iter__(self) -> Iterator[RetrievedMemory]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)


@dataclass(frozen=True)
class Memory:
    """A stored memory as the API shows it: episodic (an event) or semantic (a fact)."""

    memory_id: str
    kind: str
    content: str
    user_id: str | None = None
    scope: str = "global"
    category: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    occurred_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    expires_at: datetime | None = None
    # episodic
    session_id: str | None = None
    speaker: str | None = None
    participants: list[str] = field(default_factory=list)
    emotion: str | None = None
    agent_action: str | None = None
    outcome: str | None = None
    event_time: list[TimeRange] = field(default_factory=list)
    # semantic
    confidence: str | None = None
    status: str | None = None
    topic: str | None = None
    source_memory_ids: list[str] = field(default_factory=list)
    supersedes: list[str] = field(default_factory=list)
    superseded_by: str | None = None
    reflector: str | None = None
    mention_count: int | None = None
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class MemoryPage:
    """One page of a user's memories; pass ``next_cursor`` as ``cursor`` for the next."""

    results: list[Memory]
    has_more: bool
    next_cursor: str | None = None
    raw: Mapping[str, Any] = _raw()

    def __iter__(self) -> Iterator[Memory]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)


@dataclass(frozen=True)
class ContextResult:
    """The working-memory prompt block (``context``) and what went into it."""

    context: str
    tokens: int
    budget_tokens: int
    truncated: bool = False
    recent_turns: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    facts: list[dict[str, Any]] = field(default_factory=list)
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class ReflectResult:
    """What a reflection did: facts created, updated, superseded, and those pending review."""

    reflector: str
    episodes_considered: int
    dry_run: bool = False
    created: list[Memory] = field(default_factory=list)
    updated: list[Memory] = field(default_factory=list)
    superseded: list[Memory] = field(default_factory=list)
    pending: list[Memory] = field(default_factory=list)
    cursor: datetime | None = None
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class DeleteResult:
    """A forgotten memory, and the facts that went with it or lost it as a source."""

    memory_id: str
    deleted_facts: list[str] = field(default_factory=list)
    updated_facts: list[str] = field(default_factory=list)
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class EraseResult:
    """A user erased: how many records were deleted."""

    user_id: str
    deleted: int
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class KernelProbe:
    """One kernel path as the server's start-up probe measured it (CPU time, one thread)."""

    kernel: str
    single_ms: float
    batch_ms: float
    min_cosine: float  # worst cosine to the reference engine's vectors


@dataclass(frozen=True)
class EmbeddingEngine:
    """What runs the embedding model on the server: ``engine`` names the model, its runtime
    and the CPU's best int8 path; ``kernel`` the ONNX engine's kernel path ("int8",
    "fp32", or one for single texts and one for batches; None for other engines or before
    the model loads), ``chosen_by`` how it was chosen ("probe", "cache", "setting" or
    "rule"), ``cpu_features`` the CPU's SIMD and int8 dot-product flags, ``probe`` the
    measurement it was chosen by."""

    engine: str
    kernel: str | None = None
    chosen_by: str | None = None
    cpu_features: list[str] = field(default_factory=list)
    probe: list[KernelProbe] | None = None
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class Health:
    """The server's embedding model, what runs it, the reflector and the index size (of
    the caller's tenant); None when the request carried no key (the server then tells
    only that it is up), ``embedding_engine`` also when the server does not say."""

    embedding_model: str | None = None
    embedding_dimension: int | None = None
    embedding_engine: EmbeddingEngine | None = None
    reflector: str | None = None
    indexed_documents: int | None = None
    raw: Mapping[str, Any] = _raw()


# --- JSON -> dataclasses --------------------------------------------------------------
def parse_datetime(value: str) -> datetime:
    """An ISO 8601 string (``Z`` or an offset) as a datetime."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return datetime.fromisoformat(text)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    found = _HINTS.get(cls)
    if found is None:
        module = sys.modules[cls.__module__]
        found = typing.get_type_hints(cls, vars(module))
        _HINTS[cls] = found
    return found


def _convert(kind: Any, value: Any) -> Any:
    """``value`` (decoded JSON) as the annotated ``kind``, as far as it can be."""
    if value is None:
        return None
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        return _convert(inner[0], value) if len(inner) == 1 else value
    if origin is list and isinstance(value, list):
        (item,) = typing.get_args(kind) or (Any,)
        return [_convert(item, v) for v in value]
    if kind is datetime and isinstance(value, str):
        return parse_datetime(value)
    if dataclasses.is_dataclass(kind) and isinstance(value, Mapping):
        return from_json(kind, value)  # type: ignore[arg-type]
    return value


@dataclass(frozen=True)
class DocumentResult:
    """What storing a document did: ``success`` (a new memory), ``updated`` (the memory of
    its document id replaced) or ``unchanged`` (the same text was already stored)."""

    status: str
    memory_id: str
    document_id: str
    file_name: str
    content_type: str = ""
    characters: int = 0
    chunks: int | None = None
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class JobStatus:
    """How a write accepted as a job is doing (``GET /v1/jobs/{job_id}``): ``state`` is
    pending, running, succeeded or failed; ``done`` of ``total`` texts embedded; once
    succeeded ``result`` is the body the write would have answered, once failed ``error``
    says why."""

    job_id: str
    kind: str
    state: str
    attempts: int = 0
    result: dict[str, Any] | None = None
    result_status: int | None = None
    error: str | None = None
    raw: Mapping[str, Any] = _raw()

    @property
    def finished(self) -> bool:
        return self.state in {"succeeded", "failed"}

    @property
    def done(self) -> int:
        return int((self.raw.get("progress") or {}).get("done", 0))

    @property
    def total(self) -> int:
        return int((self.raw.get("progress") or {}).get("total", 0))


def from_json(cls: type[T], data: Mapping[str, Any]) -> T:
    """A result dataclass from a JSON object: known fields converted, the rest in ``raw``."""
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(cls):  # type: ignore[arg-type]
        if spec.name == "raw":
            values["raw"] = dict(data)
        elif spec.name in data:
            values[spec.name] = _convert(hints[spec.name], data[spec.name])
    return cls(**values)


__all__ = [
    "ContextResult",
    "DeleteResult",
    "DocumentResult",
    "EmbeddingEngine",
    "EraseResult",
    "Health",
    "JobStatus",
    "KernelProbe",
    "Memory",
    "MemoryPage",
    "ReflectResult",
    "RetrievePage",
    "RetrievedMemory",
    "StoreResult",
    "TimeRange",
    "from_json",
    "parse_datetime",
]
