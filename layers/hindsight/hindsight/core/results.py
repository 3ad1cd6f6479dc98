"""Use-case results (pydantic): what the store, retrieve, reflect, context and list use cases
return; the HTTP responses use these field names exactly (``commands.py`` holds the inputs)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from hindsight.core.models import (
    Confidence,
    FactStatus,
    MemoryKind,
    SessionSummary,
    TimeRange,
)
from hindsight.core.secrets import RedactionCount


class StoreOutcome(BaseModel):
    status: Literal["success", "skipped"]
    memory_id: str
    reason: str | None = None
    event_time: list[TimeRange] = Field(default_factory=list)
    redacted: list[RedactionCount] | None = Field(
        default=None,
        description="secrets found in the content and replaced by typed placeholders "
        "([REDACTED:<type>]) before anything was stored, counted by type",
    )


class Highlight(BaseModel):
    """Where a long memory matched: the chunk, its span, and a short excerpt inside it."""

    chunk: int = Field(description="the chunk's number (0 is the first)")
    start: int = Field(description="the chunk's first character in content")
    end: int = Field(description="one past the chunk's last character in content")
    matched_by: Literal["keyword", "vector"]
    excerpt: str = Field(description="at most ~300 characters of the chunk around the match")
    excerpt_start: int
    excerpt_end: int


class ScoredMemory(BaseModel):
    """One retrieval result (the HTTP result object)."""

    memory_id: str
    kind: MemoryKind
    content: str
    category: str | None
    emotion: str | None = None
    confidence: Confidence | None = None
    scope: str
    session_id: str | None = None
    speaker: str | None = None
    occurred_at: datetime
    created_at: datetime
    expires_at: datetime | None = None
    event_time: list[TimeRange] = Field(default_factory=list)
    metadata: dict[str, Any]
    score: float = Field(
        description="what the results are ordered by, highest first, across pages: relevance "
        "(0-1) times every factor in why (recency, a fact's boost and confidence, the speaker, "
        "time, a newer state, an echo); why.probability is the calibrated probability that the "
        "memory answers the query, which min_score compares"
    )
    why: dict[str, Any]
    status: FactStatus | None = None
    source_memory_ids: list[str] | None = None
    supersedes: list[str] | None = None
    superseded_by: str | None = Field(
        default=None,
        description="a fact: the fact, or the episode, that replaced it; a memory stating "
        "an attribute of the user: the newest memory stating it since (see updated_later)",
    )
    updated_later: bool = Field(
        default=False,
        description="a later memory or fact states a newer value of the same attribute",
    )
    archived: bool = Field(
        default=False, description="archived for lack of use (found with include_archived)"
    )
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    highlights: list[Highlight] = Field(
        default_factory=list,
        description="where a long (chunked) memory matched, best first; empty for short ones",
    )
    content_truncated: bool = Field(
        default=False, description="content was cut to max_content_chars around the match"
    )
    content_span: tuple[int, int] | None = Field(
        default=None, description="when cut: the characters of the whole content returned"
    )


class RetrieveResult(BaseModel):
    results: list[ScoredMemory]
    has_more: bool
    next_cursor: str | None
    partial: bool
    query_time: TimeRange | None = Field(
        default=None, description="the time the query referred to, if it had a time cue"
    )
    unknown_names: list[str] = Field(
        default_factory=list,
        description=(
            "names the query asks about that no memory of the user mentions (nobody in its "
            "conversations is called so); when there are any, no result is returned. Send "
            "min_score 0 to rank anyway"
        ),
    )


class LlmUsage(BaseModel):
    """What the LLM reflector spent in one reflection run, and what went wrong."""

    calls: int = Field(description="LLM calls made, retries included")
    input_tokens: int = Field(description="prompt tokens, as the model reported them")
    output_tokens: int = Field(description="answer tokens, as the model reported them")
    token_budget: int | None = Field(
        description="tokens one run may spend (HINDSIGHT_REFLECTOR_TOKEN_BUDGET); null: no limit"
    )
    budget_exhausted: bool = Field(
        description="the budget ran out: later batches kept the offline extractor's facts only"
    )
    failures: list[str] = Field(
        description="LLM calls that failed (timeout, refusal, invalid output twice, cut off); "
        "their batches kept the offline extractor's facts"
    )


class ReflectResult(BaseModel):
    reflector: str
    episodes_considered: int
    created: list[dict[str, Any]]
    updated: list[dict[str, Any]]
    superseded: list[dict[str, Any]]
    pending: list[dict[str, Any]]
    dry_run: bool
    cursor: datetime | None
    llm: LlmUsage | None = Field(
        default=None,
        description="tokens and failures of the LLM reflector; null when no LLM was asked "
        "(an offline reflector, or no new episodes)",
    )


class ContextResult(BaseModel):
    context: str
    tokens: int
    budget_tokens: int
    recent_turns: list[dict[str, Any]]
    summary: dict[str, Any] | None
    facts: list[dict[str, Any]]
    truncated: bool

    @staticmethod
    def summary_dict(summary: SessionSummary | None) -> dict[str, Any] | None:
        if summary is None:
            return None
        return {
            "intent": summary.intent,
            "entities": summary.entities,
            "open_tasks": summary.open_tasks,
            "mood": summary.mood,
            "summarizer": summary.summarizer,
        }


class ListResult(BaseModel):
    results: list[dict[str, Any]]
    has_more: bool
    next_cursor: str | None
