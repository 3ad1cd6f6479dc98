"""Which HTTP status each domain error answers: the one table, kept at the edge.

The core raises errors that describe what went wrong (``NotFoundError``,
``ConfigurationError``...) and knows nothing of HTTP. Every entry point that speaks
HTTP or reports a status (the Lambda resolvers behind every route, the MCP transports)
asks ``status_for(error)``; the local gateway relays what the handlers answer.
Subclasses answer like their nearest listed ancestor, so an error defined next to an
adapter or a handler only needs to derive from the right domain error.

``ConfigurationError`` is 500, not 503: the process is misconfigured and stays so until
an operator changes a setting, so a client's retry cannot succeed (503 invites one),
and the client did nothing wrong (so not 4xx). The message names the setting to fix.

Every 503 carries ``Retry-After`` (``headers_for``): the seconds an error names itself
(``retry_after_seconds``, e.g. a throttled table) or ``DEFAULT_RETRY_AFTER_SECONDS``, so a
client waits instead of hammering a service that is down or throttling. A 409 carries it
only when asking again will succeed (``StillRunningError``: an idempotent store still running).
"""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from types import MappingProxyType

from hindsight.core.errors import (
    ConfigurationError,
    ConflictError,
    DuplicateMemoryError,
    EmbeddingModelMismatchError,
    ForbiddenError,
    HindsightError,
    InvalidRequestError,
    MalformedRequestError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
    ReflectorOutputError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedDocumentError,
)

STATUS_BY_ERROR: Mapping[type[BaseException], HTTPStatus] = MappingProxyType(
    {
        MalformedRequestError: HTTPStatus.BAD_REQUEST,
        UnauthorizedError: HTTPStatus.UNAUTHORIZED,
        ForbiddenError: HTTPStatus.FORBIDDEN,
        NotFoundError: HTTPStatus.NOT_FOUND,
        ConflictError: HTTPStatus.CONFLICT,
        DuplicateMemoryError: HTTPStatus.CONFLICT,
        EmbeddingModelMismatchError: HTTPStatus.CONFLICT,
        PayloadTooLargeError: HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        UnsupportedDocumentError: HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
        InvalidRequestError: HTTPStatus.UNPROCESSABLE_ENTITY,
        RateLimitedError: HTTPStatus.TOO_MANY_REQUESTS,
        ConfigurationError: HTTPStatus.INTERNAL_SERVER_ERROR,
        UnavailableError: HTTPStatus.SERVICE_UNAVAILABLE,
        ReflectorOutputError: HTTPStatus.SERVICE_UNAVAILABLE,
        HindsightError: HTTPStatus.INTERNAL_SERVER_ERROR,
    }
)


def status_for(error: BaseException) -> int:
    """The HTTP status for an error: its nearest class in the table, else 500."""
    for cls in type(error).__mro__:
        status = STATUS_BY_ERROR.get(cls)
        if status is not None:
            return int(status)
    return int(HTTPStatus.INTERNAL_SERVER_ERROR)


DEFAULT_RETRY_AFTER_SECONDS = 5


def retry_after_seconds(error: BaseException) -> int | None:
    """How long a client should wait before retrying, else None: every 503 (the seconds
    the error names, else the default), and a 409 that names seconds (a request still
    running; other conflicts need a different request, so they carry none)."""
    named = getattr(error, "retry_after_seconds", None)
    if not (isinstance(named, int) and not isinstance(named, bool) and named >= 0):
        named = None
    status = status_for(error)
    if status == HTTPStatus.SERVICE_UNAVAILABLE:
        return DEFAULT_RETRY_AFTER_SECONDS if named is None else named
    return named if status == HTTPStatus.CONFLICT else None


def headers_for(error: BaseException) -> dict[str, str]:
    """The headers an error answer carries besides its body (``Retry-After`` on a 503 and
    on a retryable 409)."""
    seconds = retry_after_seconds(error)
    return {} if seconds is None else {"Retry-After": str(seconds)}


def is_server_error(error: BaseException) -> bool:
    """True when the failure is the service's (5xx), not the caller's (4xx)."""
    return status_for(error) >= 500
