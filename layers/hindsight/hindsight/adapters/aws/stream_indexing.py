"""What the search index does with one memory item of the table: the indexer's own rules.

The stream indexer (``functions/indexer``) applies each DynamoDB stream record with these
functions, and so does ``hindsight replay-dlq`` with the current item of each key a failed
batch named (``adapters.aws.indexer_dlq``), so a replayed memory is indexed exactly as
the indexer would have indexed it:

- a memory item (inserted or modified) is upserted, one document per chunk of a long
  memory; its content and vectors kept in S3 are read back first, and an item whose S3
  object is gone was replaced by a later write (whose own change follows) so it is skipped;
- an archived memory, and a removed one, have their documents deleted;
- an item without a vector, or with a vector of another embedding model than the index's
  (a re-embedding migration writes it again), is skipped: retrying cannot index it.

Failures of the index itself (``UnavailableError``) are raised, for the caller to retry.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from hindsight.adapters.aws.dynamodb_record_store import (
    LargeItems,
    PayloadMissingError,
    memory_from_item,
    references_of,
    vector_from_item,
)
from hindsight.core.errors import EmbeddingModelMismatchError
from hindsight.core.indexing import index_document
from hindsight.core.ports import SearchIndex

logger = logging.getLogger(__name__)


class IndexOutcome(StrEnum):
    """What applying an item did to the index."""

    UPSERTED = "upserted"
    ARCHIVED = "archived"  # documents deleted, the memory kept in DynamoDB
    DELETED = "deleted"
    STALE = "stale"  # its S3 payload is gone: a later change of the item follows
    NO_VECTOR = "no_vector"
    OTHER_MODEL = "other_model"


def _hydrated(item: dict[str, Any], payloads: Any) -> bool:
    """Read back what the item keeps in S3; False if it is gone (replaced since)."""
    if not references_of(item):
        return True
    try:
        LargeItems(payloads).hydrate([item])
    except PayloadMissingError:
        logger.info("memory changed since this image; skipped memory_id=%s", item["memory_id"])
        return False
    return True


def index_memory_item(index: SearchIndex, item: dict[str, Any], payloads: Any) -> IndexOutcome:
    """Bring the index in step with a memory item as it is (inserted or modified)."""
    if not _hydrated(item, payloads):
        return IndexOutcome.STALE
    memory = memory_from_item(item)
    if memory.archived_at is not None:  # archived: out of the hot index, kept in DynamoDB
        index.delete(memory.tenant_id, [memory.memory_id])
        return IndexOutcome.ARCHIVED
    vector = vector_from_item(item)
    if vector is None:
        logger.warning("memory has no vector; not indexed memory_id=%s", memory.memory_id)
        return IndexOutcome.NO_VECTOR
    try:
        index.upsert([index_document(memory, vector)])
    except EmbeddingModelMismatchError:
        # written with the model served before a re-embedding migration's switch: the
        # migration's catch-up writes the item again with the served model's vector
        logger.warning("vector of another model; skipped memory_id=%s", memory.memory_id)
        return IndexOutcome.OTHER_MODEL
    return IndexOutcome.UPSERTED


def remove_memory_item(index: SearchIndex, item: Mapping[str, Any]) -> IndexOutcome:
    """Delete every document of a memory whose item is gone (deleted or expired)."""
    index.delete(str(item["tenant_id"]), [str(item["memory_id"])])
    return IndexOutcome.DELETED
