"""Maintenance: rebuild the search index from the record store, optionally re-embedding.

The record store is the source of truth; the index can always be rebuilt from it. After
switching embedding models, ``re_embed`` recomputes every stored vector with the
configured model first, so that one index never mixes two vector spaces.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hindsight.core.usecases.common import embed_documents, index_document, index_text

if TYPE_CHECKING:
    from hindsight.core.service import MemoryService

logger = logging.getLogger(__name__)

BATCH = 64


def reindex_memories(
    service: MemoryService,
    re_embed: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Rebuild the index for every memory; returns counts. ``progress(done, total)``."""
    everything = list(service.records.iter_all())
    total = len(everything)
    owners = {(memory.tenant_id, memory.user_id) for memory, _ in everything}
    for tenant_id, user_id in owners:
        service.index.delete_user(tenant_id, user_id)

    indexed = re_embedded = skipped = 0
    for start in range(0, total, BATCH):
        chunk = everything[start : start + BATCH]
        if re_embed:
            vectors = embed_documents(service.embedder, [index_text(m) for m, _ in chunk])
            for (memory, _), vector in zip(chunk, vectors, strict=True):
                service.records.update(memory, vector)
            pairs = [(memory, vector) for (memory, _), vector in zip(chunk, vectors, strict=True)]
            re_embedded += len(pairs)
        else:
            pairs = [(memory, vector) for memory, vector in chunk if vector is not None]
            skipped += len(chunk) - len(pairs)
        service.index.upsert([index_document(memory, vector) for memory, vector in pairs])
        indexed += len(pairs)
        if progress is not None:
            progress(min(start + BATCH, total), total)
    logger.info("reindex done memories=%d re_embedded=%d skipped=%d", total, re_embedded, skipped)
    return {
        "status": "success",
        "memories": total,
        "indexed": indexed,
        "re_embedded": re_embedded,
        "skipped_without_vector": skipped,
        "embedding_model": service.embedder.model_name if re_embed else None,
    }
