"""``Hindsight``: the synchronous client. One method per route of the HTTP API.

from hindsight_client import Hindsight

with Hindsight() as memory:  # HINDSIGHT_URL / HINDSIGHT_API_KEY, or pass them
    memory.store("u1", "用户对花生过敏", category="constraint")
    page = memory.retrieve("u1", "饮食禁忌")
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

import httpx

from hindsight_client import _calls
from hindsight_client._calls import Call, RetryPolicy
from hindsight_client.jobs import ASYNC_CHARS, PREFER_ASYNC, Job, Progress, finished_job
from hindsight_client.types import (
    ContextResult,
    DeleteResult,
    DocumentResult,
    EraseResult,
    Health,
    JobStatus,
    Memory,
    MemoryPage,
    ReflectResult,
    RetrievedMemory,
    RetrievePage,
    StoreResult,
)

T = TypeVar("T")
When = datetime | str


class Hindsight:
    """A client for one Hindsight API (the local server, a deployed API, or embedded).

    ``base_url`` defaults to ``$HINDSIGHT_URL``, else ``http://127.0.0.1:8080``; for a
    deployed API use its invoke URL with the stage (``https://.../prod``). ``api_key``
    defaults to ``$HINDSIGHT_API_KEY`` (sent as ``Authorization: Bearer``). ``timeout`` is
    per request in seconds (or an ``httpx.Timeout``). ``max_retries`` bounds the retries on
    429/503 (every call) and on connection errors (calls that are safe to repeat, and any
    call whose request was never sent). ``transport`` replaces the network (tests,
    ``embedded``).
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = 3,
        backoff: float = 0.5,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = _calls.resolve_base_url(base_url)
        self.retry = RetryPolicy(max_retries=max_retries, backoff=backoff)
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=_calls.default_headers(_calls.resolve_api_key(api_key), headers),
            timeout=_calls.make_timeout(timeout),
            transport=transport,
        )

    @classmethod
    def embedded(
        cls,
        data_dir: str | Path | None = None,
        *,
        api_key: str | None = None,
        template: str | Path | None = None,
        **options: Any,
    ) -> Hindsight:
        """The embedded service in this process, behind the same interface and errors.

        Needs the server package (``pip install -e .`` in the repository). Requests go
        through the same route handlers as ``hindsight serve``, without a socket.
        ``data_dir`` defaults to ``$HINDSIGHT_DATA_DIR`` or ``.hindsight``.
        """
        from hindsight_client._embedded import in_process_transport

        transport = in_process_transport(data_dir, template)
        return cls("http://hindsight.embedded", api_key, transport=transport, **options)

    # --- lifecycle ------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Hindsight:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Hindsight(base_url={self.base_url!r})"

    # --- sending --------------------------------------------------------------------
    def _send(self, call: Call[T]) -> T:
        return call.parse(_calls.json_object(self._respond(call)))

    def _respond(self, call: Call[Any]) -> httpx.Response:
        """The call's successful response (retried as its policy allows), or its error."""
        attempt = 0
        while True:
            request = _calls.build_request(self._http, call)
            try:
                response = self._http.send(request)
            except httpx.TransportError as exc:
                if not self.retry.should_retry_error(exc, call.idempotent, attempt):
                    raise _calls.transport_error(exc, request) from exc
                time.sleep(self.retry.delay(attempt))
                attempt += 1
                continue
            if response.is_success:
                return response
            retry_after = _calls.retry_after_seconds(response)
            if not self.retry.should_retry_status(
                response.status_code, call.idempotent, attempt, retry_after
            ):
                raise _calls.error_from_response(response)
            time.sleep(self.retry.delay(attempt, retry_after))
            attempt += 1

    def _pages(self, call: Call[Any], limit: int | None) -> Iterator[Any]:
        yielded = 0
        while True:
            page = self._send(call)
            for item in page.results:
                if limit is not None and yielded >= limit:
                    return
                yield item
                yielded += 1
            if not page.has_more or not page.next_cursor:
                return
            call = call.with_cursor(page.next_cursor)

    # --- store ----------------------------------------------------------------------
    @overload
    def store(
        self,
        user_id: str,
        content: str,
        *,
        wait: Literal[False],
        on_progress: Progress | None = None,
        **fields: Any,
    ) -> Job[StoreResult]: ...

    @overload
    def store(
        self,
        user_id: str,
        content: str,
        *,
        wait: Literal[True] | None = None,
        on_progress: Progress | None = None,
        **fields: Any,
    ) -> StoreResult: ...

    def store(
        self,
        user_id: str,
        content: str,
        *,
        session_id: str | None = None,
        scope: str | None = None,
        category: str | None = None,
        emotion: str | None = None,
        speaker: str | None = None,
        participants: list[str] | None = None,
        agent_action: str | None = None,
        outcome: str | None = None,
        occurred_at: When | None = None,
        expires_at: When | None = None,
        ttl_seconds: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        wait: bool | None = None,
        on_progress: Progress | None = None,
        **fields: Any,
    ) -> StoreResult | Job[StoreResult]:
        """Store one episodic memory (``POST /v1/memories``).

        The same content for the same user and scope within the dedup window answers
        ``status="skipped"`` (``.duplicate``) with the existing memory's id.

        ``wait=False``: do not wait for the store; return a ``Job`` at once
        (``hindsight_client.jobs``: ``progress()``, ``result()``). ``wait=None`` (default):
        content over 20,000 characters is stored as a job and waited for, polling, with
        ``on_progress(done, total)`` as its chunks are embedded; shorter content is one
        request. ``wait=True``: always one request.
        """
        given = _calls.options(locals(), "user_id", "content", "wait", "on_progress")
        call = _calls.store(user_id, content, given)
        if wait is None:
            wait = len(content) <= ASYNC_CHARS
            if not wait:
                return self._as_job(call).result(on_progress=on_progress)
        return self._send(call) if wait else self._as_job(call)

    def store_document(
        self,
        user_id: str,
        file_name: str,
        data: bytes | str,
        *,
        wait: bool = True,
        on_progress: Progress | None = None,
        **fields: Any,
    ) -> DocumentResult | Job[DocumentResult]:
        """Store a file as one memory (``POST /v1/documents``): ``data`` is its bytes
        (Markdown, text, HTML, PDF, DOCX) or its text; ``fields`` are ``document_id``,
        ``content_type``, ``scope``, ``session_id``, ``occurred_at``, ``metadata``,
        ``category``. Storing the same document id again replaces it.

        A document is sent as a job (``Prefer: respond-async``): with ``wait=True`` it is
        waited for, polling, with ``on_progress(done, total)`` as its chunks are
        embedded; ``wait=False`` returns the ``Job`` at once.
        """
        job = self._as_job(_calls.store_document(user_id, file_name, data, fields))
        return job.result(on_progress=on_progress) if wait else job

    def _as_job(self, call: Call[T]) -> Job[T]:
        """Send a write with ``Prefer: respond-async``: its job, or (a server that keeps
        none answered it when done) a finished handle holding the answer."""
        preferred = dataclasses.replace(call, headers={**(call.headers or {}), **PREFER_ASYNC})
        response = self._respond(preferred)
        body = _calls.json_object(response)
        if response.status_code == 202 and "job_id" in body:
            return Job(str(body["job_id"]), self.job_status, call.parse)
        return finished_job("", call.parse, body)

    def job_status(self, job_id: str) -> JobStatus:
        """How a write accepted as a job is doing (``GET /v1/jobs/{job_id}``)."""
        return self._send(_calls.job_status(job_id))

    def store_many(
        self,
        user_id: str,
        items: Iterable[str | Mapping[str, Any]],
        *,
        batch_size: int = _calls.MAX_BATCH_ITEMS,
    ) -> list[StoreResult]:
        """Store many memories of one user (``POST /v1/memories/batch``, 100 a request).

        Items are strings (the content) or mappings with ``content`` and any field of
        ``store``. One result per item, in order. A failing batch raises; the batches
        before it stay stored (each batch is all-or-nothing on the server).
        """
        results: list[StoreResult] = []
        for call in _calls.store_batches(user_id, items, batch_size):
            batch: list[StoreResult] = self._send(call)
            results.extend(batch)
        return results

    # --- retrieve ---------------------------------------------------------------------
    def retrieve(
        self,
        user_id: str,
        query: str,
        *,
        top_k: int | None = None,
        cursor: str | None = None,
        scopes: list[str] | None = None,
        kinds: list[str] | None = None,
        categories: list[str] | None = None,
        emotions: list[str] | None = None,
        statuses: list[str] | None = None,
        session_id: str | None = None,
        since: When | None = None,
        until: When | None = None,
        min_similarity: float | None = None,
        min_score: float | None = None,
        time_decay: float | None = None,
        as_of: When | None = None,
        **options: Any,
    ) -> RetrievePage:
        """One page of the memories that matter for ``query`` (``POST /v1/retrieve``).

        ``top_k`` is the page size (at most 20); ``has_more``/``next_cursor`` lead on.
        ``min_score`` leaves out results less probable than it (``0``: every match; unset:
        the server's default).
        """
        given = _calls.options(locals(), "user_id", "query")
        return self._send(_calls.retrieve(user_id, query, given))

    def iter_retrieve(
        self, user_id: str, query: str, *, limit: int | None = None, **options: Any
    ) -> Iterator[RetrievedMemory]:
        """Every result of ``retrieve`` across pages (at most ``limit``), best first."""
        return self._pages(_calls.retrieve(user_id, query, options), limit)

    def context(
        self,
        user_id: str,
        session_id: str,
        query: str | None = None,
        *,
        budget_tokens: int | None = None,
        recent_turns: int | None = None,
        max_facts: int | None = None,
        as_of: When | None = None,
        **options: Any,
    ) -> ContextResult:
        """The working-memory prompt block for a session (``POST /v1/context``)."""
        given = _calls.options(locals(), "user_id", "session_id")
        return self._send(_calls.context(user_id, session_id, given))

    # --- reflect and review ---------------------------------------------------------
    def reflect(
        self, user_id: str, *, since: When | None = None, dry_run: bool | None = None
    ) -> ReflectResult:
        """Distil the user's new episodes into facts (``POST /v1/reflect``)."""
        return self._send(_calls.reflect(user_id, {"since": since, "dry_run": dry_run}))

    def approve(self, memory_id: str) -> Memory:
        """Approve a pending fact (``POST /v1/semantic/{id}/approve``); returns the fact."""
        return self._send(_calls.review(memory_id, approve=True))

    def reject(self, memory_id: str) -> Memory:
        """Reject a pending fact (``POST /v1/semantic/{id}/reject``); returns the fact."""
        return self._send(_calls.review(memory_id, approve=False))

    # --- browse and forget ----------------------------------------------------------
    def list_memories(
        self,
        user_id: str,
        *,
        kind: str | None = None,
        status: str | None = None,
        category: str | None = None,
        scope: str | None = None,
        session_id: str | None = None,
        since: When | None = None,
        until: When | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        include_expired: bool | None = None,
    ) -> MemoryPage:
        """One page of a user's memories (``GET /v1/users/{user_id}/memories``)."""
        given = _calls.options(locals(), "user_id")
        return self._send(_calls.list_memories(user_id, given))

    def iter_memories(
        self,
        user_id: str,
        *,
        limit: int | None = None,
        page_size: int | None = None,
        **filters: Any,
    ) -> Iterator[Memory]:
        """Every memory ``list_memories`` finds (at most ``limit``), ``page_size`` a request."""
        call = _calls.list_memories(user_id, {**filters, "limit": page_size})
        return self._pages(call, limit)

    def get(self, memory_id: str) -> Memory:
        """One memory by id (``GET /v1/memories/{id}``)."""
        return self._send(_calls.get(memory_id))

    def delete(self, memory_id: str) -> DeleteResult:
        """Forget one memory, and the facts only it supported (``DELETE /v1/memories/{id}``)."""
        return self._send(_calls.delete(memory_id))

    def erase_user(self, user_id: str) -> EraseResult:
        """Erase a user and everything derived from them (``DELETE /v1/users/{user_id}``).

        It waits at least 10 minutes for the answer, whatever the client's timeout: the
        server rewrites the user's store files (seconds per 100k memories)."""
        return self._send(_calls.erase_user(user_id))

    def health(self) -> Health:
        """The server's model, reflector and index size (``GET /v1/health``; no key needed)."""
        return self._send(_calls.health())
