"""The embedder of the index generation being served: queries and stores use its model.

Changing ``HINDSIGHT_EMBEDDER`` does not change the vectors already indexed; a re-embedding
migration (``hindsight reindex --re-embed``, ``core/usecases/reembed.py``) builds a new
index generation and switches to it. Until the switch the service must go on embedding with
the old model (its queries are compared with the old vectors), and from the switch on with
the new one, without a restart. ``ServingEmbedder`` asks ``serving()`` (the embedded
manifest, or the OpenSearch alias's index) which model is served, at most every
``check_every`` seconds, and embeds with the configured embedder when that is the model, or
with one built from the spec the generation recorded (built once, kept).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from hindsight.core.errors import (
    ConfigurationError,
    EmbeddingModelMismatchError,
    UnavailableError,
)
from hindsight.core.ports import Embedder

logger = logging.getLogger(__name__)

Serving = Callable[[], tuple[str, str] | None]  # (model name, embedder spec) or unknown


def reembed_hint(index_model: str, configured: str) -> str:
    return (
        f"the search index was built with embedding model {index_model!r} but "
        f"HINDSIGHT_EMBEDDER gives {configured!r}; run `hindsight reindex --re-embed` to "
        f"move the index to {configured!r} (retrieval keeps answering with {index_model!r} "
        "until the new index is complete), or configure the index's model again"
    )


class ServingEmbedder:
    """An Embedder that follows the served index generation's model."""

    def __init__(
        self,
        configured: Embedder,
        serving: Serving,
        build: Callable[[str], Embedder],
        check_every: float = 1.0,
    ) -> None:
        self.configured = configured
        self._serving = serving
        self._build = build
        self.check_every = check_every
        self._lock = threading.Lock()
        self._built: dict[str, Embedder] = {}
        self._current = configured
        self._checked = float("-inf")
        self._local = threading.local()
        self._warned: str | None = None

    def refresh(self) -> Embedder:
        """The served model's embedder, looked up now (after a switch)."""
        self._checked = float("-inf")
        return self._looked_up()

    def _looked_up(self) -> Embedder:
        """The served model's embedder, looked up at most every ``check_every`` s."""
        now = time.monotonic()
        if now - self._checked >= self.check_every:
            self._checked = now
            self._current = self._choose()
        return self._current

    def current(self) -> Embedder:
        """The embedder of this call: the request's pinned one, else the served model's."""
        pinned: Embedder | None = getattr(self._local, "pinned", None)
        return pinned if pinned is not None else self._looked_up()

    @contextmanager
    def pinned(self) -> Iterator[Embedder]:
        """One model for a whole request (``MemoryService`` pins around retrieve, store,
        context and reflect): a query vector and what it is compared with (the neutral
        passage, the references) are never of two models, even across a switch."""
        outer: Embedder | None = getattr(self._local, "pinned", None)
        self._local.pinned = outer or self._looked_up()
        try:
            yield self._local.pinned
        except EmbeddingModelMismatchError:
            self._checked = float("-inf")  # the index moved on: look again next request
            raise
        finally:
            self._local.pinned = outer

    def _choose(self) -> Embedder:
        try:
            served = self._serving()
        except UnavailableError as exc:  # the index cannot say now: keep the current model
            logger.warning("served embedding model unknown error=%s", exc.message)
            return self._current
        if served is None or served[0] == self.configured.model_name:
            return self.configured
        model, spec = served
        with self._lock:
            embedder = self._built.get(model)
            if embedder is None:
                embedder = self._build_for(model, spec)
                self._built[model] = embedder
        if self._warned != model:
            self._warned = model
            logger.warning("%s", reembed_hint(model, self.configured.model_name))
        return embedder

    def _build_for(self, model: str, spec: str) -> Embedder:
        if not spec:
            raise ConfigurationError(reembed_hint(model, self.configured.model_name))
        embedder = self._build(spec)
        if embedder.model_name != model:
            raise ConfigurationError(
                f"the served index generation records embedder {spec!r} for model {model!r}, "
                f"but it builds {embedder.model_name!r}; "
                + reembed_hint(model, self.configured.model_name)
            )
        logger.info("embedding with the served index's model model=%s spec=%s", model, spec)
        return embedder

    # --- Embedder ------------------------------------------------------------------------
    @property
    def model_name(self) -> str:
        return self.current().model_name

    @property
    def dimension(self) -> int:
        return self.current().dimension

    @property
    def window_tokens(self) -> int:
        return self.current().window_tokens

    def count_tokens(self, text: str) -> int:
        return self.current().count_tokens(text)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.current().embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.current().embed_query(text)
