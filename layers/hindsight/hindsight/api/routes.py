"""The HTTP API's route functions: one plain function per operation, whoever serves it.

Every operation of ``hindsight.api.operations`` except ``POST /mcp`` (the MCP
transport answers that one) has a function here that takes the call (``RouteCall``:
the request already parsed, the caller, the service) and returns an ``Answer``: the
status, the body, and the metrics and log line the call produced. Two entry points
call the same functions through ``call_route``:

- the Powertools resolvers of ``functions/<name>/app.py`` (``api.lambda_routes``), on
  AWS Lambda and in the template-driven local gateway, one event at a time;
- the ASGI application of ``hindsight serve`` (``hindsight.server``), many at once.

Parsing follows the operation table, so a model is named once: an operation's
``request`` model is its JSON body, its ``query`` model the query string plus the path
parameters, otherwise its path parameter is an identifier; ``store_document`` reads a
JSON body or a multipart form. Errors are raised, not answered: each entry point maps
them with ``error_status`` (the same statuses and messages everywhere).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from http import HTTPStatus
from typing import Any

from pydantic import ValidationError

from hindsight.api.auth import optional_caller
from hindsight.api.documents import document_command_from
from hindsight.api.errors import status_for
from hindsight.api.http import (
    GENERIC_ERROR_MESSAGE,
    json_object,
    parse_model,
    path_identifier,
    readable_errors,
    success,
)
from hindsight.api.idempotency import (
    IDEMPOTENCY_HEADER,
    IDEMPOTENT_OPERATIONS,
    idempotent_writes,
)
from hindsight.api.jobs import (
    ASYNC_OPERATIONS,
    POLL_SECONDS,
    PREFER_HEADER,
    accepted_body,
    accepted_headers,
    job_body,
    prefers_async,
)
from hindsight.api.operations import OPERATIONS, Operation
from hindsight.api.page_routes import docs_page, explorer_asset, explorer_page, openapi_document
from hindsight.api.route_calls import COUNT, MILLISECONDS, Answer, Metric, RouteCall, RouteRequest
from hindsight.core.commands import (
    ContextCommand,
    ListMemoriesCommand,
    ReflectCommand,
    RetrieveCommand,
    StoreBatchCommand,
    StoreMemoryCommand,
)
from hindsight.core.errors import HindsightError, PayloadTooLargeError
from hindsight.core.models import Principal
from hindsight.core.results import StoreOutcome
from hindsight.core.service import MemoryService
from hindsight.core.usecases.documents import StoreDocumentCommand
from hindsight.core.usecases.pin import PatchMemoryCommand


# --- store -----------------------------------------------------------------------------
def _outcome(outcome: StoreOutcome) -> dict[str, Any]:
    return outcome.model_dump(mode="json", exclude_none=True)


def _store_counts(outcomes: list[StoreOutcome]) -> tuple[Metric, ...]:
    stored = sum(1 for o in outcomes if o.status == "success")
    return (("MemoriesStored", COUNT, stored), ("DuplicatesSkipped", COUNT, len(outcomes) - stored))


def _created_or_ok(status: str) -> int:
    return int(HTTPStatus.CREATED if status == "success" else HTTPStatus.OK)


def store_memory(call: RouteCall[StoreMemoryCommand]) -> Answer:
    outcome = call.service.store(call.caller, call.input)
    return Answer(
        _created_or_ok(outcome.status),
        _outcome(outcome),
        metrics=_store_counts([outcome]),
        log=("memory stored", {"memory_id": outcome.memory_id, "outcome": outcome.status}),
    )


def store_batch(call: RouteCall[StoreBatchCommand]) -> Answer:
    outcomes = call.service.store_batch(call.caller, call.input)
    return Answer(
        200,
        success(results=[_outcome(o) for o in outcomes]),
        metrics=_store_counts(outcomes),
        log=("batch stored", {"items": len(outcomes)}),
    )


def store_document(call: RouteCall[StoreDocumentCommand]) -> Answer:
    outcome = call.service.store_document(call.caller, call.input)
    return Answer(
        _created_or_ok(outcome.status),
        outcome.model_dump(mode="json", exclude_none=True),
        metrics=(("DocumentsStored", COUNT, 1),),
        log=(
            "document stored",
            {
                "memory_id": outcome.memory_id,
                "outcome": outcome.status,
                "characters": outcome.characters,
            },
        ),
    )


# --- background writes (api/jobs.py) ------------------------------------------------------
def accept_job(enqueue: Callable[[str], None], call: RouteCall[Any]) -> Answer:
    """A store, batch or document kept as a job and queued: 202 with where to poll."""
    job = call.service.submit_job(call.caller, call.input)
    enqueue(job.job_id)
    return Answer(
        int(HTTPStatus.ACCEPTED),
        accepted_body(job),
        headers=accepted_headers(job),
        metrics=(("JobsAccepted", COUNT, 1),),
        log=("job accepted", {"job_id": job.job_id, "kind": job.kind}),
    )


def get_job(call: RouteCall[str]) -> Answer:
    job = call.service.get_job(call.caller, call.input)
    headers = {} if job.finished else {"Retry-After": str(POLL_SECONDS)}  # when to look again
    return Answer(200, job_body(job), headers=headers, metrics=(("JobsRead", COUNT, 1),))


# --- retrieve ----------------------------------------------------------------------------
def retrieve_memories(call: RouteCall[RetrieveCommand]) -> Answer:
    started = time.perf_counter()
    result = call.service.retrieve(call.caller, call.input)
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    metrics: tuple[Metric, ...] = (("RetrieveLatency", MILLISECONDS, elapsed_ms),)
    if result.partial:
        metrics += (("RetrievePartial", COUNT, 1),)
    return Answer(
        200,
        success(result.model_dump(mode="json")),
        metrics=metrics,
        log=("retrieved", {"results": len(result.results), "partial": result.partial}),
    )


def build_context(call: RouteCall[ContextCommand]) -> Answer:
    result = call.service.context(call.caller, call.input)
    return Answer(
        200,
        success(result.model_dump(mode="json")),
        metrics=(("ContextTokens", COUNT, result.tokens),),
    )


def list_memories(call: RouteCall[ListMemoriesCommand]) -> Answer:
    result = call.service.list_memories(call.caller, call.input)
    return Answer(
        200,
        success(result.model_dump(mode="json")),
        metrics=(("MemoriesListed", COUNT, len(result.results)),),
    )


def get_memory(call: RouteCall[str]) -> Answer:
    result = call.service.get_memory(call.caller, call.input)
    return Answer(200, success(result), metrics=(("MemoriesRead", COUNT, 1),))


def health(call: RouteCall[None]) -> Answer:
    """Keyless: the status only (nothing about anyone's data); with a key: the model, the
    reflector and how many documents the caller's own tenant has indexed."""
    metrics: tuple[Metric, ...] = (("HealthChecks", COUNT, 1),)
    if call.principal is None:
        return Answer(200, success(), metrics=metrics)
    return Answer(200, success(call.service.health(call.principal.tenant_id)), metrics=metrics)


# --- forget ------------------------------------------------------------------------------
def delete_memory(call: RouteCall[str]) -> Answer:
    result = call.service.delete_memory(call.caller, call.input)
    return Answer(
        200,
        success(result),
        metrics=(("MemoriesDeleted", COUNT, 1),),
        log=("memory deleted", {"memory_id": call.input}),
    )


def restore_memory(call: RouteCall[str]) -> Answer:
    result = call.service.restore_memory(call.caller, call.input)
    return Answer(
        200,
        success(result),
        metrics=(("MemoriesRestored", COUNT, 1 if result["restored"] else 0),),
        log=("memory restored", {"memory_id": call.input, "restored": result["restored"]}),
    )


def patch_memory(call: RouteCall[tuple[str, PatchMemoryCommand]]) -> Answer:
    memory_id, command = call.input
    result = call.service.patch_memory(call.caller, memory_id, command)
    return Answer(
        200,
        success(result),
        metrics=(("MemoriesPatched", COUNT, 1 if result["changed"] else 0),),
        log=("memory patched", {"memory_id": memory_id, "pinned": command.pinned}),
    )


# an HTTP export is one answer (API Gateway and Lambda answer at most 6 MB); the CLI's
# `hindsight export` streams a user of any size
EXPORT_LIMIT_BYTES = 5 * 1_048_576
NDJSON = "application/x-ndjson"


def export_user(call: RouteCall[str]) -> Answer:
    parts: list[str] = []
    size = 0
    for line in call.service.export_user(call.caller, call.input):
        size += len(line.encode("utf-8"))
        if size > EXPORT_LIMIT_BYTES:
            raise PayloadTooLargeError(
                f"user {call.input}'s export is larger than one HTTP answer can be (5 MB); "
                "run `hindsight export` against the store instead (it streams any size)"
            )
        parts.append(line)
    return Answer(
        200,
        "".join(parts),
        media_type=NDJSON,
        metrics=(("UsersExported", COUNT, 1),),
        log=("user exported", {"user_id": call.input, "lines": len(parts)}),
    )


def erase_user(call: RouteCall[str]) -> Answer:
    result = call.service.erase_user(call.caller, call.input)
    return Answer(
        200,
        success(result),
        metrics=(("UsersErased", COUNT, 1),),
        log=("user erased", {"user_id": call.input}),
    )


# --- reflect and review --------------------------------------------------------------------
def reflect(call: RouteCall[ReflectCommand]) -> Answer:
    result = call.service.reflect(call.caller, call.input)
    return Answer(
        200,
        success(result.model_dump(mode="json")),
        metrics=(
            ("FactsCreated", COUNT, len(result.created)),
            ("FactsPending", COUNT, len(result.pending)),
        ),
        log=(
            "reflected",
            {
                "episodes": result.episodes_considered,
                "facts_created": len(result.created),
                "facts_pending": len(result.pending),
                "dry_run": result.dry_run,
            },
        ),
    )


def reflection_status(call: RouteCall[str]) -> Answer:
    result = call.service.reflection_status(call.caller, call.input)
    return Answer(
        200,
        success(result.model_dump(mode="json")),
        metrics=(("ReflectionStatusRead", COUNT, 1),),
    )


def approve_fact(call: RouteCall[str]) -> Answer:
    result = call.service.approve(call.caller, call.input)
    return Answer(200, success(result), metrics=(("FactsApproved", COUNT, 1),))


def reject_fact(call: RouteCall[str]) -> Answer:
    result = call.service.reject(call.caller, call.input)
    return Answer(200, success(result), metrics=(("FactsRejected", COUNT, 1),))


# --- the table ----------------------------------------------------------------------------------
def parse_input(operation: Operation, request: RouteRequest) -> Any:
    """The route's input as the operation table describes it (422/400/413 when it is not)."""
    if operation.request is not None:
        return parse_model(operation.request, json_object(request.body))
    if operation.query is not None:
        return parse_model(operation.query, {**request.query, **request.path_params})
    names = operation.path_parameters
    if names:
        (name,) = names
        return path_identifier(name, request.path_params.get(name, ""))
    return None


def parse_document(operation: Operation, request: RouteRequest) -> Any:
    """POST /v1/documents: a JSON body (``DocumentUpload``) or a multipart form."""
    return document_command_from(request.header("content-type"), request.body)


def parse_patch(operation: Operation, request: RouteRequest) -> Any:
    """PATCH /v1/memories/{memory_id}: the id from the path, the changes from the body."""
    memory_id = path_identifier("memory_id", request.path_params.get("memory_id", ""))
    return memory_id, parse_model(PatchMemoryCommand, json_object(request.body))


Parser = Callable[[Operation, RouteRequest], Any]


@dataclass(frozen=True)
class RouteSpec:
    function: Callable[[RouteCall[Any]], Answer]
    parse: Parser = parse_input
    optional_caller: bool = False  # a public route that says more to a caller with a key


ROUTES: Mapping[str, RouteSpec] = {
    "store_memory": RouteSpec(store_memory),
    "store_batch": RouteSpec(store_batch),
    "store_document": RouteSpec(store_document, parse_document),
    "get_job": RouteSpec(get_job),
    "retrieve_memories": RouteSpec(retrieve_memories),
    "build_context": RouteSpec(build_context),
    "list_memories": RouteSpec(list_memories),
    "get_memory": RouteSpec(get_memory),
    "delete_memory": RouteSpec(delete_memory),
    "restore_memory": RouteSpec(restore_memory),
    "patch_memory": RouteSpec(patch_memory, parse_patch),
    "export_user": RouteSpec(export_user),
    "erase_user": RouteSpec(erase_user),
    "reflect": RouteSpec(reflect),
    "reflection_status": RouteSpec(reflection_status),
    "approve_fact": RouteSpec(approve_fact),
    "reject_fact": RouteSpec(reject_fact),
    "health": RouteSpec(health, optional_caller=True),
    "openapi_document": RouteSpec(openapi_document),
    "docs_page": RouteSpec(docs_page),
    "explorer_page": RouteSpec(explorer_page),
    "explorer_asset": RouteSpec(explorer_asset),
}
TRANSPORT_OPERATIONS = frozenset({"mcp"})  # answered by their own transport, not a route
OPERATIONS_BY_ID: Mapping[str, Operation] = {op.operation_id: op for op in OPERATIONS}


def call_route(
    operation_id: str,
    request: RouteRequest,
    authenticate: Callable[[], Principal],
    services: Callable[[], MemoryService],
    jobs: Callable[[str], None] | None = None,
) -> Answer:
    """Authenticate (if the operation needs a key), parse, run the route function.

    ``jobs`` queues a job by its id, where the entry point runs a job queue: a write
    sent with ``Prefer: respond-async`` is then kept as a job and answered 202
    (``api/jobs.py``); without one, it is answered when it is done.

    Raises what the steps raise; the entry point turns it into an answer with
    ``error_status``.
    """
    operation = OPERATIONS_BY_ID[operation_id]
    spec = ROUTES[operation_id]
    principal = authenticate() if operation.authenticated else None
    if principal is None and spec.optional_caller:
        principal = optional_caller(authenticate)
    parsed = spec.parse(operation, request)
    call = RouteCall(parsed, principal, services)
    if (
        jobs is not None
        and operation_id in ASYNC_OPERATIONS
        and prefers_async(request.header(PREFER_HEADER))
        and call.service.accepts_jobs
    ):
        spec = replace(spec, function=partial(accept_job, jobs))
    key = request.header(IDEMPOTENCY_HEADER)
    # an empty key is refused (400), not taken for no key: the client meant to retry safely
    if operation_id in IDEMPOTENT_OPERATIONS and request.has_header(IDEMPOTENCY_HEADER):
        return idempotent_answer(spec, call, operation_id, key, request.body)
    return spec.function(call)


def idempotent_answer(
    spec: RouteSpec, call: RouteCall[Any], operation_id: str, key: str, body: bytes
) -> Answer:
    """The route's answer once per ``Idempotency-Key`` (``api.idempotency``); a retry gets
    the first answer again, marked ``Idempotent-Replayed: true``, and stores nothing."""
    from hindsight.bootstrap import get_settings

    first: list[Answer] = []

    def run() -> dict[str, Any]:
        answer = spec.function(call)
        first.append(answer)
        body = answer.body if isinstance(answer.body, Mapping) else {"text": answer.body}
        return {"status": answer.status, "body": dict(body)}

    writes = idempotent_writes(get_settings())
    user_id = str(getattr(call.input, "user_id", "") or "")  # a store's, or a batch's, user
    stored, replayed = writes.run_once(operation_id, key, call.caller, body, run, user_id=user_id)
    if not replayed:
        return first[0]
    return Answer(
        int(stored["status"]),
        stored["body"],
        headers={"Idempotent-Replayed": "true"},
        metrics=(("IdempotentReplays", COUNT, 1),),
        log=("idempotent replay", {"operation": operation_id}),
    )


def error_status(error: BaseException) -> tuple[int, str]:
    """The status and message every entry point answers for ``error``.

    Domain errors by the table in ``api.errors``; pydantic validation 422 with one
    phrase per bad field; anything else 500 with a generic message (the details belong
    in the server's log, never in an answer).
    """
    if isinstance(error, HindsightError):
        return status_for(error), error.message
    if isinstance(error, ValidationError):
        return int(HTTPStatus.UNPROCESSABLE_ENTITY), readable_errors(error.errors())
    return int(HTTPStatus.INTERNAL_SERVER_ERROR), GENERIC_ERROR_MESSAGE


def error_body(status: int, message: str) -> dict[str, str]:
    return {"status": "error", "message": message}
