"""Domain errors. Entry points translate these into HTTP / MCP responses.

Every message says what the caller can do about it; none carries a stack trace.
"""

from __future__ import annotations


class HindsightError(Exception):
    """Base class of every error the core raises on purpose."""

    http_status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequestError(HindsightError):
    """The request is well-formed JSON but its values are unusable (HTTP 422)."""

    http_status = 422


class MalformedRequestError(HindsightError):
    """The request body is not parseable JSON or not an object (HTTP 400)."""

    http_status = 400


class UnauthorizedError(HindsightError):
    """No credentials, or credentials that map to no tenant (HTTP 401)."""

    http_status = 401


class ForbiddenError(HindsightError):
    """The credentials are valid but may not touch this scope or record (HTTP 403)."""

    http_status = 403


class NotFoundError(HindsightError):
    """The id does not exist for this tenant (HTTP 404).

    Another tenant's ids are reported exactly like ids that do not exist, so that
    ids cannot be probed across tenants.
    """

    http_status = 404


class ConflictError(HindsightError):
    """The request conflicts with the record's current state (HTTP 409)."""

    http_status = 409


class PayloadTooLargeError(HindsightError):
    """The body or one of its fields exceeds a size limit (HTTP 413)."""

    http_status = 413


class RateLimitedError(HindsightError):
    """Too many requests (HTTP 429)."""

    http_status = 429


class UnavailableError(HindsightError):
    """A backing service (store, index, model, LLM) is unavailable (HTTP 503)."""

    http_status = 503


class DuplicateMemoryError(HindsightError):
    """Raised by a record store when a dedup marker already claims this content."""

    http_status = 409

    def __init__(self, existing_memory_id: str) -> None:
        super().__init__(f"the same content was stored recently as {existing_memory_id}")
        self.existing_memory_id = existing_memory_id


class EmbeddingModelMismatchError(HindsightError):
    """Stored vectors were made by another embedding model than the configured one."""

    http_status = 409


class ReflectorOutputError(HindsightError):
    """The reflector (LLM) returned output that failed validation twice."""

    http_status = 503
