"""Use-case inputs (pydantic), validated before anything is written.

The HTTP wire contract uses these field names exactly; the API layer parses request bodies
into these commands (the use cases' results are in ``results.py``).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from hindsight.core.models import (
    FactStatus,
    MemoryKind,
    utc,
)

# imported from here by core/retrieval/states.py and core/usecases/retrieve.py
from hindsight.core.results import RetrieveResult as RetrieveResult
from hindsight.core.results import ScoredMemory as ScoredMemory

# The hard ceiling of one memory's content; the limit in force is the setting
# HINDSIGHT_MAX_CONTENT_CHARS (Policy.max_content_chars, default 100,000), checked by the
# store use case so that its message can name the setting.
MAX_CONTENT_CHARS = 5_000_000
MAX_FIELD_CHARS = 2_000
MAX_METADATA_BYTES = 16_384
MAX_BATCH_ITEMS = 100
MAX_PAGE_SIZE = 20
MAX_QUERY_CHARS = 2_000
MAX_LIST_ITEMS = 50
# Every entry point refuses a request body larger than ``max_body_bytes``: at least 6 MiB
# (AWS Lambda's limit for a synchronous request), more if one memory of the content limit,
# escaped as JSON (\uXXXX: 6 bytes a character), would not fit.
MAX_BODY_BYTES = 6 * 1_048_576


def max_body_bytes(max_content_chars: int) -> int:
    """The request body limit that follows the content limit."""
    return max(MAX_BODY_BYTES, 6 * max_content_chars + 65_536)


def body_too_large(size: int, limit: int) -> str:
    """The message of a refused request body: the limit, and what to do."""
    return (
        f"the request body is {size} bytes; the limit is {limit} bytes ({limit / 1_048_576:.1f} "
        "MiB) — send fewer memories per request (a batch of long memories can be split), "
        "or raise HINDSIGHT_MAX_CONTENT_CHARS, which raises this limit with it"
    )


_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@\-]{0,127}")
_LABEL_PATTERN = re.compile(r"[\w.\-:/ ]{1,64}")
# What the OpenAPI document and the MCP tools' schemas say of these fields (JSON Schema
# patterns, ECMA-262): what a client can check before sending. They hold no \w, \s or \d,
# whose meaning differs between ECMA-262 (\w: ASCII only; \s: with U+FEFF, without
# U+001C-U+001F and U+0085) and Python (Unicode), only explicit ranges, which every dialect
# reads alike. WHITESPACE is what str.strip() and str.isspace() take for whitespace.
WHITESPACE = (
    "\\u0009-\\u000d\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a"
    "\\u2028\\u2029\\u202f\\u205f\\u3000"
)
# ASCII a label never holds (all but letters, digits, _ . - : / and whitespace) and the C1
# controls. The label pattern is what a client can check; the server also refuses other
# characters that are not letters or digits of some language ("，", emoji), which no
# dialect-neutral pattern can name. Whitespace around a label is stripped; the 64
# characters count from its first to its last other character.
_NOT_IN_LABELS = (
    "\\u0000-\\u0008\\u000e-\\u001b\\u0021-\\u002c\\u003b-\\u0040\\u005b-\\u005e"
    "\\u0060\\u007b-\\u0084\\u0086-\\u009f"
)
ID_SCHEMA_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.:@\\-]{0,127}$"
_LABEL_END = f"[^{_NOT_IN_LABELS}{WHITESPACE}]"  # the first and last character of a label
LABEL_SCHEMA_PATTERN = (
    f"^[{WHITESPACE}]*{_LABEL_END}(?:[^{_NOT_IN_LABELS}]{{0,62}}{_LABEL_END})?[{WHITESPACE}]*$"
)
TEXT_SCHEMA_PATTERN = f"^[^\\u0000]*[^{WHITESPACE}\\u0000][^\\u0000]*$"


class _Documented:
    """Adds JSON Schema keywords to a type's schema (what its validator checks)."""

    def __init__(self, **keywords: Any) -> None:
        self.keywords = keywords

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        found = handler(schema)
        found.update(self.keywords)
        return found


def _check_id(value: str) -> str:
    if not _ID_PATTERN.fullmatch(value):
        raise ValueError(
            "must be 1-128 characters of letters, digits and _ . : @ - "
            "(starting with a letter or digit)"
        )
    return value


def _check_label(value: str) -> str:
    value = value.strip()
    if not _LABEL_PATTERN.fullmatch(value):
        raise ValueError(
            "must be 1-64 characters of letters (any language), digits, spaces and _ . - : /"
        )
    return value


def _check_text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    if not value.strip():
        raise ValueError("must not be empty or only whitespace")
    return value


_NUMBER = re.compile(r"\s*[-+]?\d+(\.\d*)?\s*")


def _not_a_number(value: Any) -> Any:
    """A time is ISO 8601 text (as the document says): a number, or a string of one, is
    refused rather than read as a Unix time (pydantic's lax default)."""
    numeric = isinstance(value, str) and _NUMBER.fullmatch(value)
    if numeric or (isinstance(value, int | float) and not isinstance(value, bool)):
        raise ValueError("must be an ISO 8601 time such as 2026-06-01T09:00:00Z, not a number")
    return value


def _in_utc(value: datetime) -> datetime:
    """The time in UTC; one that falls outside years 1-9999 there is a ValueError (a 422),
    not the OverflowError that would escape validation as a 500."""
    try:
        return utc(value)
    except OverflowError as exc:
        raise ValueError("is out of range once converted to UTC (years 1 to 9999)") from exc


def _aware(value: datetime | None) -> datetime | None:
    return None if value is None else utc(value)


Identifier = Annotated[
    str, AfterValidator(_check_id), _Documented(pattern=ID_SCHEMA_PATTERN, maxLength=128)
]
Label = Annotated[str, AfterValidator(_check_label), _Documented(pattern=LABEL_SCHEMA_PATTERN)]
AwareDatetime = Annotated[datetime, BeforeValidator(_not_a_number), AfterValidator(_in_utc)]
ShortText = Annotated[
    str,
    Field(max_length=MAX_FIELD_CHARS),
    AfterValidator(_check_text),
    _Documented(pattern=TEXT_SCHEMA_PATTERN),
]


class _Command(BaseModel):
    """A JSON request body. Its numbers and booleans are ``strict=True``: ``false`` is not a
    ``min_score`` of 0 nor ``"5"`` a ``top_k``; a field of the wrong JSON type is a 422
    naming it (query-string commands, whose values are all text, stay lax)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


class StoreMemoryCommand(_Command):
    """POST /v1/memories: one episodic memory."""

    user_id: Identifier = Field(description="whose memory this is")
    content: Annotated[
        str,
        Field(max_length=MAX_CONTENT_CHARS),
        AfterValidator(_check_text),
        _Documented(pattern=TEXT_SCHEMA_PATTERN),
    ] = Field(description="what was said or happened")
    session_id: Identifier | None = None
    scope: Identifier | None = Field(
        default=None, description="defaults to the API key's default scope ('global')"
    )
    category: Label | None = None
    emotion: Label | None = None
    speaker: ShortText | None = Field(
        default=None,
        description="who said it ('user', 'assistant', a name). A turn whose speaker differs "
        "from the previous turn's in its session is searched together with that turn",
    )
    participants: list[ShortText] = Field(default_factory=list, max_length=50)
    agent_action: ShortText | None = Field(default=None, description="what the agent did")
    outcome: ShortText | None = None
    occurred_at: AwareDatetime | None = Field(
        default=None, description="ISO 8601; default now. Lets history be imported."
    )
    expires_at: AwareDatetime | None = None
    ttl_seconds: int | None = Field(default=None, gt=0, le=10 * 365 * 86_400, strict=True)
    metadata: dict[str, Any] = Field(default_factory=dict)
    pinned: bool = Field(default=False, strict=True, description="never archived for lack of use")

    @field_validator("metadata")
    @classmethod
    def _metadata_size(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            encoded = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise ValueError("must be a JSON object") from exc
        if len(encoded.encode()) > MAX_METADATA_BYTES:
            raise ValueError(f"must be at most {MAX_METADATA_BYTES} bytes as JSON")
        return value

    @model_validator(mode="after")
    def _one_expiry(self) -> StoreMemoryCommand:
        if self.expires_at is not None and self.ttl_seconds is not None:
            raise ValueError("give either expires_at or ttl_seconds, not both")
        return self


class BatchItem(StoreMemoryCommand):
    """One item of a batch; user_id comes from the batch."""

    user_id: Identifier | None = None  # type: ignore[assignment]


class StoreBatchCommand(_Command):
    """POST /v1/memories/batch."""

    user_id: Identifier
    items: list[BatchItem] = Field(min_length=1, max_length=MAX_BATCH_ITEMS)

    @model_validator(mode="after")
    def _same_user(self) -> StoreBatchCommand:
        for position, item in enumerate(self.items):
            if item.user_id is not None and item.user_id != self.user_id:
                raise ValueError(
                    f"items[{position}].user_id differs from the batch user_id; "
                    "send one batch per user"
                )
        return self

    def commands(self) -> list[StoreMemoryCommand]:
        return [
            StoreMemoryCommand(**{**item.model_dump(exclude_none=True), "user_id": self.user_id})
            for item in self.items
        ]


class RetrieveCommand(_Command):
    """POST /v1/retrieve."""

    user_id: Identifier
    query: Annotated[
        str,
        Field(max_length=MAX_QUERY_CHARS),
        AfterValidator(_check_text),
        _Documented(pattern=TEXT_SCHEMA_PATTERN),
    ]
    top_k: int = Field(default=10, ge=1, le=MAX_PAGE_SIZE, strict=True)
    cursor: str | None = Field(default=None, max_length=2_000)
    scopes: list[Identifier] | None = Field(default=None, max_length=50)
    kinds: list[MemoryKind] | None = None
    categories: list[Label] | None = Field(default=None, max_length=50)
    emotions: list[Label] | None = Field(default=None, max_length=50)
    statuses: list[FactStatus] | None = Field(
        default=None,
        description="semantic statuses to include; default approved only",
    )
    session_id: Identifier | None = None
    since: AwareDatetime | None = None
    until: AwareDatetime | None = None
    min_similarity: float | None = Field(default=None, ge=-1.0, le=1.0, strict=True)
    min_score: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        strict=True,
        description="leave out results whose calibrated probability of answering the query "
        "(why.probability, 0-1) is under this; 0 returns every match; default: the "
        "server's HINDSIGHT_MIN_SCORE",
    )
    time_decay: float = Field(default=0.95, gt=0.0, le=1.0, strict=True)
    as_of: AwareDatetime | None = None
    max_content_chars: int | None = Field(
        default=None,
        ge=100,
        strict=True,
        description="cut longer contents to this many characters around the match "
        "(marked with content_truncated and content_span)",
    )
    current_only: bool = Field(
        default=True,
        strict=True,
        description="what holds at as_of (default now): facts superseded before then left "
        "out, and of memories stating one attribute of the user (where they live, their "
        "job, ...) the newest first, older ones marked updated_later; false: superseded "
        "facts too (with superseded_by) and relevance order alone",
    )
    include_archived: bool = Field(
        default=False,
        strict=True,
        description="also search memories archived for lack of use (a slower path: "
        "compared from the record store); they come back with archived: true",
    )

    @model_validator(mode="after")
    def _range(self) -> RetrieveCommand:
        if self.since and self.until and self.since >= self.until:
            raise ValueError("since must be before until")
        return self


class ReflectCommand(_Command):
    """POST /v1/reflect."""

    user_id: Identifier
    since: AwareDatetime | None = Field(
        default=None, description="reflect on episodes created after this instead of the cursor"
    )
    dry_run: bool = Field(default=False, strict=True)


class ContextCommand(_Command):
    """POST /v1/context."""

    user_id: Identifier
    session_id: Identifier
    query: Annotated[str, Field(max_length=MAX_QUERY_CHARS)] | None = None
    budget_tokens: int = Field(default=1_500, ge=50, le=32_000, strict=True)
    recent_turns: int = Field(default=5, ge=0, le=50, strict=True)
    max_facts: int = Field(default=10, ge=0, le=50, strict=True)
    min_score: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        strict=True,
        description="with a query: leave out facts whose calibrated probability is under "
        "this (as POST /v1/retrieve's min_score; default the server's, 0 keeps every match)",
    )
    as_of: AwareDatetime | None = None
    max_content_chars: int | None = Field(
        default=None,
        ge=100,
        strict=True,
        description="cut longer turn contents in recent_turns to this many characters "
        "(marked with content_truncated); the block itself always stays within budget_tokens",
    )


class ListMemoriesCommand(_Command):
    """GET /v1/users/{user_id}/memories."""

    user_id: Identifier
    kind: MemoryKind | None = None
    status: FactStatus | None = None
    category: Label | None = None
    scope: Identifier | None = None
    session_id: Identifier | None = None
    since: AwareDatetime | None = None
    until: AwareDatetime | None = None
    limit: int = Field(default=20, ge=1, le=MAX_LIST_ITEMS)
    cursor: str | None = Field(default=None, max_length=2_000)
    include_expired: bool = False
    emotion: Label | None = None
    stored_since: AwareDatetime | None = Field(
        default=None, description="stored (created_at) at or after this time"
    )
    stored_until: AwareDatetime | None = Field(
        default=None, description="stored (created_at) before this time"
    )
    expires_before: AwareDatetime | None = Field(
        default=None, description="only memories that expire before this time (expiring soon)"
    )
    text: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="only memories whose content holds this text (case-insensitive)",
    )
    order: Literal["newest", "oldest"] = Field(
        default="newest", description="by occurred_at: newest first (default) or oldest first"
    )
