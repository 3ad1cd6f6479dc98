"""Async stores (#42): how soon ``Prefer: respond-async`` answers a 100,000-character store,
and what the job costs against the same store answered when done.

A real ``hindsight serve`` process on a fresh data directory. Each round, interleaved:

- A: ``POST /v1/memories`` of 100,000 characters with ``Prefer: respond-async``: the time
  to its 202 (on a kept-alive connection, as an agent's client keeps one), then the job
  polled until it succeeded (the steps of progress it reported, the time until done) and
  a retrieve that finds it;
- B: the same kind of store (another text) without the header: the time to its 201.

Then ``--burst`` async stores sent back to back (each 202 timed while the jobs before it
run) and the time until all are done. Prints the 202 times (median, max), the job's time
against the synchronous store's (their ratio, one run, the same machine), the CPU and
its flags; writes bench/results/async_store.json.

    nice -n 5 .venv/bin/python bench/async_store.py --rounds 3 --burst 4
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))  # tests.concurrency.crash_loop: the server process

from harness import RESULTS_DIR, machine_header, machine_info, write_json  # noqa: E402

from tests.concurrency.crash_loop import CrashableServer  # noqa: E402
from tests.e2e.test_async_jobs import ASYNC, LONG_CHARS, long_text  # noqa: E402

USER = "bench-async"


def cpu_flags() -> list[str]:
    text = Path("/proc/cpuinfo").read_text()
    return sorted(set(re.findall(r"\b(avx512_vnni|amx_int8|avx2|avx_vnni)\b", text)))


def timed_post(http: httpx.Client, body: dict[str, Any], headers: dict[str, str]) -> Any:
    started = time.perf_counter()
    reply = http.post("/v1/memories", json=body, headers=headers)
    return reply, time.perf_counter() - started


def follow(http: httpx.Client, location: str) -> tuple[dict[str, Any], int, float]:
    """The finished job, how many distinct progress steps it showed, seconds to done."""
    started = time.perf_counter()
    steps: set[int] = set()
    while True:
        job = http.get(location).json()
        if job["state"] == "running":
            steps.add(int(job["progress"]["done"]))
        if job["state"] in {"succeeded", "failed"}:
            return job, len(steps), time.perf_counter() - started
        time.sleep(0.05)


def one_round(http: httpx.Client, number: int) -> dict[str, Any]:
    body = {"user_id": USER, "content": long_text(f"roundasync{number}", seed=100 + number)}
    reply, answered = timed_post(http, body, ASYNC)
    assert reply.status_code == 202, reply.text
    job, steps, until_done = follow(http, reply.headers["Location"])
    assert job["state"] == "succeeded", job
    found = http.post("/v1/retrieve", json={"user_id": USER, "query": f"roundasync{number}"})
    searchable = job["result"]["memory_id"] in [r["memory_id"] for r in found.json()["results"]]
    plain = {"user_id": USER, "content": long_text(f"roundsync{number}", seed=200 + number)}
    reply, synchronous = timed_post(http, plain, {})
    assert reply.status_code == 201, reply.text
    return {
        "accepted_ms": round(answered * 1000, 1),
        "job_seconds": round(answered + until_done, 2),
        "progress_steps": steps,
        "chunks": job["progress"]["total"],
        "searchable": searchable,
        "sync_seconds": round(synchronous, 2),
    }


def burst(http: httpx.Client, count: int) -> dict[str, Any]:
    accepted: list[float] = []
    locations: list[str] = []
    started = time.perf_counter()
    for number in range(count):
        body = {"user_id": USER, "content": long_text(f"burst{number}", seed=300 + number)}
        reply, seconds = timed_post(http, body, ASYNC)
        assert reply.status_code == 202, reply.text
        accepted.append(seconds * 1000)
        locations.append(reply.headers["Location"])
    for location in locations:
        job, _, _ = follow(http, location)
        assert job["state"] == "succeeded", job
    return {
        "accepted_ms": [round(ms, 1) for ms in accepted],
        "all_done_seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burst", type=int, default=4)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "async_store.json")
    args = parser.parse_args(argv)
    info = machine_info()
    print(machine_header(info))
    print(f"CPU flags: {' '.join(cpu_flags())}")
    with tempfile.TemporaryDirectory(prefix="hindsight-async-") as tmp:
        server = CrashableServer(Path(tmp) / "data", Path(tmp) / "server.log")
        server.start()
        server.wait_ready()
        try:
            with httpx.Client(base_url=server.url, timeout=600) as http:
                http.post("/v1/memories", json={"user_id": USER, "content": "warm up"})
                rounds = [one_round(http, n) for n in range(args.rounds)]
                bursts = burst(http, args.burst) if args.burst else {}
        finally:
            server.stop()
    accepted = [r["accepted_ms"] for r in rounds] + bursts.get("accepted_ms", [])
    ratio = statistics.median(r["job_seconds"] / r["sync_seconds"] for r in rounds)
    print(f"{LONG_CHARS:,}-character store, {len(rounds)} interleaved rounds")
    for r in rounds:
        print(
            f"  202 in {r['accepted_ms']:.1f} ms; job done in {r['job_seconds']:.1f} s "
            f"({r['chunks']} chunks, {r['progress_steps']} progress steps seen, "
            f"searchable={r['searchable']}); synchronous store {r['sync_seconds']:.1f} s"
        )
    print(
        f"202 answer: median {statistics.median(accepted):.1f} ms, max {max(accepted):.1f} ms "
        f"over {len(accepted)} async stores (target <= 200 ms)"
    )
    print(f"job time / synchronous store time: median {ratio:.2f}")
    if bursts:
        print(f"burst of {args.burst}: all done in {bursts['all_done_seconds']} s")
    write_json(
        args.out,
        {
            "machine": info,
            "cpu_flags": cpu_flags(),
            "characters": LONG_CHARS,
            "rounds": rounds,
            "burst": bursts,
            "accepted_ms_median": statistics.median(accepted),
            "accepted_ms_max": max(accepted),
            "job_over_sync_median": round(ratio, 3),
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
