"""Rules every backend's record store and search index share: the dedup window, BM25's
constants, what a hit carries, and the messages for a memory id stored twice and for vectors
of another embedding model."""

from __future__ import annotations

from hindsight.core.errors import ConflictError
from hindsight.core.models import HitFacts, IndexDocument, Memory, StoredVector

BM25_K1 = 1.2
# No length normalisation (BM25's b = 0): a memory is a turn or a chunk of bounded size,
# and shortness is no sign of focus. With b = 0.75 a query word that every turn of a
# speaker holds (their name) scored the shortest of them best ("Morgan: Hi! How are you
# doing tonight?"; the figures: docs/decisions.md, "Ranking"). OpenSearch: the field
# keeps no norms (mapping.py), so every document has one length there too; a word
# repeated in a document saturates a little sooner there (its k1 becomes 1.2 x (0.25 +
# 0.75 / the average length)), words found once score alike on both
BM25_B = 0.0


def dedup_blocks(
    marked: Memory | None,
    memory: Memory,
    window_seconds: float,
) -> bool:
    """Whether a marker's memory makes ``memory`` a duplicate.

    It does when it is still stored, not expired as of the new memory's ``created_at``,
    and occurred less than ``window_seconds`` apart from the new memory.
    """
    if marked is None or marked.is_expired(memory.created_at):
        return False
    gap = abs((memory.occurred_at - marked.occurred_at).total_seconds())
    return gap < window_seconds


def already_exists(memory: Memory) -> ConflictError:
    """The error of a put whose (tenant, memory id) is already stored."""
    return ConflictError(f"memory {memory.memory_id} already exists; store it under a new id")


def model_mismatch(index_model: str, index_dim: int, vector: StoredVector) -> str:
    """The message of EmbeddingModelMismatchError: both models and what to do."""
    return (
        f"the search index holds vectors of embedding model {index_model!r} "
        f"(dimension {index_dim}) but got {vector.model!r} (dimension {vector.dim}); "
        "move the index to the new model (`hindsight reindex --re-embed`) or configure "
        f"the original model {index_model!r} again"
    )


def hit_facts(document: IndexDocument) -> HitFacts:
    return HitFacts(kind=document.kind, session_id=document.session_id)
