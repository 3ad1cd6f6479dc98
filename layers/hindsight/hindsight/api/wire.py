"""Response bodies of the HTTP API as pydantic models, for the OpenAPI document.

The route functions answer ``{"status": "success", **result}`` (``api.http.success``)
around the use cases' results (``core.commands``) or the views of stored memories
(``core.views``); errors answer ``ErrorResponse``. The envelopes here extend the core
result models, so a field added to a result appears in the document by itself; the
views that the core builds as dicts (a memory, a turn, a fact) are spelled out here with
``extra="forbid"``, so ``tests/contract/test_openapi_responses.py`` fails when a view
gains a field that this module does not describe.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hindsight.core.models import Confidence, FactStatus, MemoryKind, TimeRange
from hindsight.core.results import (
    ContextResult,
    ListResult,
    ReflectResult,
    RetrieveResult,
    StoreOutcome,
)
from hindsight.core.usecases.browse import ReflectionStatus


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorResponse(_Strict):
    """Every error, whatever the status: what went wrong and what to do about it."""

    status: Literal["error"]
    message: str = Field(description="what went wrong and what to do about it")


class MemoryView(_Strict):
    """A stored memory as the API shows it. Episodic memories carry the session fields,
    semantic ones (facts) the review fields."""

    memory_id: str
    kind: MemoryKind
    user_id: str
    scope: str
    content: str
    category: str | None
    metadata: dict[str, Any]
    occurred_at: datetime
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    hit_count: int = Field(default=0, description="times retrieval returned this memory")
    last_hit_at: datetime | None = Field(default=None, description="when it last did")
    pinned: bool = Field(default=False, description="never archived for lack of use")
    archived_at: datetime | None = Field(
        default=None, description="set while archived: out of search, restorable"
    )
    # episodic
    session_id: str | None = None
    speaker: str | None = None
    participants: list[str] | None = None
    emotion: str | None = None
    agent_action: str | None = None
    outcome: str | None = None
    event_time: list[TimeRange] | None = None
    # semantic
    confidence: Confidence | None = None
    status: FactStatus | None = None
    topic: str | None = None
    source_memory_ids: list[str] | None = None
    supersedes: list[str] | None = None
    superseded_by: str | None = None
    reflector: str | None = None
    mention_count: int | None = None


class TurnView(_Strict):
    """One recent turn of the session in a context block."""

    memory_id: str
    speaker: str | None
    content: str
    occurred_at: datetime


class FactView(_Strict):
    """One approved fact in a context block."""

    memory_id: str
    content: str
    category: str | None
    confidence: Confidence


class Success(BaseModel):
    """A success envelope: every field is in the answer (required in the schema)."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    status: Literal["success"] = "success"


class StoreBatchResponse(Success):
    results: list[StoreOutcome] = Field(description="one result per item, in order")


class RetrieveResponse(RetrieveResult, Success):
    pass


class ContextResponse(ContextResult, Success):
    recent_turns: list[TurnView]  # type: ignore[assignment]
    facts: list[FactView]  # type: ignore[assignment]


class ReflectResponse(ReflectResult, Success):
    created: list[MemoryView]  # type: ignore[assignment]
    updated: list[MemoryView]  # type: ignore[assignment]
    superseded: list[MemoryView]  # type: ignore[assignment]
    pending: list[MemoryView] = Field(  # type: ignore[assignment]
        description="facts created or updated by this run that wait for review"
    )


class ReflectionStatusResponse(ReflectionStatus, Success):
    pass


class ListResponse(ListResult, Success):
    results: list[MemoryView]  # type: ignore[assignment]


class MemoryResponse(Success):
    memory: MemoryView


class RestoreResponse(Success):
    restored: bool = Field(description="false: the memory was not archived (left as it is)")
    memory: MemoryView


class PatchResponse(Success):
    changed: bool = Field(description="false: the memory already was as asked (left as it is)")
    memory: MemoryView


class DeleteResponse(Success, _Strict):
    memory_id: str
    deleted_facts: list[str] = Field(description="facts that only this memory supported")
    updated_facts: list[str] = Field(description="facts that lost this memory as a source")


class EraseResponse(Success, _Strict):
    user_id: str
    deleted: int = Field(description="records deleted")


class KernelProbeView(_Strict):
    """One kernel path as the start-up probe measured it (CPU time on one thread)."""

    kernel: str
    single_ms: float = Field(description="one short text (a query) alone")
    batch_ms: float = Field(description="a batch of 8 short English and Chinese texts")
    min_cosine: float = Field(description="worst cosine to the reference engine's vectors")


class EmbeddingEngineView(_Strict):
    """What runs the embedding model on this server."""

    engine: str = Field(description="the model, its runtime and the CPU's best int8 path")
    kernel: str | None = Field(
        default=None,
        description='the ONNX engine\'s kernel path: "int8", "fp32", "int8-rows", or one for '
        'single short texts and one for batches ("int8 single texts, fp32 batches"); null '
        "for other engines or before the model loads",
    )
    chosen_by: Literal["probe", "cache", "setting", "rule"] | None = Field(
        default=None,
        description="measured at this start, read from the data directory's cached "
        "measurement, forced by HINDSIGHT_EMBED_KERNEL, or by rule (nowhere to cache)",
    )
    cpu_features: list[str] = Field(description="the CPU's SIMD and int8 dot-product flags")
    probe: list[KernelProbeView] | None = Field(
        default=None, description="the measurement the kernel was chosen by"
    )


class HealthResponse(Success, _Strict):
    """Without a key only ``status``; with one the model, what runs it, the reflector and
    the caller's tenant's index size (never another tenant's)."""

    # the keyless answer leaves the other fields out, so the schema may not require them
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=False)

    embedding_model: str | None = None
    embedding_dimension: int | None = None
    embedding_engine: EmbeddingEngineView | None = None
    reflector: str | None = None
    indexed_documents: int | None = Field(
        default=None, description="documents indexed for the caller's tenant"
    )


class JsonRpcMessage(BaseModel):
    """A JSON-RPC 2.0 message of the Model Context Protocol (streamable HTTP, stateless)."""

    model_config = ConfigDict(extra="allow")

    jsonrpc: Literal["2.0"]
    id: int | str | None = None
    method: str | None = Field(default=None, description="e.g. tools/list, tools/call")
    params: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class OpenApiDocument(BaseModel):
    """This document (OpenAPI 3.1)."""

    model_config = ConfigDict(extra="allow")

    openapi: str
    info: dict[str, Any]
    paths: dict[str, Any]


class McpErrorResponse(ErrorResponse):
    """An error of the MCP endpoint before any tool runs (no key, too large, unavailable):
    the usual error, readable as a JSON-RPC error too (API Gateway's own refusals carry
    only status and message)."""

    jsonrpc: Literal["2.0"] | None = None
    id: int | str | None = None
    error: dict[str, Any] | None = Field(
        default=None, description="the JSON-RPC error: code and message"
    )


class JsonRpcErrorResponse(BaseModel):
    """A JSON-RPC error from the MCP transport itself (a body that is not a JSON-RPC
    message, or an Accept header without application/json and text/event-stream)."""

    model_config = ConfigDict(extra="forbid")

    jsonrpc: Literal["2.0"]
    id: int | str | None
    error: dict[str, Any] = Field(description="code (e.g. -32700 parse error) and message")
