"""The OpenAPI 3.1 document of the HTTP API, built from the code's own models.

``build_document()`` turns the operation table (``hindsight.api.operations``) and the
pydantic request and response models it names (``core.commands``, ``api.wire``) into an
OpenAPI 3.1 document; error responses come from the status table (``api.errors``).
The committed copy, ``openapi.json`` beside this module, is what ``GET /v1/openapi.json``
serves (and ``/docs`` renders); ``tests/contract/test_openapi_drift.py`` fails when it
and the code disagree. Regenerate it with

    python -m hindsight.api.openapi --output layers/hindsight/hindsight/api/openapi.json

(``make openapi``); without ``--output`` the document goes to stdout, and ``--check``
exits 1 when the committed copy is stale.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import cache
from http import HTTPStatus
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from hindsight import __version__
from hindsight.api import wire
from hindsight.api.errors import STATUS_BY_ERROR
from hindsight.api.idempotency import IDEMPOTENCY_HEADER, IDEMPOTENT_OPERATIONS, MAX_KEY_CHARS
from hindsight.api.jobs import ASYNC_OPERATIONS, PREFER_HEADER, RESPOND_ASYNC
from hindsight.api.operations import OPERATIONS, Operation
from hindsight.core.commands import ID_SCHEMA_PATTERN
from hindsight.core.errors import HindsightError

OPENAPI_VERSION = "3.1.0"
DOCUMENT_FILE = "openapi.json"
COMMITTED_PATH = Path(__file__).with_name(DOCUMENT_FILE)
SCHEMA_REF = "#/components/schemas/{model}"
SECURITY: list[dict[str, list[str]]] = [{"bearerAuth": []}, {"apiKeyHeader": []}]

DESCRIPTION = """\
Long-term memory for LLM agents: store what happened (episodic memories), retrieve what \
matters now, reflect episodes into facts and review them.

**Authentication.** Send `Authorization: Bearer <key>` or `x-api-key: <key>`. A key maps \
to a tenant and the scopes it may read and write. The local server with no keys \
configured serves keyless on 127.0.0.1.

**Errors.** Every error is `{"status": "error", "message": "<what to do about it>"}` with \
its HTTP status; a request that fails writes nothing. 429 and 503 are worth retrying \
after a pause.

**Paging.** Retrieval and listing answer `has_more` and `next_cursor`; send the cursor \
back as `cursor` for the next page.
"""

TAGS = [
    {"name": "memories", "description": "store, list, read and forget memories"},
    {"name": "retrieval", "description": "find what matters now; build the prompt block"},
    {"name": "reflection", "description": "distil episodes into facts; review them"},
    {"name": "mcp", "description": "the same memory as MCP tools"},
    {"name": "service", "description": "health and this reference"},
]

# statuses that no domain error answers: what the gateway or the transport means by them
_OTHER_STATUSES = {
    405: "the method is not served on this path",
    406: "the Accept header does not name a media type this route answers",
    429: "API Gateway's throttling (per stage) refused the request; retry after a pause",
    500: "unexpected errors: the message is generic, the details are in the server's log",
}


def _error_classes_by_status() -> dict[int, list[type[BaseException]]]:
    found: dict[int, list[type[BaseException]]] = {}
    for cls, status in STATUS_BY_ERROR.items():
        if cls is not HindsightError:
            found.setdefault(int(status), []).append(cls)
    return found


def status_description(status: int) -> str:
    """What a status means here: its phrase, then each domain error that answers it."""
    parts = []
    for cls in _error_classes_by_status().get(status, []):
        doc = (cls.__doc__ or "").strip().splitlines()
        parts.append(f"{cls.__name__}: {doc[0] if doc else cls.__name__}")
    if status in _OTHER_STATUSES:
        parts.append(_OTHER_STATUSES[status])
    return f"{HTTPStatus(status).phrase}. " + " ".join(parts)


def _models(operations: tuple[Operation, ...]) -> list[tuple[type[BaseModel], JsonSchemaMode]]:
    """Every model the operations name, once each, in a stable order."""
    wanted: list[tuple[type[BaseModel], JsonSchemaMode]] = []
    for op in operations:
        if op.request is not None:
            wanted.append((op.request, "validation"))
        if op.query is not None:
            wanted.append((op.query, "validation"))
        wanted += [(s.model, "serialization") for s in op.successes if s.model is not None]
        wanted.append((op.error_model, "serialization"))
        wanted += [(model, "serialization") for model in op.error_models.values()]
    return list(dict.fromkeys(wanted))


def _schemas(operations: tuple[Operation, ...]) -> tuple[dict[Any, Any], dict[str, Any]]:
    """(model, mode) -> its ``$ref``, and every schema by name (components.schemas)."""
    refs, top = models_json_schema(_models(operations), ref_template=SCHEMA_REF)
    return dict(refs), dict(top.get("$defs", {}))


def _parameters(op: Operation, schemas: dict[str, Any]) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "description": "an id: 1-128 letters, digits and _ . : @ - (URL-encoded)",
            "schema": {
                "type": "string",
                "minLength": 1,
                "maxLength": 128,
                "pattern": ID_SCHEMA_PATTERN,
            },
        }
        for name in op.path_parameters
    ]
    if op.query is not None:
        query_schema = schemas[op.query.__name__]
        for name, schema in query_schema.get("properties", {}).items():
            if name in op.path_parameters:
                continue
            param: dict[str, Any] = {"name": name, "in": "query", "required": False}
            if "description" in schema:
                param["description"] = schema["description"]
            param["schema"] = _query_schema(schema)
            params.append(param)
    if op.operation_id in IDEMPOTENT_OPERATIONS:
        params.append(
            {
                "name": IDEMPOTENCY_HEADER,
                "in": "header",
                "required": False,
                "description": "a key of your choice (e.g. a UUID) for this request: a retry "
                "with the same key gets the first answer (header Idempotent-Replayed: true) "
                "and stores nothing new; the key is kept 24 h; another body with it is a 422",
                "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS},
            }
        )
    if op.operation_id in ASYNC_OPERATIONS:
        params.append(
            {
                "name": PREFER_HEADER,
                "in": "header",
                "required": False,
                "description": f"`{RESPOND_ASYNC}`: answer 202 at once with a job to poll "
                "(GET /v1/jobs/{job_id}) instead of when the write is done. Honoured by "
                "`hindsight serve`; elsewhere the write is answered when done, without "
                "`Preference-Applied`",
                "schema": {"type": "string", "example": RESPOND_ASYNC},
            }
        )
    return params


def _query_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A field's schema as a query parameter's: a query string has no null (leave it out)."""
    kept = {k: v for k, v in schema.items() if k not in {"description", "title"}}
    options = [o for o in kept.pop("anyOf", []) if o != {"type": "null"}]
    if kept.get("default", "") is None:
        kept.pop("default")
    if len(options) == 1:
        kept.update(options[0])
    elif options:
        kept["anyOf"] = options
    return kept


# OpenAPI links: which later calls take a value from a response (or its request) here,
# by (operation, status): what clients and fuzzers (schemathesis' stateful mode) follow.
_NEW_MEMORY = "$response.body#/memory_id"
_FIRST_LISTED = "$response.body#/results/0/memory_id"
_ITS_USER = "$request.body#/user_id"
LINKS: dict[tuple[str, int], dict[str, tuple[str, str, str]]] = {
    ("store_memory", 201): {
        "GetMemory": ("get_memory", "memory_id", _NEW_MEMORY),
        "PatchMemory": ("patch_memory", "memory_id", _NEW_MEMORY),
        "DeleteMemory": ("delete_memory", "memory_id", _NEW_MEMORY),
        "RestoreMemory": ("restore_memory", "memory_id", _NEW_MEMORY),
        "ListMemories": ("list_memories", "user_id", _ITS_USER),
        "ExportUser": ("export_user", "user_id", _ITS_USER),
        "ReflectionStatus": ("reflection_status", "user_id", _ITS_USER),
        "EraseUser": ("erase_user", "user_id", _ITS_USER),
    },
    ("store_memory", 200): {"GetMemory": ("get_memory", "memory_id", _NEW_MEMORY)},
    ("store_batch", 200): {
        "GetMemory": ("get_memory", "memory_id", _FIRST_LISTED),
        "ListMemories": ("list_memories", "user_id", _ITS_USER),
    },
    ("list_memories", 200): {
        "GetMemory": ("get_memory", "memory_id", _FIRST_LISTED),
        "DeleteMemory": ("delete_memory", "memory_id", _FIRST_LISTED),
    },
}


def _links(operation_id: str, status: int) -> dict[str, Any]:
    return {
        name: {"operationId": target, "parameters": {parameter: value}}
        for name, (target, parameter, value) in LINKS.get((operation_id, status), {}).items()
    }


def _content(media_type: str, ref: Any) -> dict[str, Any]:
    return {media_type: {"schema": ref if ref is not None else {"type": "string"}}}


def _responses(op: Operation, refs: dict[Any, Any]) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    for success in sorted(op.successes, key=lambda s: s.status):
        ref = refs[(success.model, "serialization")] if success.model is not None else None
        responses[str(success.status)] = {
            "description": success.description,
            "content": _content(success.media_type, ref),
        }
        links = _links(op.operation_id, success.status)
        if links:
            responses[str(success.status)]["links"] = links
    for status in op.error_statuses():
        model = op.error_model_for(status)
        if status in op.notes or model is not wire.ErrorResponse:
            note = op.notes.get(status)
            description = f"{note}. {status_description(status)}" if note else None
            responses[str(status)] = {
                "description": description or status_description(status),
                "content": _content("application/json", refs[(model, "serialization")]),
            }
        else:
            responses[str(status)] = {"$ref": f"#/components/responses/Error{status}"}
    return responses


def _operation(op: Operation, refs: dict[Any, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "operationId": op.operation_id,
        "tags": [op.tag],
        "summary": op.summary,
        "description": op.description,
    }
    parameters = _parameters(op, schemas)
    if parameters:
        spec["parameters"] = parameters
    if op.request is not None:
        spec["requestBody"] = {
            "required": True,
            "content": _content(op.request_media_type, refs[(op.request, "validation")]),
        }
    spec["responses"] = _responses(op, refs)
    spec["security"] = SECURITY if op.authenticated else []
    return spec


def _shared_error_responses(operations: tuple[Operation, ...]) -> dict[str, Any]:
    """One response per error status: those the operations answer, and every status of the
    error table (a domain error that no route raises yet is documented all the same)."""
    answered = {s for op in operations for s in op.error_statuses()}
    statuses = sorted(answered | {int(status) for status in STATUS_BY_ERROR.values()})
    return {
        f"Error{status}": {
            "description": status_description(status),
            "content": _content(
                "application/json", {"$ref": SCHEMA_REF.format(model="ErrorResponse")}
            ),
        }
        for status in statuses
    }


def build_document(operations: tuple[Operation, ...] = OPERATIONS) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``operations`` (by default the whole HTTP API)."""
    refs, schemas = _schemas(operations)
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op, refs, schemas)
    query_models = {op.query.__name__ for op in operations if op.query is not None}
    body_models = {op.request.__name__ for op in operations if op.request is not None}
    for name in query_models - body_models:  # their fields became parameters
        schemas.pop(name, None)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Hindsight",
            "version": __version__,
            "summary": "Long-term memory for LLM agents",
            "description": DESCRIPTION,
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "servers": [
            {
                "url": "..",
                "description": "where this document is served from (<base>/v1/openapi.json)",
            },
            {"url": "http://127.0.0.1:8080", "description": "the local server (make run)"},
        ],
        "tags": TAGS,
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "responses": _shared_error_responses(operations),
            "securitySchemes": {
                "bearerAuth": {"type": "http", "scheme": "bearer", "description": "an API key"},
                "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "x-api-key"},
            },
        },
    }


def render(document: dict[str, Any]) -> str:
    """The document as committed: indented JSON, non-ASCII kept, one trailing newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


@cache
def committed_document_text() -> str:
    """The committed document (package data), as served by ``GET /v1/openapi.json``."""
    return resources.files("hindsight.api").joinpath(DOCUMENT_FILE).read_text(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print the OpenAPI document of the HTTP API.")
    parser.add_argument("--output", type=Path, help="write it to this file instead of stdout")
    parser.add_argument(
        "--check", action="store_true", help=f"exit 1 if {COMMITTED_PATH} is not up to date"
    )
    args = parser.parse_args(argv)
    text = render(build_document())
    if args.check:
        current = COMMITTED_PATH.read_text(encoding="utf-8") if COMMITTED_PATH.exists() else ""
        if current != text:
            print(f"{COMMITTED_PATH} is stale; run `make openapi`", file=sys.stderr)
            return 1
        return 0
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
