"""Maintenance: rebuild the search index from the record store, optionally re-embedding.

The record store is the source of truth; the index can always be rebuilt from it, in
place (``hindsight reindex``). The rebuild also brings each episode's store-time search
keys in line with the configuration: derived again when key expansion is on (so memories
stored before it was switched on get theirs), removed when it is off. ``re_embed``
recomputes every stored vector with the configured model first, in place, for a store
that nothing serves meanwhile (the in-memory backend, tests). Changing the model of a
store in use is a migration to a new index generation with one atomic switch:
``core/usecases/reembed.py`` (``hindsight reindex --re-embed``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hindsight.core.embedding import DEFAULT_CHUNK_SIZES, ChunkSizes, embed_memories
from hindsight.core.indexing import index_document
from hindsight.core.models import EpisodicMemory, Memory
from hindsight.core.ports import Embedder, KeyExpander, RecordStore, SearchIndex

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
        keys: KeyExpander | None = None,
    ) -> None:
        self.records = records
        self.index = index
        self.embedder = embedder
        self.chunk_sizes = chunk_sizes
        self.keys = keys

    def __call__(
        self, re_embed: bool = False, progress: Callable[[int, int], None] | None = None
    ) -> dict[str, Any]:
        """Rebuild the index for every memory; returns counts. ``progress(done, total)``."""
        everything = list(self.records.iter_all())
        total = len(everything)
        owners = {(memory.tenant_id, memory.user_id) for memory, _ in everything}
        for tenant_id, user_id in owners:
            self.index.delete_user(tenant_id, user_id)

        indexed = re_embedded = skipped = rekeyed = 0
        for start in range(0, total, BATCH):
            stored = everything[start : start + BATCH]
            chunk = [(self._with_keys(memory), vector) for memory, vector in stored]
            changed = [new is not old for (new, _), (old, _) in zip(chunk, stored, strict=True)]
            rekeyed += sum(changed)
            if re_embed:  # every record is written again below, keys included
                memories = [memory for memory, _ in chunk]
                vectors = embed_memories(self.embedder, memories, self.chunk_sizes)
                for (memory, _), vector in zip(chunk, vectors, strict=True):
                    self.records.update(memory, vector)
                pairs = [
                    (memory, vector) for (memory, _), vector in zip(chunk, vectors, strict=True)
                ]
                re_embedded += len(pairs)
            else:
                for (memory, kept), rekey in zip(chunk, changed, strict=True):
                    if rekey:
                        self.records.update(memory, kept)
                pairs = [(memory, vector) for memory, vector in chunk if vector is not None]
                skipped += len(chunk) - len(pairs)
            pairs = [(memory, vector) for memory, vector in pairs if memory.archived_at is None]
            self.index.upsert([index_document(memory, vector) for memory, vector in pairs])
            indexed += len(pairs)
            if progress is not None:
                progress(min(start + BATCH, total), total)
        logger.info(
            "reindex done memories=%d re_embedded=%d skipped=%d search_keys_updated=%d",
            total,
            re_embedded,
            skipped,
            rekeyed,
        )
        return {
            "status": "success",
            "memories": total,
            "indexed": indexed,
            "re_embedded": re_embedded,
            "skipped_without_vector": skipped,
            "search_keys_updated": rekeyed,
            "embedding_model": self.embedder.model_name if re_embed else None,
        }

    def _with_keys(self, memory: Memory) -> Memory:
        """The episode with the keys the configuration gives its content (the same object
        when they are already those): the expander's, or none when expansion is off."""
        if not isinstance(memory, EpisodicMemory):
            return memory
        keys = [] if self.keys is None else self.keys.keys(memory.content)
        if keys == memory.search_keys:
            return memory
        return memory.model_copy(update={"search_keys": keys})
