"""Backend builders: the adapters of each ``HINDSIGHT_BACKEND`` (embedded, memory, aws) from
Settings, assembled into a MemoryService (``composition.py``)."""

from __future__ import annotations

import atexit
import dataclasses
import gc
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hindsight.adapters.reflectors.factory import build_reflector
from hindsight.adapters.rerankers.factory import build_reranker
from hindsight.composition import assemble, policy_from
from hindsight.core.embedding import ChunkSizes
from hindsight.core.errors import ConfigurationError
from hindsight.core.ports import (
    Embedder,
    KeptAnswers,
    KeyExpander,
    MemoryWriter,
    Ports,
    RecordStore,
    Reflector,
    SearchIndex,
)
from hindsight.core.service import MemoryService
from hindsight.settings import Settings

logger = logging.getLogger(__name__)


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
    from hindsight.api.idempotency_answers import IdempotencyAnswers

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
