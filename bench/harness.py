"""The benchmarks' shared harness: machine facts, services and their ports, timing, output.

Every script in bench/ builds its service, writes synthetic memories through the ports,
times retrieves and writes its results through this module, so a figure in one script
means what the same figure means in another:

- machine: what the numbers were measured on (load average included: the box is shared);
- services: the embedded service as the bootstrap builds it (``temporary_service``: on a
  temporary directory), a copy of it with another embedder or policy, and
  ``LookupEmbedder`` (vectors from precomputed tables, so the model's cost can be left out);
- writing: synthetic episodic memories written through ``service.ports`` the way the store
  use case writes them, without embedding;
- timing: ``latency_summary`` (p50/p95/p99 in ms) and ``time_retrieves``;
- output: markdown tables, JSON and line charts under bench/results/.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from hindsight.core.commands import MAX_BATCH_ITEMS, RetrieveCommand, StoreBatchCommand
from hindsight.core.indexing import index_document
from hindsight.core.models import GLOBAL_SCOPE, EpisodicMemory, Principal, StoredVector
from hindsight.core.ports import Embedder
from hindsight.core.service import MemoryService
from hindsight.core.temporal import resolve_time_expressions
from hindsight.core.text import content_hash
from hindsight.settings import Settings

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "bench" / "results"
CACHE_DIR = REPO / "bench" / ".cache"  # embeddings kept between runs (exact vectors)
TENANT = "local"  # the local server's anonymous tenant: a server on the same data sees it
PRINCIPAL = Principal(tenant_id=TENANT, key_id="bench")

# --- machine -----------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> list[float]:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return []


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on (load average included: the box may be shared)."""
    total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    return {
        "nproc": os.cpu_count(),
        "cpu_model": cpu_model(),
        "memory_mb": round(total_mb),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_start": load_average(),
        "git_commit": git_commit(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "(unset)"),
    }


def machine_header(info: dict[str, Any]) -> str:
    return (
        f"machine: {info['nproc']} CPU ({info['cpu_model']}), {info['memory_mb']} MB RAM, "
        f"Python {info['python']}, commit {info['git_commit']}, "
        f"load average {info['load_average_at_start']}"
    )


def proc_status_mb(pid: int) -> dict[str, float]:
    """VmHWM (peak resident) and VmRSS of a process, in MB, from /proc/<pid>/status."""
    values: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in {"VmHWM", "VmRSS", "VmPeak", "VmSize"}:
            values[key] = round(int(rest.split()[0]) / 1024.0, 1)
    return values


def directory_size(path: Path) -> int:
    """Bytes of every file under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_http(url: str, process: subprocess.Popen[Any], seconds: float, log: Path) -> float:
    """Poll ``url`` until it answers 200; the seconds it took. Fails with the tail of the
    server's ``log`` when the process exits first, and names the log when time runs out."""
    import httpx

    started = time.monotonic()
    while True:
        if process.poll() is not None:
            tail = log.read_text(encoding="utf-8", errors="replace")[-1500:]
            raise RuntimeError(f"the server exited ({process.returncode}):\n{tail}")
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return time.monotonic() - started
        except httpx.TransportError:
            pass
        if time.monotonic() - started > seconds:
            raise RuntimeError(f"{url} did not answer within {seconds:g} s; see {log}")
        time.sleep(0.05)


def stop_process(process: subprocess.Popen[Any], grace: float = 20.0) -> int:
    """SIGTERM, then SIGKILL if it has not exited within ``grace`` seconds; its exit code."""
    process.terminate()
    try:
        return process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


# --- services and embedders --------------------------------------------------------------


def open_service(data_dir: Path, embedder: Embedder | None = None) -> MemoryService:
    """The embedded service on ``data_dir`` as the bootstrap builds it."""
    from hindsight.bootstrap import build_embedded_service

    return build_embedded_service(Settings(data_dir=data_dir), embedder=embedder)


def close_service(service: MemoryService) -> None:
    """Close what the service's adapters hold open (SQLite, the index's saved graphs)."""
    for part in (service.ports.index, service.ports.records):
        close = getattr(part, "close", None)
        if callable(close):
            close()


@contextmanager
def temporary_service(prefix: str, embedder: Embedder | None = None) -> Iterator[MemoryService]:
    """The embedded service on a fresh temporary directory, closed when the block ends."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        service = open_service(Path(tmp), embedder)
        try:
            yield service
        finally:
            close_service(service)


def with_embedder(service: MemoryService, embedder: Embedder) -> MemoryService:
    """The same stores and policy, embedding with ``embedder``."""
    from hindsight.bootstrap import rewire

    return rewire(service, embedder=embedder)


def with_policy(service: MemoryService, **overrides: Any) -> MemoryService:
    """The same stores and adapters with some ``Policy`` fields changed."""
    from hindsight.bootstrap import rewire

    return rewire(service, policy=dataclasses.replace(service.policy, **overrides))


class DelegatingEmbedder:
    """An embedder port with ``inner``'s model name, dimension, window and tokenizer: the
    base of the bench's embedders that change only how the vectors are made or kept."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def window_tokens(self) -> int:
        return self.inner.window_tokens

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


class LookupEmbedder(DelegatingEmbedder):
    """The real embedder's name and dimension; vectors from precomputed tables.

    ``documents=None`` embeds documents with the real model; otherwise they come from the
    table (a text missing from it is embedded once and added). Queries come from
    ``queries`` unless ``queries_live`` (then the real model embeds them): retrieval is
    timed with or without the cost of embedding the query.
    """

    def __init__(
        self,
        inner: Embedder,
        documents: dict[str, np.ndarray] | None = None,
        queries: dict[str, np.ndarray] | None = None,
        queries_live: bool = False,
    ) -> None:
        super().__init__(inner)
        self.documents = documents
        self.queries = queries if queries is not None else {}
        self.queries_live = queries_live

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if self.documents is None:
            return self.inner.embed_documents(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self.documents]
        if missing:  # e.g. the neutral vector (embedding of ""), computed once per process
            self.documents.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        return np.stack([self.documents[t] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        if self.queries_live:
            return self.inner.embed_query(text)
        return self.queries[text]  # a KeyError means a query was not precomputed


def embed_in_batches(embedder: Embedder, texts: Sequence[str], batch: int = 64) -> np.ndarray:
    parts = [embedder.embed_documents(texts[i : i + batch]) for i in range(0, len(texts), batch)]
    return np.concatenate(parts, axis=0).astype(np.float32)


def dense_scores(
    embedder: Embedder, documents: Sequence[str], queries: Sequence[str]
) -> np.ndarray:
    """The plain dense baseline's (queries, documents) matrix: each query's cosine with each
    document, plus 1 so that every document scores above 0 (the baselines rank positive
    scores only)."""
    docs = np.asarray(embedder.embed_documents(list(documents)))
    docs = docs / np.linalg.norm(docs, axis=1, keepdims=True)
    asked = np.stack([np.asarray(embedder.embed_query(q)) for q in queries])
    asked = asked / np.linalg.norm(asked, axis=1, keepdims=True)
    return (asked @ docs.T) + 1.0


def store_in_batches(
    service: MemoryService, principal: Principal, user_id: str, items: Sequence[Any]
) -> list[Any]:
    """``items`` (``BatchItem``) through ``store_batch``, as many a call as it takes; the
    outcomes in the items' order."""
    outcomes: list[Any] = []
    for start in range(0, len(items), MAX_BATCH_ITEMS):
        batch = list(items[start : start + MAX_BATCH_ITEMS])
        outcomes += service.store_batch(principal, StoreBatchCommand(user_id=user_id, items=batch))
    return outcomes


def normalised(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)


def noisy_copies(vectors: np.ndarray, noise: float, rng: np.random.Generator) -> np.ndarray:
    """``vectors`` plus seeded Gaussian noise (sigma ``noise`` per dimension), renormalised."""
    return normalised(vectors + noise * rng.standard_normal(vectors.shape).astype(np.float32))


# --- writing through the ports -----------------------------------------------------------


def synthetic_episode(
    memory_id: str,
    tenant_id: str,
    user_id: str,
    text: str,
    category: str,
    occurred: datetime,
    now: datetime,
    session_id: str,
) -> EpisodicMemory:
    """An episodic memory as the store use case would build it from ``text`` (user speaking)."""
    return EpisodicMemory(
        memory_id=memory_id,
        tenant_id=tenant_id,
        user_id=user_id,
        scope=GLOBAL_SCOPE,
        content=text,
        category=category,
        occurred_at=occurred,
        created_at=now,
        updated_at=now,
        session_id=session_id,
        speaker="user",
        event_time=resolve_time_expressions(text, occurred),
        content_hash=content_hash(text),
    )


def write_through_ports(
    service: MemoryService, batch: Sequence[tuple[EpisodicMemory, StoredVector]]
) -> tuple[float, float]:
    """The store use case's writes without embedding: what ``ports.writer.add`` does
    (``records.put`` with the dedup key, then one ``index.upsert``), called on the two
    ports directly so each is timed; returns (put seconds, upsert seconds)."""
    ports = service.ports
    started = time.perf_counter()
    for memory, vector in batch:
        ports.records.put(
            memory,
            vector,
            dedup_key=f"{memory.user_id}|{memory.scope}|{memory.content_hash}",
            dedup_window_seconds=service.policy.dedup_window_seconds,
        )
    put_s = time.perf_counter() - started
    started = time.perf_counter()
    ports.index.upsert([index_document(m, v) for m, v in batch])
    return put_s, time.perf_counter() - started


# --- timing ------------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Linear-interpolated percentile of already sorted values."""
    if not sorted_values:
        return math.nan
    position = (len(sorted_values) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    weight = position - low
    return sorted_values[low] * (1 - weight) + sorted_values[high] * weight


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """count and p50/p95/p99/mean/max in milliseconds."""
    ms = sorted(s * 1000.0 for s in seconds)
    return {
        "count": len(ms),
        "p50_ms": round(percentile(ms, 0.50), 3),
        "p95_ms": round(percentile(ms, 0.95), 3),
        "p99_ms": round(percentile(ms, 0.99), 3),
        "mean_ms": round(sum(ms) / len(ms), 3) if ms else math.nan,
        "max_ms": round(ms[-1], 3) if ms else math.nan,
    }


@dataclasses.dataclass
class RetrieveRun:
    """What ``time_retrieves`` saw: one latency and one ranked id list per command."""

    seconds: list[float]
    ranked_ids: list[list[str]]
    partial: int

    def summary(self) -> dict[str, Any]:
        results = sum(len(ids) for ids in self.ranked_ids)
        return {
            **latency_summary(self.seconds),
            "mean_results": round(results / max(len(self.ranked_ids), 1), 2),
            "partial": self.partial,
        }


def retrieve_plan(pairs: Sequence[tuple[str, str]], **fields: Any) -> list[RetrieveCommand]:
    """One ``RetrieveCommand`` per (user_id, query), with the same extra ``fields``."""
    return [RetrieveCommand(user_id=user, query=query, **fields) for user, query in pairs]


def time_retrieves(
    service: MemoryService,
    commands: Sequence[RetrieveCommand],
    *,
    principal: Principal = PRINCIPAL,
    warmup: int = 0,
    next_page_top_k: int | None = None,
) -> RetrieveRun:
    """``service.retrieve`` of each command, one at a time, each timed on its own.

    The first ``warmup`` commands run once untimed first. With ``next_page_top_k``, a
    command whose page has a next cursor is followed by that many more results through
    the cursor, inside the same timing (one question asked = both calls).
    """
    for command in commands[:warmup]:
        service.retrieve(principal, command)
    seconds: list[float] = []
    ranked: list[list[str]] = []
    partial = 0
    for command in commands:
        started = time.perf_counter()
        result = service.retrieve(principal, command)
        ids = [r.memory_id for r in result.results]
        if next_page_top_k and result.next_cursor:
            more = service.retrieve(
                principal,
                command.model_copy(update={"cursor": result.next_cursor, "top_k": next_page_top_k}),
            )
            ids += [r.memory_id for r in more.results]
        seconds.append(time.perf_counter() - started)
        ranked.append(ids)
        partial += result.partial
    return RetrieveRun(seconds, ranked, partial)


# --- output ------------------------------------------------------------------------------


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.2f}"
        return str(value)

    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


@dataclasses.dataclass
class Series:
    """One line of a chart: matplotlib ``plot`` arguments."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    style: str = "-o"
    options: dict[str, Any] = dataclasses.field(default_factory=dict)


def line_chart(
    path: Path,
    series: Sequence[Series],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    xlim: tuple[float, float],
    ylim: tuple[float, float],
    legend: str = "best",
    size: tuple[float, float] = (7.5, 4.8),
    dpi: int = 120,
) -> None:
    """A PNG line chart (matplotlib without a display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=size)
    for line in series:
        ax.plot(line.x, line.y, line.style, label=line.label, **line.options)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc=legend, fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
