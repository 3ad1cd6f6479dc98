"""Hindsight: long-term memory for LLM agents.

``__all__`` is the library's public API (docs/library.md): build a ``MemoryService`` from
``Settings``, call its use cases with a ``Principal`` and a command, read the results and
catch the errors. Everything else in the package is internal and may change.

The names are imported on first use (PEP 562): ``import hindsight.<module>``, which every
Lambda function, the CLI and the server do, imports this package first and must not pay
for the settings, the backends and the model runtime it would pull in.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# each public name, and the module that defines it
_HOMES: dict[str, str] = {
    # the service and how to build it
    "MemoryService": "hindsight.core.service",
    "Settings": "hindsight.settings",
    "build_service": "hindsight.bootstrap",
    "build_embedded_service": "hindsight.backends",
    "Embedder": "hindsight.core.ports",
    "Reflector": "hindsight.core.ports",
    # who calls
    "Principal": "hindsight.core.models",
    # what the use cases take
    "StoreMemoryCommand": "hindsight.core.commands",
    "StoreBatchCommand": "hindsight.core.commands",
    "BatchItem": "hindsight.core.commands",
    "RetrieveCommand": "hindsight.core.commands",
    "ReflectCommand": "hindsight.core.commands",
    "ContextCommand": "hindsight.core.commands",
    "ListMemoriesCommand": "hindsight.core.commands",
    # what they answer
    "StoreOutcome": "hindsight.core.results",
    "RetrieveResult": "hindsight.core.results",
    "ScoredMemory": "hindsight.core.results",
    "Highlight": "hindsight.core.results",
    "ReflectResult": "hindsight.core.results",
    "ContextResult": "hindsight.core.results",
    "ListResult": "hindsight.core.results",
    # the memories
    "Memory": "hindsight.core.models",
    "EpisodicMemory": "hindsight.core.models",
    "SemanticMemory": "hindsight.core.models",
    "MemoryKind": "hindsight.core.models",
    "Confidence": "hindsight.core.models",
    "FactStatus": "hindsight.core.models",
    "FactCategory": "hindsight.core.models",
    "TimeRange": "hindsight.core.models",
    # the errors (every one a HindsightError)
    "HindsightError": "hindsight.core.errors",
    "InvalidRequestError": "hindsight.core.errors",
    "UnauthorizedError": "hindsight.core.errors",
    "ForbiddenError": "hindsight.core.errors",
    "NotFoundError": "hindsight.core.errors",
    "ConflictError": "hindsight.core.errors",
    "PayloadTooLargeError": "hindsight.core.errors",
    "RateLimitedError": "hindsight.core.errors",
    "UnavailableError": "hindsight.core.errors",
    "ConfigurationError": "hindsight.core.errors",
}

__all__ = [
    "BatchItem",
    "Confidence",
    "ConfigurationError",
    "ConflictError",
    "ContextCommand",
    "ContextResult",
    "Embedder",
    "EpisodicMemory",
    "FactCategory",
    "FactStatus",
    "ForbiddenError",
    "Highlight",
    "HindsightError",
    "InvalidRequestError",
    "ListMemoriesCommand",
    "ListResult",
    "Memory",
    "MemoryKind",
    "MemoryService",
    "NotFoundError",
    "PayloadTooLargeError",
    "Principal",
    "RateLimitedError",
    "ReflectCommand",
    "ReflectResult",
    "Reflector",
    "RetrieveCommand",
    "RetrieveResult",
    "ScoredMemory",
    "SemanticMemory",
    "Settings",
    "StoreBatchCommand",
    "StoreMemoryCommand",
    "StoreOutcome",
    "TimeRange",
    "UnauthorizedError",
    "UnavailableError",
    "build_embedded_service",
    "build_service",
]

if TYPE_CHECKING:  # what type checkers and editors see; at run time, ``__getattr__``
    from hindsight.backends import build_embedded_service
    from hindsight.bootstrap import build_service
    from hindsight.core.commands import (
        BatchItem,
        ContextCommand,
        ListMemoriesCommand,
        ReflectCommand,
        RetrieveCommand,
        StoreBatchCommand,
        StoreMemoryCommand,
    )
    from hindsight.core.errors import (
        ConfigurationError,
        ConflictError,
        ForbiddenError,
        HindsightError,
        InvalidRequestError,
        NotFoundError,
        PayloadTooLargeError,
        RateLimitedError,
        UnauthorizedError,
        UnavailableError,
    )
    from hindsight.core.models import (
        Confidence,
        EpisodicMemory,
        FactCategory,
        FactStatus,
        Memory,
        MemoryKind,
        Principal,
        SemanticMemory,
        TimeRange,
    )
    from hindsight.core.ports import Embedder, Reflector
    from hindsight.core.results import (
        ContextResult,
        Highlight,
        ListResult,
        ReflectResult,
        RetrieveResult,
        ScoredMemory,
        StoreOutcome,
    )
    from hindsight.core.service import MemoryService
    from hindsight.settings import Settings


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'hindsight' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
