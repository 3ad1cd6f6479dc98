"""MCP tools over the memory service, defined once for stdio and streamable HTTP.

``build_server()`` returns the SDK's low-level ``Server`` with five tools:
``memory_store``, ``memory_retrieve``, ``memory_reflect``, ``memory_forget`` and
``memory_list``. Their descriptions and input schemas (from the pydantic argument
models below) are written for the model that reads them. Every call answers a tool
result with structured content and the same JSON as text; failures are
``{"status": "error", "message": ...}`` results (``isError``), never stack traces.

Who is calling comes from a ``principal`` callable: fixed for stdio, per request
for HTTP (``hindsight.mcp.http`` sets it from the API key).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hindsight.core.commands import (
    MAX_PAGE_SIZE,
    ListMemoriesCommand,
    ReflectCommand,
    RetrieveCommand,
    ScoredMemory,
    StoreMemoryCommand,
)
from hindsight.core.errors import HindsightError, InvalidRequestError
from hindsight.core.models import FactStatus, MemoryKind, Principal
from hindsight.core.service import MemoryService
from hindsight.core.views import iso

logger = logging.getLogger(__name__)

SERVER_NAME = "hindsight"
SERVER_VERSION = "0.1.0"
INSTRUCTIONS = (
    "Hindsight is the user's long-term memory, shared with their other agents. Before "
    "answering something that may depend on the user (preferences, constraints, past "
    "events, plans), call memory_retrieve. When the user states a fact, preference, "
    "constraint or event worth keeping, call memory_store. Never store small talk."
)
DUPLICATE_MESSAGE = "this memory already exists; nothing to store"
UNAVAILABLE_MESSAGE = "memory storage is unavailable right now; retry later or continue without it"

PrincipalProvider = Callable[[], Principal]
ServiceProvider = Callable[[], MemoryService]
ToolObserver = Callable[[str, str], None]  # (tool name, result status)


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
        "the user's words or a faithful paraphrase (at most 8000 characters). One memory per "
        "fact. Examples: '用户对花生过敏', 'The user prefers aisle seats'."
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
    since: datetime | None = Field(
        default=None, description="Only memories that happened at or after this ISO 8601 time."
    )
    until: datetime | None = Field(
        default=None, description="Only memories that happened before this ISO 8601 time."
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
    "refer to something said earlier. Returns at most top_k (max 20) memories ranked by "
    "relevance, recency and confidence; distilled facts (kind 'semantic', with confidence "
    "and status) come before raw events (kind 'episodic'). Filters only narrow the search; "
    "leave them out to search everything you may read. has_more=true: call again with "
    "cursor=next_cursor for more. partial=true: the search ran out of time and results may "
    "be incomplete. An empty result means nothing relevant is known."
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
_SPECS = {spec.name: spec for spec in TOOLS}


# --- results -----------------------------------------------------------------------------
def _compact(memory: dict[str, Any]) -> dict[str, Any]:
    """What an agent needs of a memory view (memory_view or a scored result)."""
    compact: dict[str, Any] = {
        "memory_id": memory["memory_id"],
        "kind": memory["kind"],
        "content": memory["content"],
        "category": memory.get("category"),
        "scope": memory.get("scope"),
        "occurred_at": memory.get("occurred_at"),
    }
    if memory["kind"] == MemoryKind.SEMANTIC.value:
        compact["confidence"] = memory.get("confidence")
        compact["status"] = memory.get("status")
    return compact


def _scored(result: ScoredMemory) -> dict[str, Any]:
    compact: dict[str, Any] = {
        "memory_id": result.memory_id,
        "kind": result.kind.value,
        "content": result.content,
        "category": result.category,
        "occurred_at": iso(result.occurred_at),
        "score": round(result.score, 4),
    }
    if result.kind == MemoryKind.SEMANTIC:
        compact["confidence"] = result.confidence.value if result.confidence else None
        compact["status"] = result.status.value if result.status else None
    return compact


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, default=iso))


def tool_result(body: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    """Structured content plus the same JSON as text (for clients that read only text)."""
    body = _json_safe(body)
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, ensure_ascii=False))],
        structured_content=body,
        is_error=error,
    )


def error_result(message: str) -> types.CallToolResult:
    return tool_result({"status": "error", "message": message}, error=True)


def _invalid(exc: ValidationError) -> InvalidRequestError:
    from hindsight.api.http import readable_errors

    return InvalidRequestError("invalid arguments: " + readable_errors(exc.errors()))


def _given(arguments: BaseModel) -> dict[str, Any]:
    return arguments.model_dump(exclude_none=True)


def _command(model: type[BaseModel], values: dict[str, Any]) -> Any:
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise _invalid(exc) from exc


# --- the tools ---------------------------------------------------------------------------
def _store(service: MemoryService, principal: Principal, args: StoreArguments) -> dict[str, Any]:
    command = _command(StoreMemoryCommand, _given(args))
    outcome = service.store(principal, command)
    if outcome.status == "skipped":
        return {"status": "skipped", "message": DUPLICATE_MESSAGE, "memory_id": outcome.memory_id}
    body: dict[str, Any] = {"status": "success", "memory_id": outcome.memory_id}
    if outcome.event_time:
        body["event_time"] = [
            {"expression": r.expression, "start": iso(r.start), "end": iso(r.end)}
            for r in outcome.event_time
        ]
    return body


def _retrieve(
    service: MemoryService, principal: Principal, args: RetrieveArguments
) -> dict[str, Any]:
    command = _command(RetrieveCommand, _given(args))
    result = service.retrieve(principal, command)
    return {
        "status": "success",
        "results": [_scored(r) for r in result.results[:MAX_PAGE_SIZE]],
        "has_more": result.has_more,
        "next_cursor": result.next_cursor,
        "partial": result.partial,
    }


def _reflect(
    service: MemoryService, principal: Principal, args: ReflectArguments
) -> dict[str, Any]:
    command = _command(ReflectCommand, _given(args))
    result = service.reflect(principal, command)
    return {
        "status": "success",
        "episodes_considered": result.episodes_considered,
        "created": [_compact(f) for f in result.created],
        "updated": [_compact(f) for f in result.updated],
        "superseded": [_compact(f) for f in result.superseded],
        "pending": [f["memory_id"] for f in result.pending],
        "dry_run": result.dry_run,
    }


def _forget(service: MemoryService, principal: Principal, args: ForgetArguments) -> dict[str, Any]:
    from hindsight.api.http import path_identifier

    result = service.delete_memory(principal, path_identifier("memory_id", args.memory_id))
    return {
        "status": "success",
        "memory_id": result["memory_id"],
        "deleted_facts": result.get("deleted_facts", []),
    }


def _list(service: MemoryService, principal: Principal, args: ListArguments) -> dict[str, Any]:
    command = _command(ListMemoriesCommand, _given(args))
    result = service.list_memories(principal, command)
    return {
        "status": "success",
        "results": [_compact(m) for m in result.results],
        "has_more": result.has_more,
        "next_cursor": result.next_cursor,
    }


_HANDLERS: dict[str, Callable[[MemoryService, Principal, Any], dict[str, Any]]] = {
    "memory_store": _store,
    "memory_retrieve": _retrieve,
    "memory_reflect": _reflect,
    "memory_forget": _forget,
    "memory_list": _list,
}


def call_tool_sync(
    name: str,
    arguments: dict[str, Any] | None,
    principal: PrincipalProvider,
    service: ServiceProvider,
) -> types.CallToolResult:
    """Validate, run one tool and shape its result; every failure becomes an error result."""
    spec = _SPECS[name]
    try:
        args = spec.arguments.model_validate(arguments or {})
    except ValidationError as exc:
        return error_result(_invalid(exc).message)
    try:
        body = _HANDLERS[name](service(), principal(), args)
    except HindsightError as exc:
        if exc.http_status >= 500:
            logger.warning("mcp tool failed tool=%s error=%s", name, type(exc).__name__)
        else:
            logger.info("mcp tool refused tool=%s error=%s", name, type(exc).__name__)
        return error_result(exc.message)
    except Exception:
        logger.exception("mcp tool crashed tool=%s", name)
        return error_result(UNAVAILABLE_MESSAGE)
    return tool_result(body)


# --- the server --------------------------------------------------------------------------
def build_server(
    principal: PrincipalProvider,
    service: ServiceProvider | None = None,
    observer: ToolObserver | None = None,
    in_thread: bool = True,
) -> Server[Any]:
    """The low-level MCP server with Hindsight's tools, for any transport.

    ``principal`` is asked on every call who is calling; ``service`` gives the memory
    service (default: the process-wide one from ``hindsight.bootstrap``); ``observer``
    hears (tool, status) after each call (the Lambda function counts metrics with it).
    ``in_thread``: run the (blocking) service call in a worker thread, so a long-lived
    loop (stdio) stays responsive; a one-request loop (HTTP in Lambda) skips the thread.
    """
    if service is None:
        from hindsight.bootstrap import get_service

        service = get_service
    resolved_service: ServiceProvider = service
    listing = [spec.tool() for spec in TOOLS]  # schemas built once, not per request

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.model_copy(deep=True) for tool in listing])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in _SPECS:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown tool {params.name!r}; the tools are {', '.join(TOOL_NAMES)}",
            )
        caller = principal()  # resolved here: the request's context, not the worker thread's
        if in_thread:
            result = await anyio.to_thread.run_sync(
                call_tool_sync, params.name, params.arguments, lambda: caller, resolved_service
            )
        else:
            result = call_tool_sync(params.name, params.arguments, lambda: caller, resolved_service)
        if observer is not None:
            status = (result.structured_content or {}).get("status", "error")
            observer(params.name, str(status))
        return result

    return Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        title="Hindsight memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(server: Server[Any], warm: Callable[[], object] | None = None) -> None:
    """Serve ``server`` over this process's stdin/stdout until the client closes it.

    ``warm`` (e.g. building the service and loading the model) runs in a worker thread
    once stdout is claimed by the transport, so its logs cannot corrupt the stream.
    """
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream), anyio.create_task_group() as tg:
        if warm is not None:
            tg.start_soon(_warm, warm)
        await server.run(read_stream, write_stream, server.create_initialization_options())
        tg.cancel_scope.cancel()


async def _warm(warm: Callable[[], object]) -> None:
    try:
        await anyio.to_thread.run_sync(warm)
    except Exception:
        logger.exception("mcp warm-up failed; tools will report the service unavailable")


def run_stdio(principal: Principal, service: ServiceProvider | None = None) -> None:
    """Run the stdio server as ``principal`` (what ``hindsight mcp`` does)."""
    if service is None:
        from hindsight.bootstrap import get_service

        service = get_service
    provider: ServiceProvider = service

    def warm() -> None:
        provider().embedder.embed_query("warm up")

    anyio.run(serve_stdio, build_server(lambda: principal, provider), warm)
