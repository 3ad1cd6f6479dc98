"""Composition of the re-embedding migration (``hindsight reindex --re-embed``).

It is built apart from the service on purpose: on the embedded backend the migration must
not open the served index (a running ``hindsight serve`` holds it), only the record store
(SQLite, shared safely between processes) and the new generation's directory; on AWS it
needs DynamoDB and the OpenSearch client, not the alias-wrapped index the API uses.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hindsight.bootstrap import build_embedder, policy_from
from hindsight.core.embedding import ChunkSizes
from hindsight.core.errors import ConfigurationError
from hindsight.core.ports import Embedder
from hindsight.core.usecases.reembed import ReEmbedMemories
from hindsight.settings import Settings


@contextlib.contextmanager
def reembedding(
    settings: Settings,
    embedder: Embedder | None = None,
    dynamodb_client: Any = None,
    opensearch_client: Any = None,
    keep_old_index: bool = False,
) -> Iterator[ReEmbedMemories]:
    """The migration to the configured model on the configured backend; closed after.
    ``keep_old_index`` (AWS): the index served before is kept, unused, after the switch."""

    embedder = embedder or build_embedder(settings)
    policy = policy_from(settings)
    sizes = ChunkSizes(policy.chunk_tokens, policy.chunk_overlap_tokens, policy.turn_weight)
    backend = settings.backend.strip().lower()
    if backend == "embedded":
        from hindsight.adapters.embedded.generations import EmbeddedIndexMigration
        from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore

        data_dir = Path(settings.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        records = SqliteRecordStore(data_dir / "hindsight.db")
        migration = EmbeddedIndexMigration(data_dir, ann_threshold=settings.ann_threshold)
        try:
            yield _use_case(settings, records, embedder, migration, sizes)
        finally:
            migration.close()
            records.close()
        return
    if backend == "aws":
        clients = (dynamodb_client, opensearch_client)
        yield _aws(settings, embedder, sizes, clients, keep_old_index)
        return
    raise ConfigurationError(
        f"HINDSIGHT_BACKEND={settings.backend!r} has no index to migrate; re-embedding "
        "applies to 'embedded' and 'aws' (the 'memory' backend keeps nothing)"
    )


def _aws(
    settings: Settings,
    embedder: Embedder,
    sizes: ChunkSizes,
    clients: tuple[Any, Any],
    keep_old_index: bool,
) -> ReEmbedMemories:
    from hindsight.adapters.aws.dynamodb_record_store import DynamoDBRecordStore, default_client
    from hindsight.adapters.aws.opensearch_index import build_opensearch_client
    from hindsight.adapters.aws.opensearch_index.migration import OpenSearchIndexMigration
    from hindsight.bootstrap import build_payload_store

    dynamodb_client, opensearch_client = clients
    if not settings.opensearch_url and opensearch_client is None:
        raise ConfigurationError(
            "re-embedding on AWS needs HINDSIGHT_OPENSEARCH_URL (the domain's endpoint)"
        )
    client = opensearch_client or build_opensearch_client(
        settings.opensearch_url, settings.opensearch_auth, settings.region or None
    )
    records = DynamoDBRecordStore(
        settings.table,
        client=dynamodb_client or default_client(settings.region or None),
        payloads=build_payload_store(settings),
    )
    migration = OpenSearchIndexMigration(client, settings.opensearch_index, keep_old=keep_old_index)
    return _use_case(settings, records, embedder, migration, sizes)


def _use_case(
    settings: Settings, records: Any, embedder: Embedder, migration: Any, sizes: ChunkSizes
) -> ReEmbedMemories:
    """The migration over the backend's records and index generations."""
    from hindsight.adapters.system import SystemClock

    return ReEmbedMemories(
        records,
        embedder,
        migration,
        SystemClock(),
        settings.embedder,
        sizes,
        context_tokens=settings.context_tokens,
    )
