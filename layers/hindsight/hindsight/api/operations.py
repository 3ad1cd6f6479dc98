"""Every operation of the HTTP API: its route, function, models and statuses.

The OpenAPI document (``hindsight.api.openapi``) is built from this table and the
pydantic models it names; ``tests/contract/test_openapi_drift.py`` checks the table
against the code that serves the routes: the same (method, path) pairs as template.yaml's
Api events and as the Powertools resolvers in ``functions/*/app.py``, each operation id
being the name of the route function that answers it.

Error statuses are derived, not listed per route: every operation can answer 429 (API
Gateway's throttling) and 500; one that needs a key 401 and 403; one with a JSON body
400, 413 and 422; one with an id in its path 404 and 422; one that touches the store or
the index 503. ``extra_errors`` adds what is particular to a route (409...).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from hindsight.api import wire
from hindsight.api.documents import DocumentUpload
from hindsight.api.jobs import JobAccepted, JobResponse
from hindsight.core.commands import (
    ContextCommand,
    ListMemoriesCommand,
    ReflectCommand,
    RetrieveCommand,
    StoreBatchCommand,
    StoreMemoryCommand,
)
from hindsight.core.results import StoreOutcome
from hindsight.core.usecases.documents import DocumentOutcome
from hindsight.core.usecases.pin import PatchMemoryCommand

JSON = "application/json"
HTML = "text/html"


@dataclass(frozen=True)
class Success:
    """One success answer: status, body model (None: not JSON), description."""

    status: int
    model: type[BaseModel] | None
    description: str
    media_type: str = JSON


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    operation_id: str  # the route function's name in functions/<function>/app.py
    function: str  # the directory under functions/ that serves it
    tag: str
    summary: str
    description: str
    successes: tuple[Success, ...]
    request: type[BaseModel] | None = None  # the JSON body
    query: type[BaseModel] | None = None  # query parameters: this model's fields
    authenticated: bool = True
    uses_backend: bool = True  # reads or writes the store, index or model (may answer 503)
    extra_errors: tuple[int, ...] = ()
    error_model: type[BaseModel] = wire.ErrorResponse
    error_models: dict[int, type[BaseModel]] = field(default_factory=dict)  # per status
    request_media_type: str = JSON
    notes: dict[int, str] = field(default_factory=dict)  # status -> what it means here

    @property
    def path_parameters(self) -> list[str]:
        return [part[1:-1] for part in self.path.split("/") if part.startswith("{")]

    def error_model_for(self, status: int) -> type[BaseModel]:
        return self.error_models.get(status, self.error_model)

    def error_statuses(self) -> list[int]:
        statuses = {429, 500, *self.extra_errors}
        if self.authenticated:
            statuses |= {401, 403}
        if self.request is not None:
            statuses |= {400, 413, 422}
        if self.path_parameters:
            statuses |= {404, 422}
        if self.query is not None:
            statuses.add(422)
        if self.uses_backend:
            statuses.add(503)
        return sorted(statuses)


def _ok(model: type[BaseModel], description: str) -> tuple[Success, ...]:
    return (Success(200, model, description),)


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "POST",
        "/v1/memories",
        "store_memory",
        "store",
        "memories",
        "Store one episodic memory",
        "What was said or happened, with when, who and what came of it. The same content "
        "for the same user and scope within the dedup window (default one hour) is not "
        "stored again: the answer is 200 with status `skipped` and the existing id.",
        (
            Success(201, StoreOutcome, "stored (`status: success`)"),
            Success(200, StoreOutcome, "a duplicate, not stored (`status: skipped`)"),
            Success(
                202,
                JobAccepted,
                "accepted as a job (`Prefer: respond-async`, under `hindsight serve`): "
                "poll the `Location`",
            ),
        ),
        request=StoreMemoryCommand,
        extra_errors=(409,),
        notes={409: "the stored vectors were made by another embedding model"},
    ),
    Operation(
        "POST",
        "/v1/memories/batch",
        "store_batch",
        "store",
        "memories",
        "Store up to 100 memories of one user",
        "One result per item, in order; a failure stores none of them.",
        (
            Success(200, wire.StoreBatchResponse, "one result per item"),
            Success(
                202,
                JobAccepted,
                "accepted as a job (`Prefer: respond-async`, under `hindsight serve`): "
                "poll the `Location`",
            ),
        ),
        request=StoreBatchCommand,
        extra_errors=(409,),
        notes={409: "the stored vectors were made by another embedding model"},
    ),
    Operation(
        "POST",
        "/v1/documents",
        "store_document",
        "store",
        "memories",
        "Store a document (Markdown, text, HTML, PDF, DOCX) as one memory",
        "The file is converted to text (Markdown where it has structure) and stored whole "
        "as one episodic memory (category `document`; `metadata.document` holds its "
        "document_id, file name, type and size), searched by chunks like any long memory. "
        "Send JSON with the file as `content_base64` or its text as `text`, or a "
        "`multipart/form-data` form with a `file` part and the same fields as form fields "
        "(`curl -F file=@contract.pdf -F user_id=u1`). Storing the same `document_id` "
        "(default: the file name) again for the same user and scope replaces the memory "
        "and all its chunks: 200 with status `updated`; the same text and fields again: "
        "200 with status `unchanged`, nothing written. The file may be at most "
        "HINDSIGHT_MAX_DOCUMENT_BYTES (default 4 MiB) and its text at most "
        "HINDSIGHT_MAX_CONTENT_CHARS (default 100,000 characters).",
        (
            Success(201, DocumentOutcome, "stored as a new memory (`status: success`)"),
            Success(
                200,
                DocumentOutcome,
                "the memory of this document_id replaced (`status: updated`), or already "
                "holding this text (`status: unchanged`)",
            ),
            Success(
                202,
                JobAccepted,
                "accepted as a job (`Prefer: respond-async`, under `hindsight serve`): "
                "poll the `Location`",
            ),
        ),
        request=DocumentUpload,
        extra_errors=(409, 415),
        notes={
            409: "the stored vectors were made by another embedding model",
            413: "the file, or its text, is over the limit (the message names the setting)",
            415: "a type this server cannot read (the message lists the ones it can)",
            422: "invalid fields, a damaged file, or a PDF without extractable text",
        },
    ),
    Operation(
        "GET",
        "/v1/jobs/{job_id}",
        "get_job",
        "store",
        "memories",
        "How a write accepted as a job is doing",
        "A store, batch or document upload sent with `Prefer: respond-async` is answered "
        "202 with a job id and `Location: /v1/jobs/{job_id}`. This answers its state "
        "(pending, running, succeeded, failed), its progress (texts embedded of all) and, "
        "once succeeded, `result`: the body the request would have answered had it waited "
        "(`result_status` its status); the memory is searchable from then on. A job the "
        "server was stopped in the middle of runs again when it starts, writing nothing "
        "twice. Jobs are kept by `hindsight serve`; on AWS every write is answered when it "
        "is done, so no job is found there. A finished job is kept for a day.",
        _ok(JobResponse, "the job"),
        notes={404: "no such job for this key (or it finished more than a day ago)"},
    ),
    Operation(
        "POST",
        "/v1/retrieve",
        "retrieve_memories",
        "retrieve",
        "retrieval",
        "Retrieve the memories that matter for a query",
        "Hybrid search (meaning, keywords, time, expiry, priority); each result's `why` "
        "shows the parts of its score. At most 20 a page: `has_more` and `next_cursor` "
        "lead on (pass it back as `cursor` with the same query). `partial` is true when "
        "the time budget ran out.",
        _ok(wire.RetrieveResponse, "one page of results, best first"),
        request=RetrieveCommand,
        extra_errors=(409,),
        notes={409: "the stored vectors were made by another embedding model"},
    ),
    Operation(
        "POST",
        "/v1/context",
        "build_context",
        "retrieve",
        "retrieval",
        "Build the working-memory prompt block of a session",
        "The user's top approved facts, a summary of the session and its last turns, "
        "within a token budget.",
        _ok(wire.ContextResponse, "the prompt block and what went into it"),
        request=ContextCommand,
    ),
    Operation(
        "GET",
        "/v1/users/{user_id}/memories",
        "list_memories",
        "retrieve",
        "memories",
        "List a user's memories",
        "Newest first (or `order=oldest`), filtered; `has_more` and `next_cursor` lead "
        "on. The filters `emotion`, `text`, `stored_until` and `expires_before` are checked "
        "while reading: such a page reads at most 2,000 memories, so it may hold fewer "
        "than `limit` (even none) with `has_more` true.",
        _ok(wire.ListResponse, "one page of memories"),
        query=ListMemoriesCommand,
    ),
    Operation(
        "GET",
        "/v1/memories/{memory_id}",
        "get_memory",
        "retrieve",
        "memories",
        "Read one memory",
        "An episode or a fact by id (404 once expired).",
        _ok(wire.MemoryResponse, "the memory"),
    ),
    Operation(
        "DELETE",
        "/v1/memories/{memory_id}",
        "delete_memory",
        "forget",
        "memories",
        "Forget one memory",
        "Facts that only it supported are deleted with it; others lose it as a source.",
        _ok(wire.DeleteResponse, "forgotten"),
    ),
    Operation(
        "PATCH",
        "/v1/memories/{memory_id}",
        "patch_memory",
        "forget",
        "memories",
        "Pin or unpin a memory",
        '`{"pinned": true}`: the memory is never archived for lack of use (and keeps its '
        "full weight in ranking); `false` undoes it. `pinned` is the only field that may be "
        "changed; any other is refused (422). An archived memory stays archived (restore "
        "it to bring it back).",
        _ok(wire.PatchResponse, "changed, or already as asked"),
        request=PatchMemoryCommand,
    ),
    Operation(
        "POST",
        "/v1/memories/{memory_id}/restore",
        "restore_memory",
        "forget",
        "memories",
        "Restore an archived memory",
        "An episode archived for lack of use (status archived: out of search, kept) goes "
        "back into search; a memory that is not archived is left as it is.",
        _ok(wire.RestoreResponse, "restored, or not archived"),
    ),
    Operation(
        "GET",
        "/v1/users/{user_id}/export",
        "export_user",
        "forget",
        "memories",
        "Export a user's memory",
        "JSON lines: a header (format, version, embedding model), one line per memory "
        "(episodes and facts with statuses, sources and supersession links, archived ones, "
        "access counts) and an end line; `hindsight import-export` restores it. Up to 5 MB "
        "(413 past it: `hindsight export` streams any size).",
        (Success(200, None, "the export, one JSON object a line", "application/x-ndjson"),),
        extra_errors=(413,),
    ),
    Operation(
        "DELETE",
        "/v1/users/{user_id}",
        "erase_user",
        "forget",
        "memories",
        "Erase a user",
        "Every memory, marker and cursor of the user in every scope; needs a key that "
        "may write every scope.",
        _ok(wire.EraseResponse, "erased"),
    ),
    Operation(
        "POST",
        "/v1/reflect",
        "reflect",
        "reflect",
        "reflection",
        "Distil a user's episodes into facts",
        "Episodes since the user's reflection cursor (or `since`) become semantic facts "
        "with a confidence and their sources; new facts wait for review (`pending`). "
        "`dry_run` writes nothing.",
        _ok(wire.ReflectResponse, "what the reflection did"),
        request=ReflectCommand,
        notes={
            503: "the store or index is unavailable; an LLM reflector that fails or answers "
            "unusable output is no 503: the offline facts are kept and `llm.failures` says why"
        },
    ),
    Operation(
        "GET",
        "/v1/users/{user_id}/reflection",
        "reflection_status",
        "reflect",
        "reflection",
        "Where a user's reflection stands",
        "The reflection cursor (the stored time of the last episode distilled; the next "
        "run reads episodes stored after it) and how many episodes wait for the next run, "
        "among the scopes the key may read.",
        _ok(wire.ReflectionStatusResponse, "the cursor and the episodes waiting"),
    ),
    Operation(
        "POST",
        "/v1/semantic/{memory_id}/approve",
        "approve_fact",
        "reflect",
        "reflection",
        "Approve a pending fact",
        "Approved facts are retrievable, and rank ahead of episodes about as relevant.",
        _ok(wire.MemoryResponse, "the approved fact"),
        extra_errors=(409,),
        notes={409: "the memory is not a fact, or the fact was superseded"},
    ),
    Operation(
        "POST",
        "/v1/semantic/{memory_id}/reject",
        "reject_fact",
        "reflect",
        "reflection",
        "Reject a pending fact",
        "Rejected facts are left out of retrieval.",
        _ok(wire.MemoryResponse, "the rejected fact"),
        extra_errors=(409,),
        notes={409: "the memory is not a fact, or the fact was superseded"},
    ),
    Operation(
        "GET",
        "/v1/health",
        "health",
        "retrieve",
        "service",
        "Health",
        "No key needed: without one the answer is the status only; with a key also the "
        "embedding model, the reflector and the caller's tenant's index size.",
        _ok(wire.HealthResponse, "the service is up"),
        authenticated=False,
    ),
    Operation(
        "POST",
        "/mcp",
        "mcp",
        "mcp",
        "mcp",
        "Model Context Protocol (streamable HTTP)",
        "Stateless, JSON responses: POST one JSON-RPC message (`tools/list`, `tools/call` "
        "with memory_store, memory_retrieve, memory_reflect, memory_forget, memory_list); "
        "no session or `initialize` needed. Send `Accept: application/json, "
        "text/event-stream`. Tool failures are tool results with `isError`.",
        _ok(wire.JsonRpcMessage, "the JSON-RPC answer"),
        request=wire.JsonRpcMessage,
        extra_errors=(406,),
        error_model=wire.McpErrorResponse,
        error_models={400: wire.JsonRpcErrorResponse, 406: wire.JsonRpcErrorResponse},
        notes={
            400: "not a JSON-RPC message (a JSON-RPC error from the MCP transport)",
            406: "the Accept header must name application/json and text/event-stream "
            "(a JSON-RPC error from the MCP transport)",
        },
    ),
    Operation(
        "GET",
        "/v1/openapi.json",
        "openapi_document",
        "docs",
        "service",
        "This document",
        "The OpenAPI 3.1 document of the HTTP API. No key needed.",
        _ok(wire.OpenApiDocument, "the document"),
        authenticated=False,
        uses_backend=False,
    ),
    Operation(
        "GET",
        "/docs",
        "docs_page",
        "docs",
        "service",
        "API reference (HTML)",
        "This document rendered as one self-contained HTML page. No key needed.",
        (Success(200, None, "the reference page", HTML),),
        authenticated=False,
        uses_backend=False,
    ),
    Operation(
        "GET",
        "/explorer",
        "explorer_page",
        "explorer",
        "service",
        "Memory explorer (HTML)",
        "A web page to browse, review and curate a user's memories. The page holds no "
        "memory: it calls this API with the key the user signs in with (kept in the "
        "browser's session storage), so the page itself needs no key. "
        "`/explorer?user_id=u1` opens that user's memories.",
        (Success(200, None, "the explorer page", HTML),),
        authenticated=False,
        uses_backend=False,
    ),
    Operation(
        "GET",
        "/explorer/assets/{name}",
        "explorer_asset",
        "explorer",
        "service",
        "Memory explorer: a script, style sheet or the chart library",
        "The explorer's static files, shipped inside the Python package. No key needed.",
        (Success(200, None, "the file (JavaScript or CSS)", "text/plain"),),
        authenticated=False,
        uses_backend=False,
    ),
)
