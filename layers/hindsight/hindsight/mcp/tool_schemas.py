"""The MCP tools as the reading model sees them: names, descriptions, input schemas.

Each tool is a ``ToolSpec``: its name and title, a description written for the model
that decides when to call it, a pydantic argument model (its input schema, and the
validation of every call) and MCP annotations (read-only, destructive...). What a
call does lives in ``hindsight.mcp.tools``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import mcp.types as types
from pydantic import BaseModel, ConfigDict, Field

from hindsight.core.commands import MAX_PAGE_SIZE
from hindsight.core.models import FactStatus, MemoryKind

# api.idempotency.MAX_KEY_CHARS, not imported: that module loads Powertools, which the
# stdio server does not need to start (tests/functional/test_mcp_idempotent_store.py
# keeps the two equal)
IDEMPOTENCY_KEY_MAX_CHARS = 255


# --- argument models: the tools' input schemas --------------------------------------------
class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


_USER_ID = (
    "Stable id of the user the memory is about: the same id every time for this user "
    "(1-128 letters, digits and _ . : @ -), e.g. 'u_42'."
)


class StoreArguments(_Arguments):
    user_id: str = Field(description=_USER_ID)
    content: str = Field(
        description="What the user stated or what happened, as one self-contained sentence in "
        "the user's words or a faithful paraphrase. One memory per fact. Examples: "
        "'用户对花生过敏', 'The user prefers aisle seats'. A document or long paste the user "
        "shared may be stored whole (up to the server's content limit, 100,000 characters by "
        "default): it is searched by its parts."
    )
    session_id: str | None = Field(
        default=None, description="Id of the current conversation, if you have one."
    )
    category: str | None = Field(
        default=None,
        description="What kind of memory this is: 'fact', 'preference', 'constraint' "
        "(allergies, rules, limits, budgets), 'event' (something that happened or is "
        "planned) or 'task'; another short label is allowed.",
    )
    scope: str | None = Field(
        default=None,
        description="Where the memory is shared. Leave it out to use your own scope (from "
        "your API key); 'global' makes it visible to every agent of this user's tenant.",
    )
    emotion: str | None = Field(
        default=None, description="The user's mood when saying it, e.g. 'happy', 'annoyed'."
    )
    occurred_at: datetime | None = Field(
        default=None,
        description="When it was said or happened, ISO 8601 such as 2026-06-01T09:00:00Z. "
        "Default now. Time words in content ('next Friday') are resolved against it.",
    )
    ttl_seconds: int | None = Field(
        default=None,
        description="Forget this memory after this many seconds; for temporary things "
        "(86400 = one day). Default: kept until deleted.",
    )
    agent_action: str | None = Field(
        default=None, description="What you (the agent) did in response, if it matters later."
    )
    outcome: str | None = Field(default=None, description="How it turned out, if known.")
    metadata: dict[str, Any] | None = Field(
        default=None, description="Any extra JSON object to keep with the memory as is."
    )
    idempotency_key: str | None = Field(
        default=None,
        min_length=1,
        max_length=IDEMPOTENCY_KEY_MAX_CHARS,
        description="A key of your choice (e.g. a UUID) for this store, to retry it safely: "
        "a call repeated with the same key answers the first call's result and stores "
        "nothing new (keys are kept 24 h; the same key with other arguments is an error).",
    )


class RetrieveArguments(_Arguments):
    user_id: str = Field(description=_USER_ID)
    query: str = Field(
        description="What you want to know, in natural language and any language, e.g. "
        "'饮食禁忌', 'dietary restrictions', 'what did we plan for next week'. Time words "
        "in the query favour memories about that time."
    )
    top_k: int = Field(
        default=10,
        ge=1,
        le=MAX_PAGE_SIZE,
        description=f"How many memories to return (1-{MAX_PAGE_SIZE}, default 10).",
    )
    cursor: str | None = Field(
        default=None,
        description="next_cursor from the previous call with the same query, for the next page.",
    )
    scopes: list[str] | None = Field(
        default=None,
        description="Only these scopes. Default: every scope your key may read (your own "
        "scope and 'global').",
    )
    kinds: list[MemoryKind] | None = Field(
        default=None,
        description="'semantic' = distilled durable facts, preferences and constraints; "
        "'episodic' = individual things said or done. Default both (facts rank first).",
    )
    categories: list[str] | None = Field(
        default=None, description="Only these categories, e.g. ['constraint', 'preference']."
    )
    session_id: str | None = Field(
        default=None, description="Only memories from this conversation."
    )
    max_content_chars: int = Field(
        default=2_000,
        ge=100,
        le=100_000,
        description="A long memory (a pasted document) comes back cut to this many characters "
        "around where it matched, marked content_truncated (default 2000).",
    )
    min_score: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Leave out memories whose probability (0-1, the estimated probability "
        "that the memory answers the query) is under this. Default: the server's threshold; "
        "0 returns every match, however weak.",
    )
    since: datetime | None = Field(
        default=None, description="Only memories that happened at or after this ISO 8601 time."
    )
    until: datetime | None = Field(
        default=None, description="Only memories that happened before this ISO 8601 time."
    )
    as_of: datetime | None = Field(
        default=None,
        description="Answer as of this ISO 8601 time: memories from after it are left out "
        "and facts are those that held then (e.g. where the user lived in January).",
    )
    current_only: bool = Field(
        default=True,
        description="true (default): what holds now (or at as_of): facts that were replaced "
        "left out, and when several memories state one thing about the user (where they "
        "live, their job, ...) the newest first, older ones marked updated_later. false: "
        "replaced facts too, marked superseded_by.",
    )


class ReflectArguments(_Arguments):
    user_id: str = Field(description=_USER_ID)
    since: datetime | None = Field(
        default=None,
        description="Reflect on memories stored after this ISO 8601 time instead of those "
        "stored since the last reflection (the default).",
    )
    dry_run: bool = Field(
        default=False, description="true: show what would be distilled without saving it."
    )


class ForgetArguments(_Arguments):
    memory_id: str = Field(
        description="The memory_id to delete, as returned by memory_store, memory_retrieve "
        "or memory_list."
    )


class ListArguments(_Arguments):
    user_id: str = Field(description=_USER_ID)
    kind: MemoryKind | None = Field(
        default=None, description="'semantic' (distilled facts) or 'episodic' (raw events)."
    )
    status: FactStatus | None = Field(
        default=None,
        description="For facts: 'pending' (awaiting review), 'approved', 'rejected' or "
        "'superseded'.",
    )
    category: str | None = Field(default=None, description="Only this category.")
    scope: str | None = Field(default=None, description="Only this scope.")
    limit: int = Field(default=20, ge=1, le=50, description="Page size (1-50, default 20).")
    cursor: str | None = Field(
        default=None, description="next_cursor from the previous call, for the next page."
    )


# --- descriptions: what the reading model needs to decide when to call -------------------
STORE_DESCRIPTION = (
    "Save one thing worth remembering about the user to their long-term memory (shared "
    "with the user's other agents). Store facts, preferences, constraints and events the "
    "user states: an allergy, a diet, a budget, their home city, a preferred airline, an "
    "appointment, a decision. Do NOT store greetings, small talk, thanks, pleasantries, "
    "questions that carry no new information, or your own suggestions. One memory per "
    "fact, self-contained, in the user's words. Answers status 'success' with the new "
    "memory_id, or 'skipped' when the same content was stored recently (harmless, no need "
    "to retry)."
)
RETRIEVE_DESCRIPTION = (
    "Search the user's long-term memory. Call it before answering whenever the answer may "
    "depend on the user: recommendations, bookings, plans, anything touching their "
    "preferences or constraints (allergies, diet, budget, accessibility), or when they "
    "refer to something said earlier. Returns at most top_k (max 20) memories ordered by "
    "score: relevance times recency, confidence and the other factors; a distilled fact "
    "(kind 'semantic', with confidence and status) comes before a raw event (kind "
    "'episodic') about as relevant. Filters only narrow the search; "
    "leave them out to search everything you may read. has_more=true: call again with "
    "cursor=next_cursor for more. partial=true: the search ran out of time and results may "
    "be incomplete. An empty result means nothing relevant is known; unknown_names lists "
    "the people the query asks about that no memory mentions. Each result's probability "
    "(0-1) estimates whether the memory answers the query; matches under the server's "
    "min_score are left out."
)
REFLECT_DESCRIPTION = (
    "Distil the user's recent episodic memories (what they said and did) into durable "
    "semantic facts: facts about them, preferences, constraints, open tasks and recurring "
    "moods, each with a confidence (high/medium/low) and the ids of the memories it came "
    "from. Repeated statements raise a fact's confidence; contradicting ones supersede the "
    "older fact. New facts may be 'pending' until reviewed. It also runs daily on a "
    "schedule, so call it only after a substantial conversation or when asked. "
    "dry_run=true previews without saving."
)
FORGET_DESCRIPTION = (
    "Delete one memory by memory_id, e.g. when the user asks you to forget something or "
    "says it is no longer true. Facts distilled only from that memory are deleted with it. "
    "This cannot be undone."
)
LIST_DESCRIPTION = (
    "List the user's stored memories, newest first (read-only), e.g. to show the user what "
    "is remembered about them or to find the memory_id of something to forget. To search "
    "by meaning use memory_retrieve instead."
)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    arguments: type[_Arguments]
    annotations: types.ToolAnnotations

    def tool(self) -> types.Tool:
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=schema,
            annotations=self.annotations,
        )


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "memory_store",
        "Store a memory",
        STORE_DESCRIPTION,
        StoreArguments,
        types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    ),
    ToolSpec(
        "memory_retrieve",
        "Search memories",
        RETRIEVE_DESCRIPTION,
        RetrieveArguments,
        types.ToolAnnotations(read_only_hint=True),
    ),
    ToolSpec(
        "memory_reflect",
        "Distil facts from memories",
        REFLECT_DESCRIPTION,
        ReflectArguments,
        types.ToolAnnotations(read_only_hint=False, destructive_hint=False),
    ),
    ToolSpec(
        "memory_forget",
        "Delete a memory",
        FORGET_DESCRIPTION,
        ForgetArguments,
        types.ToolAnnotations(read_only_hint=False, destructive_hint=True),
    ),
    ToolSpec(
        "memory_list",
        "List memories",
        LIST_DESCRIPTION,
        ListArguments,
        types.ToolAnnotations(read_only_hint=True),
    ),
)
TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in TOOLS)
TOOL_SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}
