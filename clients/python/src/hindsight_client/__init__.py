"""Hindsight's Python client: long-term memory for LLM agents, over its HTTP API.

    from hindsight_client import Hindsight, AsyncHindsight

``Hindsight`` (sync) and ``AsyncHindsight`` (asyncio or trio) have the same methods, one
per route: store, store_many, retrieve, iter_retrieve, context, reflect, list_memories,
iter_memories, get, delete, approve, reject, erase_user, health, job_status (and, on
``Hindsight``, store_document). Long content is stored as a job (``hindsight_client.jobs``;
``store(..., wait=False)`` returns the ``Job``). Results are typed dataclasses
(``hindsight_client.types``); errors are ``HindsightError`` subclasses with ``status`` and
``message`` (``hindsight_client.errors``).
"""

from hindsight_client.async_client import AsyncHindsight
from hindsight_client.client import Hindsight
from hindsight_client.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    HindsightConnectionError,
    HindsightError,
    HindsightTimeoutError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitedError,
    ServerError,
    UnavailableError,
)
from hindsight_client.jobs import Job, JobFailedError
from hindsight_client.types import (
    ContextResult,
    DeleteResult,
    DocumentResult,
    EmbeddingEngine,
    EraseResult,
    Health,
    JobStatus,
    KernelProbe,
    Memory,
    MemoryPage,
    ReflectResult,
    RetrievedMemory,
    RetrievePage,
    StoreResult,
    TimeRange,
)

__version__ = "0.1.0"

__all__ = [
    "APIError",
    "AsyncHindsight",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "ContextResult",
    "DeleteResult",
    "DocumentResult",
    "EmbeddingEngine",
    "EraseResult",
    "Health",
    "Hindsight",
    "HindsightConnectionError",
    "HindsightError",
    "HindsightTimeoutError",
    "InvalidRequestError",
    "Job",
    "JobFailedError",
    "JobStatus",
    "KernelProbe",
    "Memory",
    "MemoryPage",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitedError",
    "ReflectResult",
    "RetrievePage",
    "RetrievedMemory",
    "ServerError",
    "StoreResult",
    "TimeRange",
    "UnavailableError",
    "__version__",
]
