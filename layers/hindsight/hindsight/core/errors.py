"""Domain errors. Entry points translate these into HTTP / MCP responses.

Every message says what the caller (or, for ``ConfigurationError``, the operator) can
do about it; none carries a stack trace. The errors know nothing of HTTP: which status
each one answers is decided at the edge, in ``hindsight.api.errors``.
"""

from __future__ import annotations


class HindsightError(Exception):
    """Base class of every error the core raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequestError(HindsightError):
    """The request is well-formed JSON but its values are unusable."""


class UnsupportedDocumentError(InvalidRequestError):
    """A document of a type this server cannot read; the message lists the ones it can."""


class UnreadableDocumentError(InvalidRequestError):
    """A document that cannot be read (damaged, password-protected) or holds no text."""


class MalformedRequestError(HindsightError):
    """The request body is not parseable JSON or not an object."""


class UnauthorizedError(HindsightError):
    """No credentials, or credentials that map to no tenant."""


class ForbiddenError(HindsightError):
    """The credentials are valid but may not touch this scope or record."""


class NotFoundError(HindsightError):
    """The id does not exist for this tenant.

    Another tenant's ids are reported exactly like ids that do not exist, so that
    ids cannot be probed across tenants.
    """


class ConflictError(HindsightError):
    """The request conflicts with the record's current state."""


class StillRunningError(ConflictError):
    """The same request (its idempotency key) is still being processed: asking again in
    ``retry_after_seconds`` gets its answer. A conflict a client may retry, unlike the
    others, which need a different request."""

    retry_after_seconds = 2


class PayloadTooLargeError(HindsightError):
    """The body or one of its fields exceeds a size limit."""


class RateLimitedError(HindsightError):
    """Too many requests."""


class UnavailableError(HindsightError):
    """A backing service (store, index, model, LLM) is unavailable."""


class ConfigurationError(HindsightError):
    """The process is misconfigured: a setting is missing or unusable.

    The operator must fix it (the message names the setting and what to set); the
    client did nothing wrong, so this is never reported as a client error.
    """


class DuplicateMemoryError(HindsightError):
    """Raised by a record store when a dedup marker already claims this content."""

    def __init__(self, existing_memory_id: str) -> None:
        super().__init__(f"the same content was stored recently as {existing_memory_id}")
        self.existing_memory_id = existing_memory_id


class EmbeddingModelMismatchError(HindsightError):
    """Stored vectors were made by another embedding model than the configured one."""


class ReflectorOutputError(HindsightError):
    """The reflector (LLM) returned output that failed validation twice."""
