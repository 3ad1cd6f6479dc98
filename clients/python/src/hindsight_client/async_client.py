"""``AsyncHindsight``: the asynchronous client (asyncio or trio), with ``Hindsight``'s methods.

from hindsight_client import AsyncHindsight

async with AsyncHindsight() as memory:
    await memory.store("u1", "用户对花生过敏", category="constraint")
    async for hit in memory.iter_retrieve("u1", "饮食禁忌"):
        print(hit.content)
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx

from hindsight_client import _calls
from hindsight_client._calls import Call, RetryPolicy
from hindsight_client.jobs import (
    ASYNC_CHARS,
    POLL_SECONDS,
    PREFER_ASYNC,
    JobFailedError,
    Progress,
)
from hindsight_client.types import (
    ContextResult,
    DeleteResult,
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


async def _sleep(seconds: float) -> None:
    """Wait under asyncio or trio alike (anyio, which httpx brings; imported on first retry)."""
    import anyio

    await anyio.sleep(seconds)


class AsyncHindsight:
    """The asynchronous twin of ``Hindsight``: the same methods, awaited.

    A client for one Hindsight API (the local server, a deployed API, or embedded).

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
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = _calls.resolve_base_url(base_url)
        self.retry = RetryPolicy(max_retries=max_retries, backoff=backoff)
        self._http = httpx.AsyncClient(
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
    ) -> AsyncHindsight:
        """The embedded service in this process, behind the same interface and errors.

        Needs the server package (``pip install -e .`` in the repository). Requests go
        through the same route handlers as ``hindsight serve``, without a socket.
        ``data_dir`` defaults to ``$HINDSIGHT_DATA_DIR`` or ``.hindsight``.
        """
        from hindsight_client._embedded import in_process_transport

        transport = in_process_transport(data_dir, template)
        return cls("http://hindsight.embedded", api_key, transport=transport, **options)

    # --- lifecycle ------------------------------------------------------------------
    async def aclose(self) -> None:
        await self._http.aclose()

    async def close(self) -> None:
        """The same as ``aclose``."""
        await self.aclose()

    async def __aenter__(self) -> AsyncHindsight:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncHindsight(base_url={self.base_url!r})"

    # --- sending --------------------------------------------------------------------
    async def _send(self, call: Call[T]) -> T:
        return call.parse(_calls.json_object(await self._respond(call)))

    async def _respond(self, call: Call[Any]) -> httpx.Response:
        """The call's successful response (retried as its policy allows), or its error."""
        attempt = 0
        while True:
            request = _calls.build_request(self._http, call)
            try:
                response = await self._http.send(request)
            except httpx.TransportError as exc:
                if not self.retry.should_retry_error(exc, call.idempotent, attempt):
                    raise _calls.transport_error(exc, request) from exc
                await _sleep(self.retry.delay(attempt))
                attempt += 1
                continue
            if response.is_success:
                return response
            retry_after = _calls.retry_after_seconds(response)
            if not self.retry.should_retry_status(
                response.status_code, call.idempotent, attempt, retry_after
            ):
                raise _calls.error_from_response(response)
            await _sleep(self.retry.delay(attempt, retry_after))
            attempt += 1

    async def _pages(self, call: Call[Any], limit: int | None) -> AsyncIterator[Any]:
        yielded = 0
        while True:
            page = await self._send(call)
            for item in page.results:
                if limit is not None and yielded >= limit:
                    return
                yield item
                yielded += 1
            if not page.has_more or not page.next_cursor:
                return
            call = call.with_cursor(page.next_cursor)

    # --- store ----------------------------------------------------------------------
    async def store(
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
        on_progress: Progress | None = None,
        **fields: Any,
    ) -> StoreResult:
        """Store one episodic memory (``POST /v1/memories``).

        The same content for the same user and scope within the dedup window answers
        ``status="skipped"`` (``.duplicate``) with the existing memory's id. Content over
        20,000 characters is stored as a job (``Prefer: respond-async``) and waited for,
        polling, with ``on_progress(done, total)`` as its chunks are embedded.
        """
        given = _calls.options(locals(), "user_id", "content", "on_progress")
        call = _calls.store(user_id, content, given)
        if len(content) <= ASYNC_CHARS:
            return await self._send(call)
        return await self._waited(call, on_progress)

    async def _waited(self, call: Call[T], on_progress: Progress | None) -> T:
        """Send a write as a job and wait for it (a server that keeps no jobs answers it
        when done)."""
        headers = {**(call.headers or {}), **PREFER_ASYNC}
        response = await self._respond(dataclasses.replace(call, headers=headers))
        body = _calls.json_object(response)
        if response.status_code != 202 or "job_id" not in body:
            return call.parse(body)
        seen = (-1, -1)
        while True:
            status = await self.job_status(str(body["job_id"]))
            if on_progress is not None and (status.done, status.total) != seen:
                seen = (status.done, status.total)
                on_progress(*seen)
            if status.finished:
                if status.state != "succeeded" or status.result is None:
                    raise JobFailedError(status.error or f"job {status.job_id} failed")
                return call.parse(status.result)
            await _sleep(POLL_SECONDS)

    async def job_status(self, job_id: str) -> JobStatus:
        """How a write accepted as a job is doing (``GET /v1/jobs/{job_id}``)."""
        return await self._send(_calls.job_status(job_id))

    async def store_many(
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
            batch: list[StoreResult] = await self._send(call)
            results.extend(batch)
        return results

    # --- retrieve ---------------------------------------------------------------------
    async def retrieve(
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
        time_decay: float | None = None,
        as_of: When | None = None,
        **options: Any,
    ) -> RetrievePage:
        """One page of the memories that matter for ``query`` (``POST /v1/retrieve``).

        ``top_k`` is the page size (at most 20); ``has_more``/``next_cursor`` lead on.
        """
        given = _calls.options(locals(), "user_id", "query")
        return await self._send(_calls.retrieve(user_id, query, given))

    def iter_retrieve(
        self, user_id: str, query: str, *, limit: int | None = None, **options: Any
    ) -> AsyncIterator[RetrievedMemory]:
        """Every result of ``retrieve`` across pages (at most ``limit``), best first."""
        return self._pages(_calls.retrieve(user_id, query, options), limit)

    async def context(
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
        return await self._send(_calls.context(user_id, session_id, given))

    # --- reflect and review ---------------------------------------------------------
    async def reflect(
        self, user_id: str, *, since: When | None = None, dry_run: bool | None = None
    ) -> ReflectResult:
        """Distil the user's new episodes into facts (``POST /v1/reflect``)."""
        return await self._send(_calls.reflect(user_id, {"since": since, "dry_run": dry_run}))

    async def approve(self, memory_id: str) -> Memory:
        """Approve a pending fact (``POST /v1/semantic/{id}/approve``); returns the fact."""
        return await self._send(_calls.review(memory_id, approve=True))

    async def reject(self, memory_id: str) -> Memory:
        """Reject a pending fact (``POST /v1/semantic/{id}/reject``); returns the fact."""
        return await self._send(_calls.review(memory_id, approve=False))

    # --- browse and forget ----------------------------------------------------------
    async def list_memories(
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
        return await self._send(_calls.list_memories(user_id, given))

    def iter_memories(
        self,
        user_id: str,
        *,
        limit: int | None = None,
        page_size: int | None = None,
        **filters: Any,
    ) -> AsyncIterator[Memory]:
        """Every memory ``list_memories`` finds (at most ``limit``), ``page_size`` a request."""
        call = _calls.list_memories(user_id, {**filters, "limit": page_size})
        return self._pages(call, limit)

    async def get(self, memory_id: str) -> Memory:
        """One memory by id (``GET /v1/memories/{id}``)."""
        return await self._send(_calls.get(memory_id))

    async def delete(self, memory_id: str) -> DeleteResult:
        """Forget one memory, and the facts only it supported (``DELETE /v1/memories/{id}``)."""
        return await self._send(_calls.delete(memory_id))

    async def erase_user(self, user_id: str) -> EraseResult:
        """Erase a user and everything derived from them (``DELETE /v1/users/{user_id}``).

        It waits at least 10 minutes for the answer, whatever the client's timeout: the
        server rewrites the user's store files (seconds per 100k memories)."""
        return await self._send(_calls.erase_user(user_id))

    async def health(self) -> Health:
        """The server's model, reflector and index size (``GET /v1/health``; no key needed)."""
        return await self._send(_calls.health())
