"""Ingest throughput: batch stores, documents and imports over HTTP against the engine alone;
docs/benchmarks.md gives the setup and figures.

    .venv/bin/python bench/ingest_throughput.py              # 3 rounds, ~5 minutes
    .venv/bin/python bench/ingest_throughput.py --rounds 2 --retrieve-rounds 1

Paths, each a fresh user a round, in alternating order: ``batch`` (100 items a call),
``document``, ``import`` (``hindsight import``; the CLI's start-up printed apart), each
against the engine alone on the texts the server embeds. Medians over the rounds, with
every round's value; the target: each path ≥ 0.70 of the engine's rate. Then an agent's
retrieve p95 during a bulk import against alone. Writes
``bench/results/ingest_throughput.json`` (``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    PRINCIPAL,
    REPO,
    RESULTS_DIR,
    DelegatingEmbedder,
    latency_summary,
    load_average,
    machine_header,
    machine_info,
    temporary_service,
    write_json,
)
from load import Server, cpu_seconds, hindsight_cli, start_server

from hindsight.adapters.embedders.engine_line import cpu_flags
from hindsight.adapters.embedders.factory import build_embedder
from hindsight.adapters.embedders.kernel_choice import cpu_features
from hindsight.core.commands import StoreBatchCommand
from hindsight.core.ports import Embedder
from hindsight.core.usecases.documents import StoreDocumentCommand

LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
BATCH = 100  # items per POST /v1/memories/batch (the route's limit)
TARGET = 0.70  # the share of the engine's throughput
TIMEOUT = httpx.Timeout(900.0)


# --- texts -------------------------------------------------------------------------------


def locomo_turns() -> list[str]:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    turns = [
        turn["text"].strip()
        for conversation in data
        for value in conversation["conversation"].values()
        if isinstance(value, list)
        for turn in value
        if turn.get("text", "").strip()
    ]
    return list(dict.fromkeys(turns))  # distinct: a duplicate would be skipped, not stored


def short_texts(turns: list[str], count: int) -> list[str]:
    """``count`` turns of 25-60 words (about 30-80 tokens; ~40 on average)."""
    chosen = [turn for turn in turns if 25 <= len(turn.split()) <= 60]
    if len(chosen) < count:
        raise SystemExit(f"only {len(chosen)} LoCoMo turns of 25-60 words; ask for fewer")
    return chosen[:count]


def document_text(turns: list[str], chars: int) -> str:
    """A Markdown document of about ``chars`` characters: headed sections of turns."""
    parts: list[str] = ["# Notes from the conversations"]
    size = 0
    for number, turn in enumerate(turns[-3000:]):
        if number % 12 == 0:
            parts.append(f"\n## Part {number // 12 + 1}\n")
        parts.append(turn)
        size += len(turn) + 1
        if size >= chars:
            break
    return "\n".join(parts)


# --- the texts the server embeds ---------------------------------------------------------


class RecordingEmbedder(DelegatingEmbedder):
    """The real embedder's tokenizer and shape; ``embed_documents`` records its texts and
    answers random unit vectors (what is embedded is the question here, not the vectors)."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.texts: list[str] = []
        self._rng = np.random.default_rng(0)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self._unit(len(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return self._unit(1)[0]

    def _unit(self, rows: int) -> np.ndarray:
        values = self._rng.standard_normal((rows, self.inner.dimension)).astype(np.float32)
        return values / np.linalg.norm(values, axis=1, keepdims=True)


def embedded_texts(
    engine: Embedder, shorts: list[str], document: str
) -> tuple[list[str], list[str]]:
    """(texts a batch store of ``shorts`` embeds, chunks the document's upload embeds),
    read off the use cases run in-process on a scratch directory."""
    recorder = RecordingEmbedder(engine)
    with temporary_service("ingest-texts-", recorder) as service:
        for start in range(0, len(shorts), BATCH):
            items = [{"content": text} for text in shorts[start : start + BATCH]]
            batch = StoreBatchCommand.model_validate({"user_id": "u", "items": items})
            service.store_batch(PRINCIPAL, batch)
        batch_texts, recorder.texts = recorder.texts, []
        data = document.encode("utf-8")
        service.store_document(
            PRINCIPAL, StoreDocumentCommand(user_id="u", file_name="notes.md", data=data)
        )
        return batch_texts, recorder.texts


# --- the paths ---------------------------------------------------------------------------


Timing = tuple[float, float]  # (wall seconds, CPU seconds of the process doing the work)


def time_engine(engine: Embedder, texts: list[str]) -> Timing:
    started, cpu = time.perf_counter(), time.process_time()
    engine.embed_documents(texts)
    return time.perf_counter() - started, time.process_time() - cpu


def on_server(pid: int, work: Callable[[], float]) -> Timing:
    """``work``'s wall time and the server's CPU seconds meanwhile."""
    cpu = cpu_seconds(pid)
    wall = work()
    return wall, cpu_seconds(pid) - cpu


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_batches(http: httpx.Client, user: str, texts: list[str]) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        items = [{"content": text} for text in texts[start : start + BATCH]]
        reply = http.post("/v1/memories/batch", json={"user_id": user, "items": items})
        reply.raise_for_status()
        stored = [result["status"] for result in reply.json()["results"]]
        if stored.count("success") != len(items):
            raise RuntimeError(f"batch store did not store every item: {stored}")
    return time.perf_counter() - started


def time_document(http: httpx.Client, user: str, document: str) -> float:
    body = {"user_id": user, "file_name": "notes.md", "text": document}
    started = time.perf_counter()
    reply = http.post("/v1/documents", json=body)
    elapsed = time.perf_counter() - started
    reply.raise_for_status()
    return elapsed


def time_import(pid: int, data_dir: Path, user: str, texts: list[str], work: Path) -> Timing:
    """The import's wall time, and the CPU seconds of the server and the CLI together."""
    cli = children_cpu()
    wall, server = on_server(pid, lambda: run_import(data_dir, user, texts, work))
    return wall, server + children_cpu() - cli


def cli_startup() -> Timing:
    """``hindsight --help``: the CLI's start-up (its imports), which every import pays once."""
    cpu, started = children_cpu(), time.perf_counter()
    subprocess.run([*hindsight_cli(), "--help"], capture_output=True, check=True)
    return time.perf_counter() - started, children_cpu() - cpu


def run_import(data_dir: Path, user: str, texts: list[str], work: Path) -> float:
    source = work / f"{user}.jsonl"
    source.write_text(
        "".join(json.dumps({"content": text}) + "\n" for text in texts), encoding="utf-8"
    )
    command = [*hindsight_cli(), "--data-dir", str(data_dir), "import", str(source)]
    command += ["--user-id", user]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"hindsight import failed ({done.returncode}): {done.stderr[-800:]}")
    return elapsed


# --- retrieve during a bulk import -------------------------------------------------------

QUERIES = (
    "what did she say about the painting class",
    "when is the trip to the mountains",
    "who adopted a dog last month",
    "what does he do for work",
    "the book they talked about reading",
    "plans for the weekend with the kids",
)


def retrieve_latencies(http: httpx.Client, user: str, until: threading.Event | int) -> list[float]:
    """One retrieve at a time: ``until`` retrieves, or until the event is set."""
    seconds: list[float] = []
    number = 0
    while (isinstance(until, int) and number < until) or (
        isinstance(until, threading.Event) and not until.is_set()
    ):
        body = {"user_id": user, "query": QUERIES[number % len(QUERIES)], "top_k": 10}
        started = time.perf_counter()
        http.post("/v1/retrieve", json=body).raise_for_status()
        seconds.append(time.perf_counter() - started)
        number += 1
        time.sleep(0.05)  # an agent between turns
    return seconds


def retrieve_during_bulk(url: str, user: str, texts: list[str]) -> list[float]:
    done = threading.Event()
    failures: list[BaseException] = []

    def bulk() -> None:
        try:
            with httpx.Client(base_url=url, timeout=TIMEOUT) as http:
                time_batches(http, f"bulk-{uuid.uuid4().hex[:8]}", texts)
        except BaseException as exc:  # reported after the retrieves
            failures.append(exc)
        finally:
            done.set()

    worker = threading.Thread(target=bulk, name="bulk-import")
    with httpx.Client(base_url=url, timeout=TIMEOUT) as http:
        worker.start()
        time.sleep(0.3)  # the bulk import's first batch is embedding
        seconds = retrieve_latencies(http, user, done)
    worker.join()
    if failures:
        raise RuntimeError("the bulk import failed") from failures[0]
    return seconds


# --- the run -----------------------------------------------------------------------------


def rate(count: int, timings: Sequence[Timing]) -> dict[str, Any]:
    rates = [count / wall for wall, _ in timings]
    return {
        "per_second": round(statistics.median(rates), 2),
        "rounds": [round(r, 2) for r in rates],
        "cpu_seconds": [round(cpu, 2) for _, cpu in timings],
    }


def ratios(path: Sequence[Timing], engine: Sequence[Timing]) -> dict[str, Any]:
    """The path's rate over the engine's on the same texts, per round: the engine's wall
    time over the path's; and the engine's CPU seconds over the path's (the share of the
    path's work that is the engine's, steadier than wall time on a shared machine)."""
    walls = [e[0] / p[0] for p, e in zip(path, engine, strict=True)]
    cpus = [e[1] / p[1] for p, e in zip(path, engine, strict=True) if p[1] > 0]
    return {
        "median": round(statistics.median(walls), 3),
        "rounds": [round(v, 3) for v in walls],
        "cpu_median": round(statistics.median(cpus), 3) if cpus else None,
        "cpu_rounds": [round(v, 3) for v in cpus],
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    turns = locomo_turns()
    shorts = short_texts(turns, args.short)
    document = document_text(turns, args.document_chars)
    with tempfile.TemporaryDirectory(prefix="ingest-bench-") as work_name:
        work = Path(work_name)
        data_dir = work / "data"
        data_dir.mkdir()
        server = start_server("serve", data_dir, threads=8, write_threads=None)
        try:
            return run_rounds(args, server, data_dir, work, shorts, document)
        finally:
            code = server.stop()
            if code != 0:
                print(f"the server exited {code}; its log: {server.log}", file=sys.stderr)


def run_rounds(
    args: argparse.Namespace,
    server: Server,
    data_dir: Path,
    work: Path,
    shorts: list[str],
    document: str,
) -> dict[str, Any]:
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as http:
        # warm the server's engine (its kernel probe writes the choice the engine below reads)
        time_batches(http, "warm", shorts[:8])
        health = http.get("/v1/health").json()
        engine = build_embedder("e5", choice_dir=data_dir)
        batch_texts, chunks = embedded_texts(engine, shorts, document)
        engine.embed_documents(shorts[:8])  # warm
        short_tokens = float(np.mean([engine.count_tokens(t) for t in batch_texts]))
        chunk_tokens = float(np.mean([engine.count_tokens(t) for t in chunks]))
        print(
            f"texts the server embeds: batch {len(batch_texts)} (mean {short_tokens:.0f} tokens), "
            f"document {len(chunks)} chunks (mean {chunk_tokens:.0f} tokens)",
            flush=True,
        )
        pid = server.process.pid
        keys = ("engine_short", "batch", "import", "cli_startup", "engine_chunks", "document")
        times: dict[str, list[Timing]] = {key: [] for key in keys}
        for number in range(args.rounds):
            user = f"r{number}-{uuid.uuid4().hex[:6]}"
            steps = [
                ("engine_short", lambda: time_engine(engine, batch_texts)),
                (
                    "batch",
                    lambda u=user: on_server(pid, lambda: time_batches(http, f"{u}-b", shorts)),
                ),
                ("engine_chunks", lambda: time_engine(engine, chunks)),
                (
                    "document",
                    lambda u=user: on_server(pid, lambda: time_document(http, f"{u}-d", document)),
                ),
                ("import", lambda u=user: time_import(pid, data_dir, f"{u}-i", shorts, work)),
                ("cli_startup", cli_startup),
            ]
            if number % 2:
                steps.reverse()
            for key, step in steps:
                times[key].append(step())
            done = ", ".join(
                f"{k} {t[-1][0]:.2f} s ({t[-1][1]:.2f} CPU s)" for k, t in times.items()
            )
            print(f"round {number + 1}: {done}; load {load_average()}", flush=True)
        alone: list[float] = []
        during: list[float] = []
        probe = "probe"
        time_batches(http, probe, shorts[: min(100, len(shorts))])
        for _ in range(args.retrieve_rounds):
            alone += retrieve_latencies(http, probe, 40)
            during += retrieve_during_bulk(server.url, probe, shorts)
    short_count, chunk_count = len(batch_texts), len(chunks)
    alone_p95 = latency_summary(alone)["p95_ms"]
    return {
        "engine": health.get("embedding_engine"),
        "texts": {
            "short": short_count,
            "short_tokens_mean": round(short_tokens, 1),
            "document_chars": len(document),
            "document_chunks": chunk_count,
            "chunk_tokens_mean": round(chunk_tokens, 1),
        },
        "rates": {
            "engine_short": rate(short_count, times["engine_short"]),
            "batch": rate(short_count, times["batch"]),
            "import": rate(short_count, times["import"]),
            "cli_startup_seconds": [round(wall, 2) for wall, _ in times["cli_startup"]],
            "engine_chunks": rate(chunk_count, times["engine_chunks"]),
            "document": rate(chunk_count, times["document"]),
        },
        "ratios": {
            "batch_over_engine": ratios(times["batch"], times["engine_short"]),
            "import_over_engine": ratios(times["import"], times["engine_short"]),
            "document_over_engine": ratios(times["document"], times["engine_chunks"]),
        },
        "retrieve": {
            "alone": latency_summary(alone),
            "during_bulk": latency_summary(during),
            "p95_ratio": round(latency_summary(during)["p95_ms"] / alone_p95, 2),
        },
        "load_average_at_end": load_average(),
    }


def report(result: dict[str, Any]) -> str:
    rates, shares, retrieve = result["rates"], result["ratios"], result["retrieve"]
    texts = result["texts"]
    lines = [
        f"texts: {texts['short']} short (~{texts['short_tokens_mean']} tokens), a document of "
        f"{texts['document_chars']:,} characters = {texts['document_chunks']} chunks "
        f"(~{texts['chunk_tokens_mean']} tokens)",
        "| path | texts/s (median) | rounds | share of the engine's rate (median; rounds) "
        "| engine's share of the CPU (median; rounds) |",
        "|---|---|---|---|---|",
    ]
    rows = (
        ("engine, short texts", "engine_short", None),
        ("POST /v1/memories/batch", "batch", "batch_over_engine"),
        ("hindsight import", "import", "import_over_engine"),
        ("engine, the document's chunks", "engine_chunks", None),
        ("POST /v1/documents (chunks/s)", "document", "document_over_engine"),
    )

    def median_and_rounds(share: dict[str, Any], prefix: str) -> str:
        rounds = ", ".join(f"{v:.2f}" for v in share[f"{prefix}rounds"])
        return f"{share[f'{prefix}median']:.2f} ({rounds})"

    for label, key, share in rows:
        part = rates[key]
        cells = ["", ""]
        if share is not None:
            cells = [median_and_rounds(shares[share], p) for p in ("", "cpu_")]
        lines.append(
            f"| {label} | {part['per_second']} | {', '.join(map(str, part['rounds']))} | "
            + " | ".join(cells)
            + " |"
        )
    lines.append(
        "the CLI's start-up (hindsight --help), which each import pays once: "
        + ", ".join(f"{s:.2f}" for s in rates["cli_startup_seconds"])
        + " s"
    )
    lines.append(
        f"retrieve p50/p95 alone {retrieve['alone']['p50_ms']:.0f}/"
        f"{retrieve['alone']['p95_ms']:.0f} ms "
        f"(n={retrieve['alone']['count']}), during a bulk import "
        f"{retrieve['during_bulk']['p50_ms']:.0f}/{retrieve['during_bulk']['p95_ms']:.0f} ms "
        f"(n={retrieve['during_bulk']['count']}): p95 ×{retrieve['p95_ratio']}"
    )
    met = [
        f"batch ≥ {TARGET:.0%} of the engine: {shares['batch_over_engine']['median'] >= TARGET}",
        f"document ≥ {TARGET:.0%}: {shares['document_over_engine']['median'] >= TARGET}",
        f"retrieve p95 during ≤ 2× alone: {retrieve['p95_ratio'] <= 2.0}",
    ]
    lines.append("targets: " + "; ".join(met))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--short", type=int, default=200, help="short memories per round")
    parser.add_argument("--document-chars", type=int, default=25_000)
    parser.add_argument("--retrieve-rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "ingest_throughput.json")
    args = parser.parse_args(argv)
    info = machine_info()
    print(machine_header(info), flush=True)
    flags = cpu_flags()
    print("CPU features:", " ".join(cpu_features(flags)) or "(none)", flush=True)
    print("CPU flags:", " ".join(sorted(flags)), flush=True)
    result = measure(args)
    print(report(result), flush=True)
    arguments = {key: str(value) for key, value in vars(args).items()}
    write_json(args.out, {"machine": info, "cpu_flags": sorted(flags), "args": arguments, **result})
    print(f"written to {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HINDSIGHT_LOG_LEVEL", "WARNING")
    raise SystemExit(main())
