"""Composition root: builds a MemoryService from Settings, one bootstrap per runtime.

The backend builders are in ``backends.py``, the use cases' wiring in ``composition.py``.

``get_service()`` is what entry points call. It reads settings lazily (on the first
request, never at import), builds the adapters the backend names, and caches the
service for the life of the process (a Lambda container, the local server, the CLI).
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Any

from hindsight.adapters.reflectors.factory import build_reflector
from hindsight.adapters.rerankers.factory import build_reranker
from hindsight.backends import (
    build_aws_service,
    build_embedded_service,
    build_embedder,
    build_key_expander,
    build_memory_service,
    build_opensearch_index,
    build_payload_store,
    kept_answers,
    local_extras,
    local_ports,
)
from hindsight.composition import assemble, default_document_converter, policy_from, rewire
from hindsight.core.errors import ConfigurationError
from hindsight.core.ports import SearchIndex
from hindsight.core.service import MemoryService
from hindsight.core.usecases.fan_out import ReflectionJobQueue
from hindsight.settings import Settings

# what entry points, tools and tests import from here: the process's service and settings,
# and the builders and composition they are made with
__all__ = [
    "assemble",
    "build_aws_service",
    "build_embedded_service",
    "build_embedder",
    "build_key_expander",
    "build_memory_service",
    "build_opensearch_index",
    "build_payload_store",
    "build_reflector",
    "build_reranker",
    "build_service",
    "configure",
    "configure_job_queue",
    "configure_stream_index",
    "configure_stream_payloads",
    "configured_service",
    "default_document_converter",
    "get_job_queue",
    "get_service",
    "get_settings",
    "get_stream_index",
    "get_stream_payloads",
    "kept_answers",
    "local_extras",
    "local_ports",
    "policy_from",
    "rewire",
    "start_hit_log",
]

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_service: MemoryService | None = None
_settings: Settings | None = None
_stream_index: SearchIndex | None = None
_stream_payloads: Any = None  # the S3PayloadStore the stream indexer reads large items from
_job_queue: ReflectionJobQueue | None = None


def build_service(settings: Settings) -> MemoryService:
    """The service of the configured backend, its hit counts flushing in the background."""
    return start_hit_log(_build_backend(settings))


def start_hit_log(service: MemoryService) -> MemoryService:
    """Flush retrieval's hit counts every few seconds, and what is left at exit (before
    the embedded store closes: exit hooks run last-registered first)."""
    hits = service.use_cases.retrieve.hits
    if hits is not None:
        hits.start()
        atexit.register(hits.stop)
    return service


def _build_backend(settings: Settings) -> MemoryService:
    backend = settings.backend.strip().lower()
    if backend == "embedded":
        return build_embedded_service(settings)
    if backend == "memory":
        return build_memory_service(settings)
    if backend == "aws":
        return build_aws_service(settings)
    raise ConfigurationError(
        f"HINDSIGHT_BACKEND={settings.backend!r} is not understood; use 'embedded', "
        "'memory' or 'aws'"
    )


def get_settings() -> Settings:
    global _settings
    with _lock:
        if _settings is None:
            _settings = Settings.from_env()
        return _settings


def get_service() -> MemoryService:
    """The process-wide service, built on first use from the environment."""
    global _service
    with _lock:
        if _service is None:
            settings = _settings or Settings.from_env()
            _service = build_service(settings)
            from hindsight.adapters.embedders.engine_line import describe

            logger.info(
                "service ready backend=%s data_dir=%s embedding=%s reflector=%s",
                settings.backend,
                settings.data_dir,
                describe(_service.ports.embedder),
                _service.ports.reflector.label,
            )
        return _service


def get_stream_index() -> SearchIndex:
    """The search index the stream indexer writes: OpenSearch itself, unwrapped, so that
    failures reach the batch processor (and are retried) instead of being tolerated."""
    global _stream_index
    with _lock:
        if _stream_index is None:
            settings = _settings or Settings.from_env()
            from hindsight.adapters.embedders.factory import build_embedder as build

            _stream_index = build_opensearch_index(settings, build(settings.embedder).dimension)
        return _stream_index


def get_stream_payloads() -> Any:
    """The S3PayloadStore the stream indexer hydrates large memory items from."""
    global _stream_payloads
    with _lock:
        if _stream_payloads is None:
            _stream_payloads = build_payload_store(_settings or Settings.from_env())
        return _stream_payloads


def configure_stream_payloads(payloads: Any) -> None:
    """Set (or clear) the stream indexer's S3PayloadStore; tests and local runs use it."""
    global _stream_payloads
    with _lock:
        _stream_payloads = payloads


def configure_stream_index(index: SearchIndex | None) -> None:
    """Set (or clear) the stream indexer's index; tests and local runs use it."""
    global _stream_index
    with _lock:
        _stream_index = index


def get_job_queue() -> ReflectionJobQueue:
    """The reflection job queue (SQS, ``HINDSIGHT_REFLECTION_QUEUE_URL``), built on first use."""
    global _job_queue
    with _lock:
        if _job_queue is None:
            settings = _settings or Settings.from_env()
            url = settings.reflection_queue_url.strip()
            if not url:
                raise ConfigurationError(
                    "HINDSIGHT_REFLECTION_QUEUE_URL is not set; point it at the reflection "
                    "SQS queue"
                )
            from hindsight.adapters.aws.sqs_job_queue import SqsReflectionJobQueue

            _job_queue = SqsReflectionJobQueue(url)
        return _job_queue


def configure_job_queue(queue: ReflectionJobQueue | None = None) -> None:
    """Set (or with no argument, clear) the reflection job queue; tests and tools use it."""
    global _job_queue
    with _lock:
        _job_queue = queue


def configured_service() -> MemoryService | None:
    """The service already set up in this process, if any (without building one)."""
    with _lock:
        return _service


def configure(settings: Settings | None = None, service: MemoryService | None = None) -> None:
    """Set (or with no arguments, clear) the process-wide settings and service.

    Used by the local gateway, the CLI and tests; Lambda never calls it.
    """
    global _service, _settings
    with _lock:
        _settings = settings
        _service = service
