"""Embedding through the port: model failures become UnavailableError, vectors carry the model."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from hindsight.core import chunking
from hindsight.core.errors import UnavailableError
from hindsight.core.indexing import chunk_texts, index_text
from hindsight.core.models import EpisodicMemory, Memory, Span, StoredVector
from hindsight.core.ports import Embedder

# (texts embedded, texts in all) after each slice, while a job is watching (``reporting``)
Progress = Callable[[int, int], None]
_progress: ContextVar[Progress | None] = ContextVar("embedding_progress", default=None)
# while progress is reported, texts go to the engine in about PROGRESS_STEPS calls of at
# least PROGRESS_SLICE texts: batches the engine runs at its batch speed, and a 100-chunk
# memory reports a dozen steps
PROGRESS_SLICE = 8
PROGRESS_STEPS = 12


@contextmanager
def reporting(progress: Progress) -> Iterator[None]:
    """Within the block (in this thread), ``embed_documents`` embeds in slices and calls
    ``progress(done, total)`` after each."""
    token = _progress.set(progress)
    try:
        yield
    finally:
        _progress.reset(token)


def embed_documents(embedder: Embedder, texts: Sequence[str]) -> list[StoredVector]:
    progress = _progress.get()
    try:
        if progress is None:
            matrix = np.asarray(embedder.embed_documents(list(texts)), dtype=np.float32)
        else:
            matrix = _embed_reporting(embedder, list(texts), progress)
    except (RuntimeError, OSError, MemoryError) as exc:
        raise UnavailableError(
            f"the embedding model {embedder.model_name} failed ({exc}); retry later"
        ) from exc
    return [StoredVector(model=embedder.model_name, values=row) for row in matrix]


def _embed_reporting(embedder: Embedder, texts: list[str], progress: Progress) -> np.ndarray:
    parts: list[np.ndarray] = []
    progress(0, len(texts))
    size = max(PROGRESS_SLICE, -(-len(texts) // PROGRESS_STEPS))
    for start in range(0, len(texts), size):
        part = texts[start : start + size]
        parts.append(np.asarray(embedder.embed_documents(part), dtype=np.float32))
        progress(start + len(part), len(texts))
    if not parts:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    return np.concatenate(parts)


@dataclass(frozen=True)
class ChunkSizes:
    """How memories are embedded. Long ones are cut for search: at most ``tokens`` a chunk
    (the embedder's window at most), consecutive chunks overlapping by ``overlap`` tokens.

    ``turn_weight`` is the share of a session turn's vector that is the turn alone; the
    rest is the turn searched with the turn before it (its ``context``). See
    ``embed_memories``.
    """

    tokens: int = 256
    overlap: int = 32
    turn_weight: float = 0.0


DEFAULT_CHUNK_SIZES = ChunkSizes()


def embed_memories(
    embedder: Embedder, memories: Sequence[Memory], sizes: ChunkSizes
) -> list[StoredVector]:
    """Each memory's vector: one for a memory that fits a chunk, one per chunk otherwise.

    A memory whose search text (``index_text``) is at most ``sizes.tokens`` tokens (capped
    by the model's window) is embedded whole, as it always was; a longer one is split
    (``core/chunking.py``) and every chunk embedded. All texts go to the model in one call.

    A session turn is searched together with the turn before it (``EpisodicMemory.context``,
    so a reply is found by what it answers), but a turn that says all it means on its own
    loses by it: the turn before pulls its vector towards another subject. With
    ``sizes.turn_weight`` w > 0 the row holding the context (the whole memory, or its first
    chunk) is ``w * v(the text without the context) + (1 - w) * v(with it)``: its inner
    product with a query is the same mix of the two cosines. Not normalised, on purpose:
    normalising divides by the mix's length, which is shorter the more the two vectors
    differ, and so favours exactly the turns whose context leads away (docs/decisions.md).
    """
    limit = max(8, min(sizes.tokens, embedder.window_tokens))
    plans: list[tuple[Span, ...]] = []
    texts: list[str] = []
    alone: list[tuple[int, str]] = []  # (row of the text with the context, text without)
    for memory in memories:
        whole = index_text(memory)
        context = sizes.turn_weight > 0 and isinstance(memory, EpisodicMemory) and memory.context
        if _fits(embedder, whole, limit):
            plans.append(())
            if context:
                alone.append((len(texts), index_text(memory.model_copy(update={"context": None}))))
            texts.append(whole)
            continue
        spans = tuple(chunking.split(memory.content, embedder.count_tokens, limit, sizes.overlap))
        plans.append(spans)
        if context:
            bare = memory.model_copy(update={"context": None})
            alone.append((len(texts), chunk_texts(bare, spans)[0]))
        texts.extend(chunk_texts(memory, spans))
    rows = embed_documents(embedder, texts + [text for _, text in alone])
    weight = sizes.turn_weight
    for (row, _), extra in zip(alone, rows[len(texts) :], strict=True):
        mixed = weight * extra.values + (1.0 - weight) * rows[row].values
        rows[row] = StoredVector(model=embedder.model_name, values=mixed.astype(np.float32))
    out: list[StoredVector] = []
    position = 0
    for spans in plans:
        if not spans:
            out.append(rows[position])
            position += 1
            continue
        matrix = np.stack([row.values for row in rows[position : position + len(spans)]])
        out.append(StoredVector(model=embedder.model_name, values=matrix, spans=spans))
        position += len(spans)
    return out


def _fits(embedder: Embedder, text: str, limit: int) -> bool:
    # a token covers at least one character, so a text with fewer characters than the
    # limit (less a margin for the prefix and special tokens) fits without counting
    return len(text) + 16 <= limit or embedder.count_tokens(text) <= limit


# the turn before a session turn is stored as its context up to this many characters
# (``StoreMemories.with_session_context``): it keeps the memory's own text in the window
MAX_CONTEXT_CHARS = 600


def context_fits(embedder: Embedder, text: str, limit: int) -> bool:
    """Whether a turn before of ``text`` is short enough to be a turn's context: at most
    ``limit`` tokens (0: any length). Only the first ``limit`` x 16 characters are counted
    (a token is far shorter than 16 characters, so a longer text is still over the
    limit): a long turn costs no more."""
    return not limit or embedder.count_tokens(text[: limit * 16]) <= limit


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
