"""What each MCP tool does: validate its arguments, call the memory service, shape the answer.

``call_tool_sync(name, arguments, principal, service)`` runs one tool: the arguments
are checked against the tool's schema (``tool_schemas``), turned into the same core
command the REST API builds, handed to the ``MemoryService`` facade, and the outcome
is cut down to what an agent needs. Failures become error results (``results``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import mcp.types as types
from pydantic import BaseModel, ValidationError

from hindsight.core.commands import (
    MAX_PAGE_SIZE,
    ListMemoriesCommand,
    ReflectCommand,
    RetrieveCommand,
    StoreMemoryCommand,
)
from hindsight.core.models import MemoryKind, Principal
from hindsight.core.results import ScoredMemory
from hindsight.core.views import iso
from hindsight.mcp.results import error_result, failure_result, invalid_arguments, tool_result
from hindsight.mcp.tool_schemas import (
    TOOL_SPECS,
    ForgetArguments,
    ListArguments,
    ReflectArguments,
    RetrieveArguments,
    StoreArguments,
)

if TYPE_CHECKING:  # the service itself, or a running server's (``hindsight mcp`` beside it)
    from hindsight.server.served import MemoryApi

DUPLICATE_MESSAGE = "this memory already exists; nothing to store"
# the idempotency records' operation for memory_store: its own, apart from the HTTP
# store's (an MCP call and a REST request never replay each other's answers)
IDEMPOTENT_STORE = "mcp_memory_store"

PrincipalProvider = Callable[[], Principal]
ServiceProvider = Callable[[], "MemoryApi"]


# --- results: what an agent needs of a memory -------------------------------------------
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
        "probability": round(float(result.why.get("probability", 0.0)), 4),
    }
    if result.kind == MemoryKind.SEMANTIC:
        compact["confidence"] = result.confidence.value if result.confidence else None
        compact["status"] = result.status.value if result.status else None
    if result.content_truncated:
        compact["content_truncated"] = True
    if result.updated_later:
        compact["updated_later"] = True
        compact["superseded_by"] = result.superseded_by
    return compact


def _given(arguments: BaseModel, exclude: set[str] | None = None) -> dict[str, Any]:
    return arguments.model_dump(exclude_none=True, exclude=exclude)


def _command(model: type[BaseModel], values: dict[str, Any]) -> Any:
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise invalid_arguments(exc) from exc


# --- the tools ---------------------------------------------------------------------------
def _store(service: MemoryApi, principal: Principal, args: StoreArguments) -> dict[str, Any]:
    if args.idempotency_key is None:
        return _store_once(service, principal, args)
    from hindsight.api.idempotency import idempotent_writes
    from hindsight.bootstrap import get_settings

    given = args.model_dump(mode="json", exclude={"idempotency_key"}, exclude_none=True)
    request = json.dumps(given, sort_keys=True, ensure_ascii=False).encode()
    writes = idempotent_writes(get_settings())
    answer, _ = writes.run_once(
        IDEMPOTENT_STORE,
        args.idempotency_key,
        principal,
        request,
        lambda: _store_once(service, principal, args),
        key_name="memory_store's idempotency_key",
        user_id=args.user_id,
    )
    return answer


def _store_once(service: MemoryApi, principal: Principal, args: StoreArguments) -> dict[str, Any]:
    command = _command(StoreMemoryCommand, _given(args, exclude={"idempotency_key"}))
    outcome = service.store(principal, command)
    redacted = [r.model_dump() for r in outcome.redacted or ()]
    if outcome.status == "skipped":
        skipped = {
            "status": "skipped",
            "message": DUPLICATE_MESSAGE,
            "memory_id": outcome.memory_id,
        }
        return {**skipped, "redacted": redacted} if redacted else skipped
    body: dict[str, Any] = {"status": "success", "memory_id": outcome.memory_id}
    if outcome.event_time:
        body["event_time"] = [
            {"expression": r.expression, "start": iso(r.start), "end": iso(r.end)}
            for r in outcome.event_time
        ]
    if redacted:  # secrets replaced by [REDACTED:<type>] before storing
        body["redacted"] = redacted
    return body


def _retrieve(service: MemoryApi, principal: Principal, args: RetrieveArguments) -> dict[str, Any]:
    command = _command(RetrieveCommand, _given(args))
    result = service.retrieve(principal, command)
    body = {
        "status": "success",
        "results": [_scored(r) for r in result.results[:MAX_PAGE_SIZE]],
        "has_more": result.has_more,
        "next_cursor": result.next_cursor,
        "partial": result.partial,
    }
    # nobody of that name in the user's memories (core/retrieval/subjects.py)
    if result.unknown_names:
        body["unknown_names"] = result.unknown_names
    return body


def _reflect(service: MemoryApi, principal: Principal, args: ReflectArguments) -> dict[str, Any]:
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


def _forget(service: MemoryApi, principal: Principal, args: ForgetArguments) -> dict[str, Any]:
    from hindsight.api.http import path_identifier

    result = service.delete_memory(principal, path_identifier("memory_id", args.memory_id))
    return {
        "status": "success",
        "memory_id": result["memory_id"],
        "deleted_facts": result.get("deleted_facts", []),
    }


def _list(service: MemoryApi, principal: Principal, args: ListArguments) -> dict[str, Any]:
    command = _command(ListMemoriesCommand, _given(args))
    result = service.list_memories(principal, command)
    return {
        "status": "success",
        "results": [_compact(m) for m in result.results],
        "has_more": result.has_more,
        "next_cursor": result.next_cursor,
    }


TOOL_HANDLERS: dict[str, Callable[[MemoryApi, Principal, Any], dict[str, Any]]] = {
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
    spec = TOOL_SPECS[name]
    try:
        args = spec.arguments.model_validate(arguments or {})
    except ValidationError as exc:
        return error_result(invalid_arguments(exc).message)
    try:
        body = TOOL_HANDLERS[name](service(), principal(), args)
    except Exception as exc:
        return failure_result(name, exc)
    return tool_result(body)
