"""The memory service of a running ``hindsight serve``, called over its HTTP API.

While a server holds a data directory (``discovery``), the CLI and ``hindsight mcp`` on
that directory call ``ServedService`` instead of opening the files: it has the methods
of ``MemoryService`` that those entry points call, each sending the matching request of
the HTTP API with the configured key and turning the answer back into the core's result
models, so a command prints the same thing either way. Errors come back as the core's
errors with the server's message (a 404 is a ``NotFoundError``...).

The caller is whoever the key names (or the server's anonymous tenant on a keyless
server): the ``principal`` argument of each method is not sent. Operator tasks that need
the directory alone (reindex, check-index, maintain, import-export) are refused with
``DirectoryServedError``, which says what to do.

The product does not use the ``hindsight-client`` package for this: it is a separate
distribution that depends on this one (its embedded mode imports the server), not a
dependency of it, and the Lambda layer does not ship it. The calls here are plain httpx,
already a dependency.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from hindsight.core.commands import (
    ContextCommand,
    ListMemoriesCommand,
    ReflectCommand,
    RetrieveCommand,
    StoreBatchCommand,
    StoreMemoryCommand,
)
from hindsight.core.errors import (
    ConflictError,
    ForbiddenError,
    HindsightError,
    InvalidRequestError,
    MalformedRequestError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedDocumentError,
)
from hindsight.core.models import Principal
from hindsight.core.results import (
    ContextResult,
    ListResult,
    ReflectResult,
    RetrieveResult,
    StoreOutcome,
)
from hindsight.core.service import MemoryService
from hindsight.core.usecases.browse import ReflectionStatus
from hindsight.core.usecases.documents import DocumentOutcome, StoreDocumentCommand
from hindsight.core.usecases.index_check import IndexCheck
from hindsight.core.usecases.pin import PatchMemoryCommand
from hindsight.server.discovery import ServerRecord, find_server

TIMEOUT_SECONDS = 300.0  # a long document or a reflection with an LLM takes a while
_ERRORS: dict[int, type[HindsightError]] = {
    400: MalformedRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    415: UnsupportedDocumentError,
    422: InvalidRequestError,
    429: RateLimitedError,
    503: UnavailableError,
}


class DirectoryServedError(ConflictError):
    """A task that needs the data directory alone, asked while a server holds it."""


def _segment(value: str) -> str:
    return quote(value, safe="")


def _model_body(body: dict[str, Any]) -> dict[str, Any]:
    """An answer's body without the envelope's ``status`` (the result models have none)."""
    return {key: value for key, value in body.items() if key != "status"}


class ServedService:
    """``MemoryService``'s entry-point methods, answered by the server at ``record.url``."""

    def __init__(
        self,
        record: ServerRecord,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.record = record
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._transport = transport
        self._http = self._client()

    def _client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.record.url,
            headers=self._headers,
            timeout=TIMEOUT_SECONDS,
            transport=self._transport,
        )

    def close(self) -> None:
        self._http.close()

    # --- the HTTP calls ------------------------------------------------------------------
    def _moved(self) -> bool:
        """Whether another server now holds the directory (restarted, maybe on another
        port): then it is the one called from now on."""
        record = find_server(self.record.data_dir)
        if record is None or (record.url, record.pid) == (self.record.url, self.record.pid):
            return False
        self._http.close()
        self.record = record
        self._http = self._client()
        return True

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.ConnectError:
                # nothing reached the server, so asking the one that replaced it is safe
                if not self._moved():
                    raise
                response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise UnavailableError(
                f"the Hindsight server at {self.record.url} (pid {self.record.pid}), which "
                f"serves {self.record.data_dir}, did not answer ({exc}); check it is running"
            ) from exc
        if response.status_code >= 400:
            raise self._error(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        body = self._send(method, path, **kwargs).json()
        if not isinstance(body, dict):
            raise UnavailableError(f"the server at {self.record.url} answered {path} oddly")
        return body

    def _error(self, response: httpx.Response) -> HindsightError:
        try:
            message = str(response.json().get("message") or response.reason_phrase)
        except (ValueError, AttributeError):
            message = response.reason_phrase or f"HTTP {response.status_code}"
        if response.status_code == 401:
            message = (
                f"{message} (the Hindsight server at {self.record.url} serves this data "
                "directory and asks for a key: set HINDSIGHT_API_KEY or pass --api-key)"
            )
        return _ERRORS.get(response.status_code, HindsightError)(message)

    @staticmethod
    def _request(command: BaseModel) -> dict[str, Any]:
        return command.model_dump(mode="json", exclude_unset=True)

    def refusal(self, task: str) -> DirectoryServedError:
        """The error for ``task``, which needs the directory this server holds."""
        pid = self.record.pid
        return DirectoryServedError(
            f"{task} needs the data directory {self.record.data_dir} alone, and the "
            f"Hindsight server at {self.record.url} (pid {pid}) is serving it: stop the "
            f"server (Ctrl-C in its terminal, or `kill {pid}`), run this again, then start "
            "the server again"
        )

    # --- store ---------------------------------------------------------------------------
    def store(self, principal: Principal, command: StoreMemoryCommand) -> StoreOutcome:
        body = self._json("POST", "/v1/memories", json=self._request(command))
        return StoreOutcome.model_validate(body)

    def store_batch(self, principal: Principal, command: StoreBatchCommand) -> list[StoreOutcome]:
        body = self._json("POST", "/v1/memories/batch", json=self._request(command))
        return [StoreOutcome.model_validate(item) for item in body.get("results", [])]

    def store_document(
        self, principal: Principal, command: StoreDocumentCommand
    ) -> DocumentOutcome:
        upload = command.model_dump(mode="json", exclude_unset=True, exclude={"data"})
        upload["file_name"] = command.file_name
        upload["content_base64"] = base64.b64encode(command.data).decode("ascii")
        body = self._json("POST", "/v1/documents", json=upload)
        return DocumentOutcome.model_validate(body)

    # --- retrieve and browse -------------------------------------------------------------
    def retrieve(self, principal: Principal, command: RetrieveCommand) -> RetrieveResult:
        body = self._json("POST", "/v1/retrieve", json=self._request(command))
        return RetrieveResult.model_validate(_model_body(body))

    def context(self, principal: Principal, command: ContextCommand) -> ContextResult:
        body = self._json("POST", "/v1/context", json=self._request(command))
        return ContextResult.model_validate(_model_body(body))

    def list_memories(self, principal: Principal, command: ListMemoriesCommand) -> ListResult:
        # a query string has no null: an option left out is an option not sent
        query = command.model_dump(mode="json", exclude_unset=True, exclude_none=True)
        user_id = query.pop("user_id", command.user_id)
        path = f"/v1/users/{_segment(user_id)}/memories"
        body = self._json("GET", path, params=query)
        return ListResult.model_validate(_model_body(body))

    def get_memory(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        return self._json("GET", f"/v1/memories/{_segment(memory_id)}")

    def reflection_status(self, principal: Principal, user_id: str) -> ReflectionStatus:
        body = self._json("GET", f"/v1/users/{_segment(user_id)}/reflection")
        return ReflectionStatus.model_validate(_model_body(body))

    def export_user(self, principal: Principal, user_id: str) -> Iterator[str]:
        try:
            response = self._send("GET", f"/v1/users/{_segment(user_id)}/export")
        except PayloadTooLargeError as exc:
            raise self.refusal(f"exporting {user_id} (larger than one HTTP answer: 5 MB)") from exc
        return iter(response.text.splitlines(keepends=True))

    # --- reflect and review --------------------------------------------------------------
    def reflect(self, principal: Principal, command: ReflectCommand) -> ReflectResult:
        body = self._json("POST", "/v1/reflect", json=self._request(command))
        return ReflectResult.model_validate(_model_body(body))

    def approve(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        return self._json("POST", f"/v1/semantic/{_segment(memory_id)}/approve")

    def reject(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        return self._json("POST", f"/v1/semantic/{_segment(memory_id)}/reject")

    # --- forget, restore, pin ------------------------------------------------------------
    def delete_memory(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        return self._json("DELETE", f"/v1/memories/{_segment(memory_id)}")

    def erase_user(self, principal: Principal, user_id: str) -> dict[str, Any]:
        return self._json("DELETE", f"/v1/users/{_segment(user_id)}")

    def restore_memory(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        return self._json("POST", f"/v1/memories/{_segment(memory_id)}/restore")

    def patch_memory(
        self, principal: Principal, memory_id: str, command: PatchMemoryCommand
    ) -> dict[str, Any]:
        path = f"/v1/memories/{_segment(memory_id)}"
        return self._json("PATCH", path, json=self._request(command))

    # --- the server's own ----------------------------------------------------------------
    def health(self, tenant_id: str | None = None) -> dict[str, Any]:
        return self._json("GET", "/v1/health")

    def now(self) -> datetime:
        return datetime.now(UTC)

    def warm_up(self) -> None:
        """Nothing to load: the server has its model loaded already."""

    # --- what needs the directory alone --------------------------------------------------
    def reindex(
        self, re_embed: bool = False, progress: Callable[[int, int], None] | None = None
    ) -> dict[str, Any]:
        raise self.refusal("reindex")

    def check_index(self, tenant_id: str | None = None, user_id: str | None = None) -> IndexCheck:
        raise self.refusal("check-index")

    def import_export(
        self, principal: Principal, lines: Iterable[str], user_id: str | None = None
    ) -> dict[str, Any]:
        raise self.refusal("import-export")


# what the CLI and the stdio MCP server call: the service itself, or the server's
MemoryApi = MemoryService | ServedService
