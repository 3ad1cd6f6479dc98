"""Embedding through the port: model failures become UnavailableError, vectors carry the model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hindsight.core.errors import UnavailableError
from hindsight.core.models import StoredVector
from hindsight.core.ports import Embedder


def embed_documents(embedder: Embedder, texts: Sequence[str]) -> list[StoredVector]:
    try:
        matrix = np.asarray(embedder.embed_documents(list(texts)), dtype=np.float32)
    except (RuntimeError, OSError, MemoryError) as exc:
        raise UnavailableError(
            f"the embedding model {embedder.model_name} failed ({exc}); retry later"
        ) from exc
    return [StoredVector(model=embedder.model_name, values=row) for row in matrix]


def embed_query(embedder: Embedder, text: str) -> StoredVector:
    try:
        values = np.asarray(embedder.embed_query(text), dtype=np.float32)
    except (RuntimeError, OSError, MemoryError) as exc:
        raise UnavailableError(
            f"the embedding model {embedder.model_name} failed ({exc}); retry later"
        ) from exc
    return StoredVector(model=embedder.model_name, values=values)


_NEUTRAL: dict[tuple[int, str], np.ndarray] = {}


def neutral_vector(embedder: Embedder) -> np.ndarray:
    """The embedding of an empty passage: what "unrelated" looks like for this model.

    Cosine similarities are not comparable across models (multilingual-e5 puts unrelated
    texts near 0.75, MiniLM near 0.1); a query's similarity to this vector is the floor
    from which its relevance is measured.
    """
    key = (id(embedder), embedder.model_name)
    if key not in _NEUTRAL:
        _NEUTRAL[key] = embed_documents(embedder, [""])[0].values
    return _NEUTRAL[key]
