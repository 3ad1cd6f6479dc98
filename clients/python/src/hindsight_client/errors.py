"""Errors: every failure is a ``HindsightError`` carrying ``status`` and ``message``.

The server answers errors as ``{"status": "error", "message": "<what to do>"}`` with an
HTTP status; ``error_for_status`` turns that into the matching subclass, so callers can
catch what they can act on (``NotFoundError``, ``RateLimitedError``...) or everything
(``HindsightError``). Failures with no HTTP answer (the server could not be reached, the
answer did not arrive in time) have ``status`` ``None``.
"""

from __future__ import annotations


class HindsightError(Exception):
    """Base of every error this client raises.

    ``status``: the HTTP status the server answered, or ``None`` when there was no answer.
    ``message``: the server's message (what to do about it), or a description of the failure.
    """

    status: int | None

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def __str__(self) -> str:
        return self.message if self.status is None else f"{self.status}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, message={self.message!r})"


class APIError(HindsightError):
    """The server answered with an error status (``status`` is always set)."""

    status: int

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message, status)


class BadRequestError(APIError):
    """400: the body is not a JSON object (malformed JSON, empty, not UTF-8)."""


class AuthenticationError(APIError):
    """401: no API key, or not a valid one."""


class PermissionDeniedError(APIError):
    """403: the API key may not read or write that scope, or call that route."""


class NotFoundError(APIError):
    """404: no such memory (or route), or not visible to this API key."""


class ConflictError(APIError):
    """409: the request conflicts with what is stored (e.g. another embedding model)."""


class PayloadTooLargeError(APIError):
    """413: the request body is over 1 MiB; send fewer or shorter memories per request."""


class InvalidRequestError(APIError):
    """422: fields are invalid; the message names each one and what is wrong with it."""


class RateLimitedError(APIError):
    """429: too many requests (retried automatically before this is raised)."""


class ServerError(APIError):
    """5xx: the server failed (500: misconfigured; the message names the setting)."""


class UnavailableError(ServerError):
    """503: a backing service is down (retried automatically before this is raised)."""


class HindsightConnectionError(HindsightError):
    """The server could not be reached, or the connection broke (``status`` is None)."""


class HindsightTimeoutError(HindsightConnectionError):
    """No answer within the timeout (``status`` is None)."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: InvalidRequestError,
    429: RateLimitedError,
    503: UnavailableError,
}


def error_for_status(status: int, message: str) -> APIError:
    """The exception for an error answer: its own class, else ServerError or APIError."""
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else APIError
    return cls(message, status)


__all__ = [
    "APIError",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "HindsightConnectionError",
    "HindsightError",
    "HindsightTimeoutError",
    "InvalidRequestError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitedError",
    "ServerError",
    "UnavailableError",
    "error_for_status",
]
