"""Maintenance: rebuild the search index from the record store, optionally re-embedding.

The record store is the source of truth; the index can always be rebuilt from it, in
place (``hindsight reindex``). ``re_embed`` recomputes every stored vector with the
configured model first, in place, for a store that nothing serves meanwhile (the in-memory
backend, tests). Changing the model of a store in use is a migration to a new index
generation with one atomic switch: ``core/usecases/reembed.py``
(``hindsight reindex --re-embed``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hindsight.core.embedding import DEFAULT_CHUNK_SIZES, ChunkSizes, embed_memories
from hindsight.core.indexing import index_document
from hindsight.core.ports import Embedder, RecordStore, SearchIndex

logger = logging.getLogger(__name__)

BATCH = 64


class ReindexMemories:
    """Operator task (no principal): rebuild the index from the records, directly on the
    ports (this is the repair path, not a write that needs a write policy)."""

    def __init__(
        self,
        records: RecordStore,
        index: SearchIndex,
        embedder: Embedder,
        chunk_sizes: ChunkSizes = DEFAULT_CHUNK_SIZES,
    ) -> None:
        self.records = records
        self.index = index
        self.embedder = embedder
        self.chunk_sizes = chunk_sizes

    def __call__(
        self, re_embed: bool = False, progress: Callable[[int, int], None] | None = None
    ) -> dict[str, Any]:
        """Rebuild the index for every memory; returns counts. ``progress(done, total)``."""
        everything = list(self.records.iter_all())
        total = len(everything)
        owners = {(memory.tenant_id, memory.user_id) for memory, _ in everything}
        for tenant_id, user_id in owners:
            self.index.delete_user(tenant_id, user_id)

        indexed = re_embedded = skipped = 0
        for start in range(0, total, BATCH):
            chunk = everything[start : start + BATCH]
            if re_embed:
                memories = [memory for memory, _ in chunk]
                vectors = embed_memories(self.embedder, memories, self.chunk_sizes)
                for (memory, _), vector in zip(chunk, vectors, strict=True):
                    self.records.update(memory, vector)
                pairs = [
                    (memory, vector) for (memory, _), vector in zip(chunk, vectors, strict=True)
                ]
                re_embedded += len(pairs)
            else:
                pairs = [(memory, vector) for memory, vector in chunk if vector is not None]
                skipped += len(chunk) - len(pairs)
            pairs = [(memory, vector) for memory, vector in pairs if memory.archived_at is None]
            self.index.upsert([index_document(memory, vector) for memory, vector in pairs])
            indexed += len(pairs)
            if progress is not None:
                progress(min(start + BATCH, total), total)
        logger.info(
            "reindex done memories=%d re_embedded=%d skipped=%d", total, re_embedded, skipped
        )
        return {
            "status": "success",
            "memories": total,
            "indexed": indexed,
            "re_embedded": re_embedded,
            "skipped_without_vector": skipped,
            "embedding_model": self.embedder.model_name if re_embed else None,
        }
