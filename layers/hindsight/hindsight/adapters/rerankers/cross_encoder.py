"""Reranker on a sentence-transformers ``CrossEncoder``, by local path or hub name.

A cross-encoder reads the query and a memory as one input and gives one relevance logit;
the sigmoid of it is the relevance in [0, 1] (whatever activation the model was saved
with). ``sentence-transformers`` (and torch) are the optional extra
``hindsight[sentence-transformers]``; they are imported, and the model loaded, on the
first use (``warm``, before the rerank's time budget starts). A model that cannot be
loaded is reported on every retrieve without being tried again until the process restarts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hindsight.adapters.embedders.sentence_transformers_embedder import (
    INSTALL_HINT,
    SentenceTransformersMissingError,
)
from hindsight.core.errors import UnavailableError

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

logger = logging.getLogger(__name__)


class CrossEncoderReranker:
    """Scores (query, memory) pairs with a cross-encoder of one output (a reranker)."""

    def __init__(
        self, model_name_or_path: str | Path, device: str = "cpu", batch_size: int = 32
    ) -> None:
        self._source = str(model_name_or_path)
        self._device = device
        self._batch_size = batch_size
        self._model: CrossEncoder | None = None
        self._sigmoid: Any = None
        self._failed: Exception | None = None  # a model that cannot load is not tried again
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        return f"cross-encoder:{self._source}"

    def warm(self) -> None:
        self._loaded()

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        model = self._loaded()
        scores = model.predict(
            [(query, text) for text in texts],
            batch_size=self._batch_size,
            activation_fn=self._sigmoid,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [float(score) for score in np.asarray(scores, dtype=np.float64).reshape(-1)]

    def _loaded(self) -> CrossEncoder:
        with self._lock:
            if self._failed is not None:
                raise self._failed
            if self._model is None:
                try:
                    self._model = self._load()
                except UnavailableError as exc:  # a path or an install to fix, then restart
                    self._failed = exc
                    raise
            return self._model

    def _load(self) -> CrossEncoder:
        try:
            import torch
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise SentenceTransformersMissingError(
                f"HINDSIGHT_RERANKER=cross-encoder:... needs sentence-transformers; run "
                f"`{INSTALL_HINT}`"
            ) from exc
        local = Path(self._source).expanduser()
        source = str(local) if local.exists() else self._source
        try:
            model = CrossEncoder(source, device=self._device, local_files_only=local.exists())
        except Exception as exc:  # OSError, ValueError, hub errors: all mean "cannot load"
            raise UnavailableError(
                f"cannot load the cross-encoder {self._source!r} ({type(exc).__name__}: {exc}); "
                "give the path of a saved CrossEncoder model, or a model name the Hugging "
                "Face hub serves (offline, only models already downloaded load)"
            ) from exc
        labels = getattr(model, "num_labels", 1)
        if labels != 1:
            raise UnavailableError(
                f"{self._source!r} is a classifier of {labels} labels, not a reranker (one "
                "relevance output); use a cross-encoder trained for reranking"
            )
        self._sigmoid = torch.nn.Sigmoid()
        logger.info("cross-encoder loaded model=%s device=%s", self._source, self._device)
        return model
