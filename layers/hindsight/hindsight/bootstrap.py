"""Composition root: builds a MemoryService from Settings, one bootstrap per runtime.

``get_service()`` is what entry points call. It reads settings lazily (on the first
request, never at import), builds the adapters the backend names, and caches the
service for the life of the process (a Lambda container, the local server, the CLI).
"""

from __future__ import annotations

import atexit
import dataclasses
import gc
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hindsight.adapters.reflectors.factory import build_reflector
from hindsight.adapters.rerankers.factory import build_reranker
from hindsight.core.embedding import ChunkSizes
from hindsight.core.errors import ConfigurationError
from hindsight.core.hit_log import HitLog
from hindsight.core.policy import Policy
from hindsight.core.ports import (
    DocumentConverter,
    Embedder,
    KeptAnswers,
    KeyExpander,
    MemoryWriter,
    Ports,
    RecordStore,
    Reflector,
    SearchIndex,
)
from hindsight.core.rerank import Reranking
from hindsight.core.secrets import SecretScreen, secrets_mode
from hindsight.core.service import MemoryService, UseCases
from hindsight.core.usecases.archive import ArchiveMemories
from hindsight.core.usecases.browse import BrowseMemories
from hindsight.core.usecases.context import BuildContext
from hindsight.core.usecases.documents import StoreDocument
from hindsight.core.usecases.fan_out import ReflectionJobQueue
from hindsight.core.usecases.forget import ForgetMemories
from hindsight.core.usecases.maintenance import ReindexMemories
from hindsight.core.usecases.reflect import ReflectOnMemories
from hindsight.core.usecases.retrieve import RetrieveMemories
from hindsight.core.usecases.review import ReviewFacts
from hindsight.core.usecases.store import StoreMemories
from hindsight.settings import Settings

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_service: MemoryService | None = None
_settings: Settings | None = None
_stream_index: SearchIndex | None = None
_stream_payloads: Any = None  # the S3PayloadStore the stream indexer reads large items from
_job_queue: ReflectionJobQueue | None = None


def policy_from(settings: Settings) -> Policy:
    """Every policy knob from its setting of the same name (``HINDSIGHT_<NAME>``); the
    searches side by side, unless set, where each is a round trip (the AWS backend)."""
    knobs = {f.name: getattr(settings, f.name) for f in dataclasses.fields(Policy)}
    if knobs["parallel_searches"] is None:
        knobs["parallel_searches"] = settings.backend.strip().lower() == "aws"
    return Policy(**knobs)


def assemble(ports: Ports, policy: Policy | None = None) -> MemoryService:
    """Wire every use case from exactly the ports and policy knobs it uses."""
    policy = policy or Policy()
    if ports.engine_report is None:
        from hindsight.adapters.embedders.engine_line import engine_report

        ports = dataclasses.replace(ports, engine_report=engine_report)
    records, writer, clock = ports.records, ports.writer, ports.clock
    sizes = ChunkSizes(policy.chunk_tokens, policy.chunk_overlap_tokens, policy.turn_weight)
    rerank = Reranking.of(ports.reranker, policy, clock)  # None without a reranker
    retrieve = RetrieveMemories(
        records, ports.index, ports.embedder, clock, policy, HitLog(records, clock), rerank
    )
    use_cases = UseCases(
        store=StoreMemories(
            records,
            writer,
            ports.embedder,
            clock,
            ports.ids,
            policy.dedup_window_seconds,
            max_content_chars=policy.max_content_chars,
            chunk_sizes=sizes,
            secrets=SecretScreen(secrets_mode(policy.secrets)),
            keys=ports.keys,
            session_context=policy.session_context,
            context_tokens=policy.context_tokens,
        ),
        retrieve=retrieve,
        reflect=ReflectOnMemories(
            records,
            writer,
            ports.embedder,
            ports.reflector,
            clock,
            ports.ids,
            batch_size=policy.reflect_batch_size,
            auto_approve_high_confidence=policy.auto_approve_high_confidence,
        ),
        review=ReviewFacts(records, writer, clock),
        context=BuildContext(records, ports.reflector, clock, retrieve),
        browse=BrowseMemories(records, clock),
        forget=ForgetMemories(records, writer, clock, ports.answers, means=retrieve.means),
        reindex=ReindexMemories(records, ports.index, ports.embedder, sizes, ports.keys),
        archive=ArchiveMemories(records, ports.index, clock, policy),
        documents=StoreDocument(
            records,
            writer,
            ports.embedder,
            ports.documents or default_document_converter(),
            clock,
            max_document_bytes=policy.max_document_bytes,
            max_content_chars=policy.max_content_chars,
            chunk_sizes=sizes,
            secrets=SecretScreen(secrets_mode(policy.secrets)),
        ),
    )
    return MemoryService(use_cases=use_cases, ports=ports, policy=policy)


def default_document_converter() -> DocumentConverter:
    """markitdown where installed (``hindsight[documents]``), else Markdown and text only."""
    from hindsight.adapters.documents import MarkItDownConverter

    return MarkItDownConverter()


def rewire(service: MemoryService, policy: Policy | None = None, **ports: Any) -> MemoryService:
    """The same service with another policy or other adapters (benchmarks and tests
    compare them). A new record store or index gets a writer of the same policy."""
    changed = dataclasses.replace(service.ports, **ports)
    if "writer" not in ports and {"records", "index"} & ports.keys():
        writer = type(changed.writer)(changed.records, changed.index)  # type: ignore[call-arg]
        changed = dataclasses.replace(changed, writer=writer)
    return assemble(changed, policy or service.policy)


def local_ports(
    records: RecordStore,
    index: SearchIndex,
    embedder: Embedder,
    reflector: Reflector,
    clock: Any = None,
    ids: Any = None,
    writer: MemoryWriter | None = None,
) -> Ports:
    """Ports for a backend whose index nothing else repairs (embedded, in-memory): the
    compensating write policy unless ``writer`` says otherwise; system clock and ULIDs."""
    from hindsight.adapters.system import SystemClock, UlidGenerator
    from hindsight.adapters.writers import CompensatingWriter

    return Ports(
        records=records,
        index=index,
        embedder=embedder,
        reflector=reflector,
        clock=clock or SystemClock(),
        ids=ids or UlidGenerator(),
        writer=writer or CompensatingWriter(records, index),
    )


def build_key_expander(settings: Settings) -> KeyExpander | None:
    """The store-time search-key expander (``adapters/keys``), or None when
    ``HINDSIGHT_KEY_EXPANSION`` is off."""
    if not settings.key_expansion:
        return None
    from hindsight.adapters.keys import LexiconKeyExpander

    return LexiconKeyExpander()


def local_extras(settings: Settings, jobs: str) -> dict[str, Any]:
    """What a local backend's ports add: search keys, kept answers, the job store (a file), the
    reranker."""
    from hindsight.adapters.embedded.sqlite_job_store import SqliteJobStore

    return {
        "keys": build_key_expander(settings),
        "answers": kept_answers(settings),
        "jobs": SqliteJobStore(jobs),
        "reranker": build_reranker(settings),
    }


def kept_answers(settings: Settings) -> KeptAnswers:
    """The idempotency records of ``settings``' store, which an erasure also forgets."""
    from hindsight.api.kept_answers import IdempotencyAnswers

    return IdempotencyAnswers(settings)


def build_embedder(settings: Settings) -> Embedder:
    """The configured embedder behind a micro-batcher: concurrent requests' texts share
    engine calls, a lone request runs at once (adapters/embedders/micro_batching.py)."""
    from hindsight.adapters.embedders.factory import build_embedder as build
    from hindsight.adapters.embedders.micro_batching import MicroBatchingEmbedder

    # the embedded backend's data directory keeps the ONNX engine's measured kernel choice;
    # elsewhere (memory, AWS) nothing is written and the rule of kernel_choice decides
    choice_dir = Path(settings.data_dir) if settings.backend == "embedded" else None
    return MicroBatchingEmbedder(
        build(
            settings.embedder,
            background_niceness=settings.embed_background_niceness,
            kernel=settings.embed_kernel,
            choice_dir=choice_dir,
        )
    )


def _embedder_by_spec(settings: Settings) -> Callable[[str], Embedder]:
    """Builds the embedder an index generation recorded (its ``HINDSIGHT_EMBEDDER`` spec)."""

    def by_spec(spec: str) -> Embedder:
        return build_embedder(settings.model_copy(update={"embedder": spec}))

    return by_spec


def _follow_served_model(
    settings: Settings,
    index: Any,
    records: RecordStore,
    configured: Embedder | None,
    embedders: Callable[[str], Embedder] | None,
) -> Embedder:
    """The embedder of the served index generation; after a switch, what was written with
    the old model meanwhile is embedded again (``core/usecases/reembed.py``)."""
    from hindsight.adapters.embedded.generations import follow_served_model, repair_on_switch
    from hindsight.adapters.system import SystemClock

    configured = configured or build_embedder(settings)
    build = embedders or _embedder_by_spec(settings)
    served = follow_served_model(index, configured, settings.embedder, build)
    policy = policy_from(settings)
    sizes = ChunkSizes(policy.chunk_tokens, policy.chunk_overlap_tokens, policy.turn_weight)
    repair_on_switch(index, records, served, SystemClock(), sizes)
    return served


def build_embedded_service(
    settings: Settings,
    embedder: Embedder | None = None,
    reflector: Reflector | None = None,
    embedders: Callable[[str], Embedder] | None = None,
) -> MemoryService:
    """SQLite record store + in-process search index under ``settings.data_dir``.

    The index served is the generation the data directory's manifest names, and the
    embedder that generation's model (``adapters/embedded/generations.py``); ``embedders``
    builds an embedder from a spec (default: the factory of ``HINDSIGHT_EMBEDDER``).
    """
    from hindsight.adapters.embedded.generations import GenerationalSearchIndex
    from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
    from hindsight.core.text import tokenize

    data_dir = Path(settings.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    records = SqliteRecordStore(data_dir / "hindsight.db")
    index = GenerationalSearchIndex(data_dir, records, ann_threshold=settings.ann_threshold)
    index.rebuild_from(records)
    # save the HNSW graphs and close the databases when the process ends
    atexit.register(_close_quietly, index, records)
    tokenize("预热")  # load jieba's dictionary now rather than on the first request
    # The index just loaded holds millions of long-lived objects at 1M memories; frozen,
    # the garbage collector stops walking them on every full collection (pauses of tens
    # of ms in the middle of requests otherwise; bench/scale.py).
    gc.collect()
    gc.freeze()
    embedder = _follow_served_model(settings, index, records, embedder, embedders)
    embedder = embedder or build_embedder(settings)
    ports = local_ports(records, index, embedder, reflector or build_reflector(settings, embedder))
    ports = dataclasses.replace(ports, **local_extras(settings, str(data_dir / "jobs.db")))
    return assemble(ports, policy_from(settings))


def _close_quietly(*resources: object) -> None:
    for resource in resources:
        close = getattr(resource, "close", None)
        if close is None:
            continue
        try:
            close()
        except Exception:  # shutting down: report, never raise
            logger.exception("close failed resource=%s", type(resource).__name__)


def build_memory_service(
    settings: Settings,
    embedder: Embedder | None = None,
    reflector: Reflector | None = None,
) -> MemoryService:
    """Everything in process memory: nothing survives a restart (tests, demos)."""
    from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex

    embedder = embedder or build_embedder(settings)
    ports = local_ports(
        InMemoryRecordStore(),
        InMemorySearchIndex(),
        embedder,
        reflector or build_reflector(settings, embedder),
    )
    ports = dataclasses.replace(ports, **local_extras(settings, ":memory:"))
    return assemble(ports, policy_from(settings))


def build_aws_service(
    settings: Settings,
    embedder: Embedder | None = None,
    reflector: Reflector | None = None,
    index: SearchIndex | None = None,
    dynamodb_client: Any = None,
    s3_client: Any = None,
) -> MemoryService:
    """DynamoDB record store + OpenSearch index (``HINDSIGHT_BACKEND=aws``).

    Writes go through ``StreamRepairedWriter``: an unavailable OpenSearch never undoes the
    DynamoDB write (the stream indexer applies it). The index is wrapped in
    ``ReadYourWritesIndex``, so this process finds what it stored a moment ago. Missing
    resources are created unless ``HINDSIGHT_CREATE_RESOURCES=false``. ``index`` replaces
    OpenSearch (tests).
    """
    from hindsight.adapters.aws.dynamodb_record_store import (
        DynamoDBRecordStore,
        create_table,
        default_client,
        table_exists,
    )
    from hindsight.adapters.aws.read_your_writes import ReadYourWritesIndex
    from hindsight.adapters.system import SystemClock, UlidGenerator
    from hindsight.adapters.writers import StreamRepairedWriter
    from hindsight.core.errors import UnavailableError

    embedder = embedder or build_embedder(settings)
    client = dynamodb_client or default_client(settings.region or None)
    payloads = build_payload_store(settings, s3_client)
    records = DynamoDBRecordStore(
        settings.table,
        client=client,
        payloads=payloads,
        create_indexes=settings.create_resources,  # maintenance may add a missing index
    )
    if settings.create_resources:
        try:
            if not table_exists(client, settings.table):
                logger.info("creating dynamodb table table=%s", settings.table)
                create_table(client, settings.table)
            if payloads.bucket and not payloads.bucket_exists():
                logger.info("creating s3 bucket bucket=%s", payloads.bucket)
                payloads.create_bucket(settings.region or None)
        except Exception as exc:  # botocore errors: no access, no endpoint
            raise UnavailableError(
                f"cannot check or create DynamoDB table {settings.table} or its S3 bucket "
                f"({exc}); check the "
                "region, credentials and AWS_ENDPOINT_URL_DYNAMODB, or create the table and "
                "set HINDSIGHT_CREATE_RESOURCES=false"
            ) from exc
    if index is None:
        from hindsight.adapters.aws.opensearch_index.migration import follow_alias_model

        index = build_opensearch_index(settings, embedder.dimension)
        # queries in the model of the index the name serves (re-embedding migrations)
        embedder = follow_alias_model(index, embedder, _embedder_by_spec(settings))
    searchable = ReadYourWritesIndex(index)
    ports = Ports(
        records=records,
        index=searchable,
        embedder=embedder,
        reflector=reflector or build_reflector(settings, embedder),
        clock=SystemClock(),
        ids=UlidGenerator(),
        writer=StreamRepairedWriter(records, searchable),
        keys=build_key_expander(settings),
        answers=kept_answers(settings),
        reranker=build_reranker(settings),
    )
    return assemble(ports, policy_from(settings))


def build_payload_store(settings: Settings, s3_client: Any = None) -> Any:
    """The S3PayloadStore for memories too large for one DynamoDB item: writes go to
    ``HINDSIGHT_BLOB_BUCKET`` (none: such memories are refused), reads follow references."""
    from hindsight.adapters.aws.dynamodb_record_store import S3PayloadStore, default_s3_client

    client = s3_client or default_s3_client(settings.region or None)
    return S3PayloadStore(settings.blob_bucket or None, client=client)


def build_opensearch_index(settings: Settings, dimension: int) -> SearchIndex:
    """The OpenSearch k-NN index named by the settings (created when missing)."""
    if not settings.opensearch_url:
        raise ConfigurationError(
            "HINDSIGHT_BACKEND=aws needs HINDSIGHT_OPENSEARCH_URL (e.g. "
            "https://search-xyz.us-east-1.es.amazonaws.com, or http://127.0.0.1:9200 locally)"
        )
    from hindsight.adapters.aws.opensearch_index import (
        OpenSearchSearchIndex,
        build_opensearch_client,
    )

    client = build_opensearch_client(
        settings.opensearch_url, settings.opensearch_auth, settings.region or None
    )
    index = OpenSearchSearchIndex(client, settings.opensearch_index, dimension)
    ensure = getattr(index, "ensure_index", None)
    if settings.create_resources and ensure is not None:
        ensure()
    return index


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
