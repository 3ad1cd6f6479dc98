"""What the sync and async clients share: one ``Call`` per API method, and retry policy.

A ``Call`` says what to send (method, path, JSON body or query), whether repeating it is
safe (``idempotent``) and how to read the answer (``parse``). The clients only send
calls and apply ``RetryPolicy``; everything about the wire contract lives here.
"""

from __future__ import annotations

import base64
import dataclasses
import email.utils
import json
import os
import random
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from hindsight_client.errors import (
    APIError,
    HindsightConnectionError,
    HindsightError,
    HindsightTimeoutError,
    error_for_status,
)
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
    RetrievePage,
    StoreResult,
    from_json,
)

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8080"
URL_ENV = "HINDSIGHT_URL"
API_KEY_ENV = "HINDSIGHT_API_KEY"
MAX_BATCH_ITEMS = 100  # the server's limit for POST /v1/memories/batch
IDEMPOTENCY_HEADER = "Idempotency-Key"
DEFAULT_TIMEOUT = 30.0
# an erase rewrites the user's store files on the embedded server (~14 s at 100k memories
# on two cores, docs/decisions.md): it waits this long whatever the timeout
ERASE_TIMEOUT = 600.0
USER_AGENT = "hindsight-client-python/0.1.0"


# --- configuration ----------------------------------------------------------------------
def resolve_base_url(base_url: str | None) -> str:
    url = base_url or os.environ.get(URL_ENV) or DEFAULT_URL
    if not url.startswith(("http://", "https://")):
        raise HindsightError(
            f"base_url {url!r} must start with http:// or https:// "
            f"(e.g. {DEFAULT_URL}, or your API's invoke URL with its stage)"
        )
    return url.rstrip("/")


def resolve_api_key(api_key: str | None) -> str | None:
    return api_key if api_key is not None else (os.environ.get(API_KEY_ENV) or None)


def default_headers(api_key: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    headers.update(extra or {})
    return headers


def make_timeout(timeout: float | httpx.Timeout | None) -> httpx.Timeout:
    if isinstance(timeout, httpx.Timeout):
        return timeout
    seconds = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    return httpx.Timeout(seconds, connect=min(seconds, 10.0))


def call_timeout(client: httpx.Timeout, call: Call[Any]) -> httpx.Timeout | None:
    """The timeout of one call: None (the client's) unless the call needs a longer read
    timeout than the client's, which it then gets (connect, write and pool unchanged)."""
    least = call.least_read_timeout
    if least is None or client.read is None or client.read >= least:
        return None
    return httpx.Timeout(connect=client.connect, read=least, write=client.write, pool=client.pool)


def build_request(http: httpx.Client | httpx.AsyncClient, call: Call[Any]) -> httpx.Request:
    """The request of a call, for the sync and the async client alike."""
    return http.build_request(
        call.method,
        call.path,
        json=call.body,
        params=call.params,
        headers=call.headers,
        timeout=call_timeout(http.timeout, call) or httpx.USE_CLIENT_DEFAULT,
    )


# --- retries ----------------------------------------------------------------------------
RETRY_ALWAYS = frozenset({429, 503})  # the server wrote nothing; worth another try
RETRY_IF_IDEMPOTENT = frozenset({502, 504})  # a gateway lost the answer; may have run
# retried only when the server says when (Retry-After): a 409 with it is a store whose
# Idempotency-Key is still being processed, and asking again gets its answer; other
# conflicts carry none and need a different request
RETRY_IF_ASKED = frozenset({409})
# errors raised before the request left this process: repeating them is always safe
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; ``Retry-After`` (capped) wins when the server sends it.

    Attempt ``n`` (0-based) waits between half and all of ``min(max_backoff, backoff * 2**n)``.
    """

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0
    rng: random.Random = field(default_factory=random.Random, repr=False, compare=False)

    def should_retry_status(
        self, status: int, idempotent: bool, attempt: int, retry_after: float | None = None
    ) -> bool:
        if attempt >= self.max_retries:
            return False
        if status in RETRY_IF_ASKED:
            return retry_after is not None
        return status in RETRY_ALWAYS or (idempotent and status in RETRY_IF_IDEMPOTENT)

    def should_retry_error(
        self, error: httpx.TransportError, idempotent: bool, attempt: int
    ) -> bool:
        if attempt >= self.max_retries:
            return False
        return idempotent or isinstance(error, _NOT_SENT)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_retry_after))
        ceiling = min(self.max_backoff, self.backoff * (2.0**attempt))
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)


def retry_after_seconds(response: httpx.Response) -> float | None:
    """``Retry-After`` as seconds: a number, or an HTTP date; None when absent or unreadable."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def transport_error(error: httpx.TransportError, request: httpx.Request) -> HindsightError:
    where = f"{request.method} {request.url}"
    if isinstance(error, httpx.TimeoutException):
        return HindsightTimeoutError(
            f"no answer from {where} in time ({type(error).__name__}); the server may be busy "
            "or unreachable — raise timeout= or check the URL"
        )
    return HindsightConnectionError(
        f"cannot reach {where} ({type(error).__name__}: {error}); is the server running "
        f"(make run) and is the base URL right?"
    )


# --- answers ----------------------------------------------------------------------------
def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    text = response.text.strip()[:500]
    return text or response.reason_phrase or "error"


def error_from_response(response: httpx.Response) -> APIError:
    return error_for_status(response.status_code, _error_message(response))


def json_object(response: httpx.Response) -> dict[str, Any]:
    """The body of a successful answer, which is always a JSON object."""
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError) as exc:
        raise HindsightError(
            f"the server answered {response.status_code} with a body that is not JSON; "
            "is the base URL a Hindsight API?",
            response.status_code,
        ) from exc
    if not isinstance(body, dict):
        raise HindsightError(
            f"the server answered {response.status_code} with JSON that is not an object",
            response.status_code,
        )
    return body


# --- calls ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[dict[str, Any]], T]
    body: dict[str, Any] | None = None
    params: dict[str, str] | None = None
    idempotent: bool = False
    headers: dict[str, str] | None = None
    least_read_timeout: float | None = None  # the client's read timeout, raised to this

    def with_cursor(self, cursor: str) -> Call[T]:
        """The same call for the page after ``cursor`` (body or query, as the call has it)."""
        if self.body is not None:
            return dataclasses.replace(self, body={**self.body, "cursor": cursor})
        return dataclasses.replace(self, params={**(self.params or {}), "cursor": cursor})


def _wire(value: Any) -> Any:
    """A value as JSON: datetimes as ISO 8601, tuples and sets as lists."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_wire(v) for v in value]
    return value


def options(given: Mapping[str, Any], *positional: str) -> dict[str, Any]:
    """A method's keyword arguments (its ``locals()``) without ``self`` and the positional
    ones, with its ``**extra`` keywords merged in: the fields to send."""
    values = {k: v for k, v in given.items() if k != "self" and k not in positional}
    extra: dict[str, Any] = {}
    for name in ("fields", "options"):
        extra.update(values.pop(name, None) or {})
    return {**values, **extra}


def _fields(**values: Any) -> dict[str, Any]:
    """Keyword arguments given (not None) as JSON fields."""
    return {k: _wire(v) for k, v in values.items() if v is not None}


def _query(values: Mapping[str, Any]) -> dict[str, str]:
    params: dict[str, str] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            params[key] = "true" if value else "false"
        else:
            wired = _wire(value)
            params[key] = wired if isinstance(wired, str) else json.dumps(wired)
    return params


def _segment(value: str, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise HindsightError(f"{name} must be a non-empty string, got {value!r}")
    return quote(value, safe="")


def _parser(cls: type[T], key: str | None = None) -> Callable[[dict[str, Any]], T]:
    def parse(body: dict[str, Any]) -> T:
        return from_json(cls, body[key] if key else body)

    return parse


def _store_results(body: dict[str, Any]) -> list[StoreResult]:
    return [from_json(StoreResult, item) for item in body.get("results", [])]


def once(key: str | None = None) -> dict[str, str]:
    """The ``Idempotency-Key`` of one write: the server answers a retry of it with the
    first answer and stores nothing new, so a write is retried like a read (a timeout, a
    502/504 after it may have run)."""
    return {IDEMPOTENCY_HEADER: key or f"hindsight-py-{uuid.uuid4().hex}"}


def store(user_id: str, content: str, fields: Mapping[str, Any]) -> Call[StoreResult]:
    body = {"user_id": user_id, "content": content, **_fields(**fields)}
    return Call("POST", "/v1/memories", _parser(StoreResult), body, idempotent=True, headers=once())


def batch_item(item: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(item, str):
        return {"content": item}
    if isinstance(item, Mapping):
        return _fields(**item)
    raise HindsightError(
        f"store_many items must be strings or mappings with 'content', not {type(item).__name__}"
    )


def store_batches(
    user_id: str, items: Iterable[str | Mapping[str, Any]], batch_size: int = MAX_BATCH_ITEMS
) -> list[Call[list[StoreResult]]]:
    """One call per ``batch_size`` items (at most the server's 100)."""
    if not 1 <= batch_size <= MAX_BATCH_ITEMS:
        raise HindsightError(f"batch_size must be between 1 and {MAX_BATCH_ITEMS}")
    wired = [batch_item(item) for item in items]
    return [
        Call(
            "POST",
            "/v1/memories/batch",
            _store_results,
            {"user_id": user_id, "items": wired[start : start + batch_size]},
            idempotent=True,
            headers=once(),
        )
        for start in range(0, len(wired), batch_size)
    ]


def retrieve(user_id: str, query: str, options: Mapping[str, Any]) -> Call[RetrievePage]:
    body = {"user_id": user_id, "query": query, **_fields(**options)}
    return Call("POST", "/v1/retrieve", _parser(RetrievePage), body, idempotent=True)


def context(user_id: str, session_id: str, options: Mapping[str, Any]) -> Call[ContextResult]:
    body = {"user_id": user_id, "session_id": session_id, **_fields(**options)}
    return Call("POST", "/v1/context", _parser(ContextResult), body, idempotent=True)


def reflect(user_id: str, options: Mapping[str, Any]) -> Call[ReflectResult]:
    body = {"user_id": user_id, **_fields(**options)}
    return Call("POST", "/v1/reflect", _parser(ReflectResult), body)


def list_memories(user_id: str, filters: Mapping[str, Any]) -> Call[MemoryPage]:
    path = f"/v1/users/{_segment(user_id, 'user_id')}/memories"
    return Call("GET", path, _parser(MemoryPage), params=_query(filters), idempotent=True)


def get(memory_id: str) -> Call[Memory]:
    path = f"/v1/memories/{_segment(memory_id, 'memory_id')}"
    return Call("GET", path, _parser(Memory, "memory"), idempotent=True)


def delete(memory_id: str) -> Call[DeleteResult]:
    path = f"/v1/memories/{_segment(memory_id, 'memory_id')}"
    return Call("DELETE", path, _parser(DeleteResult), idempotent=True)


def review(memory_id: str, approve: bool) -> Call[Memory]:
    verb = "approve" if approve else "reject"
    path = f"/v1/semantic/{_segment(memory_id, 'memory_id')}/{verb}"
    return Call("POST", path, _parser(Memory, "memory"), idempotent=True)


def erase_user(user_id: str) -> Call[EraseResult]:
    path = f"/v1/users/{_segment(user_id, 'user_id')}"
    return Call(
        "DELETE", path, _parser(EraseResult), idempotent=True, least_read_timeout=ERASE_TIMEOUT
    )


def store_document(
    user_id: str, file_name: str, data: bytes | str, fields: Mapping[str, Any]
) -> Call[DocumentResult]:
    """A file's bytes (sent base64) or its text, as ``POST /v1/documents``."""
    content = (
        {"text": data}
        if isinstance(data, str)
        else {"content_base64": base64.b64encode(data).decode("ascii")}
    )
    body = {"user_id": user_id, "file_name": file_name, **content, **_fields(**fields)}
    # safe to send again: the same document id is replaced, or found unchanged
    return Call("POST", "/v1/documents", _parser(DocumentResult), body, idempotent=True)


def job_status(job_id: str) -> Call[JobStatus]:
    path = f"/v1/jobs/{_segment(job_id, 'job_id')}"
    return Call("GET", path, _parser(JobStatus), idempotent=True)


def health() -> Call[Health]:
    return Call("GET", "/v1/health", _parser(Health), idempotent=True)
