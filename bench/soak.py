"""Soak with faults: the mixed load of ``load.py`` while the server is killed and restarted
(and, on the AWS backend, OpenSearch is stopped and started), then every acknowledged
write is read back and the search index is checked against the record store.

    .venv/bin/python bench/soak.py                        # embedded, 3 minutes
    .venv/bin/python bench/soak.py --minutes 1 --kills 2
    .venv/bin/python bench/soak.py --backend aws          # DynamoDB on moto + its own OpenSearch

Bounded and loopback only: ``hindsight serve`` on a free 127.0.0.1 port over a fresh data
directory, seeded like load.py; C clients (threads, one HTTP connection each) run load.py's
operations in its mix until the time is up. Every few seconds (``--kill-every``) the server
is killed (SIGKILL, the second time SIGTERM, which must exit 0) and restarted on the same
port and data directory. With ``--backend aws`` the server serves DynamoDB on the shared
moto (:5055; a table, bucket and index of the soak's own) and an OpenSearch node the soak
starts itself on free ports with its own data directory (the shared :9200 node is never
touched), which is stopped and started between the server's restarts; a DynamoDB stream
pump in this process hands the table's stream to ``functions/indexer`` as Lambda would.

Clients retry what a fault causes (a refused or dropped connection, 502/503/504, a 409
"still running / retry in a moment" for at most 30 s) with backoff, for at most
``--patience`` seconds per operation; a store carries an ``Idempotency-Key`` kept across
its retries, and counts as acknowledged only when it was answered 2xx. At the end: every
acknowledged id is read back by GET (not 200: a lost write), and the index is checked
against the record store by ``hindsight check-index`` (embedded: on the stopped server's
data directory, without the repair a start runs; aws: DynamoDB against OpenSearch once the
stream is drained).

Printed (``report``) and written to bench/results/soak.json, which keeps the last run of
each backend. Exit 1 on any lost write or disagreement, or a SIGTERM that did not exit 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from harness import RESULTS_DIR, free_port, load_average, machine_header, machine_info
from harness import write_json as write_result
from load import (
    SEED_PER_USER,
    Client,
    Outcome,
    Server,
    _ids,
    plan,
    plan_request,
    read_back,
    seed,
    start_server,
    summarise,
)
from soak_aws import SoakOpenSearch, StreamPump, aws_environment, drop_aws_resources
from synthetic import generate_memories, generate_queries

RETRIED_STATUSES = frozenset({409, 502, 503, 504})
CONFLICT_PATIENCE_S = 30.0  # a 409 ("still running, retry in a moment"): retried this long


# --- the clients -----------------------------------------------------------------------------
@dataclass
class Tally:
    """What the clients saw, shared by their threads."""

    outcomes: list[Outcome] = field(default_factory=list)
    retries: Counter[str] = field(default_factory=Counter)  # by cause: status or error name
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, outcome: Outcome, causes: list[str]) -> None:
        with self.lock:
            self.outcomes.append(outcome)
            self.retries.update(causes)


def run_with_retries(client: Client, operation: str, patience: float) -> tuple[Outcome, list[str]]:
    """One operation, resent (same body, same Idempotency-Key) while a fault answers it."""
    planned = plan_request(client, operation, client.user())
    headers = {"Idempotency-Key": uuid.uuid4().hex} if planned.stores else None
    started = time.perf_counter()
    causes: list[str] = []
    first_conflict: float | None = None  # 409s are given 30 s from the first one
    while True:
        try:  # the status, or the name of the transport error that stood for one
            reply: httpx.Response | None = planned.send(client.http, headers)
            status: int | str = reply.status_code
        except httpx.TransportError as error:
            reply, status = None, type(error).__name__
        now = time.perf_counter()
        if status == 409 and first_conflict is None:
            first_conflict = now
        retry = isinstance(status, str) or status in RETRIED_STATUSES
        conflict_s = 0.0 if first_conflict is None else now - first_conflict
        conflicted_too_long = conflict_s > CONFLICT_PATIENCE_S
        if not retry or now - started > patience or conflicted_too_long:
            break
        causes.append(str(status))
        time.sleep(min(0.2 * 2 ** min(len(causes), 4), 3.0))
    elapsed = time.perf_counter() - started
    acknowledged = _ids(reply) if planned.stores and isinstance(status, int) else []
    if not (isinstance(status, int) and 200 <= status < 300):
        acknowledged = []
    client.known_ids.extend(acknowledged)
    return Outcome(operation, status, elapsed, acknowledged, len(causes)), causes


def client_loop(client: Client, until: float, patience: float, tally: Tally) -> None:
    """Operations in load.py's mix, in rounds of 100, until the time is up."""
    while time.monotonic() < until:
        for operation in plan(client.rng, 100):
            if time.monotonic() >= until:
                return
            tally.add(*run_with_retries(client, operation, patience))


# --- the faults --------------------------------------------------------------------------------
@dataclass
class Faults:
    """The server (and node) under test and what was done to them."""

    args: argparse.Namespace
    data_dir: Path
    port: int
    server: Server
    opensearch: SoakOpenSearch | None = None
    kills: Counter[str] = field(default_factory=Counter)
    restarts: int = 0
    restart_seconds: list[float] = field(default_factory=list)
    sigterm_exit_codes: list[int] = field(default_factory=list)
    opensearch_stops: int = 0
    opensearch_start_seconds: list[float] = field(default_factory=list)

    def restart_server(self) -> None:
        sig = signal.SIGTERM if sum(self.kills.values()) == 1 else signal.SIGKILL
        name = signal.Signals(sig).name
        began = time.monotonic()
        self.server.process.send_signal(sig)
        code = self.server.process.wait(timeout=300)
        if sig == signal.SIGTERM:
            self.sigterm_exit_codes.append(code)
        self.kills[name] += 1
        self.server = start_server("serve", self.data_dir, self.args.threads, None, port=self.port)
        self.restarts += 1
        self.restart_seconds.append(round(time.monotonic() - began, 1))
        print(f"  {name} → back in {self.restart_seconds[-1]} s (exit {code})", flush=True)

    def bounce_opensearch(self, rng: random.Random) -> None:
        assert self.opensearch is not None
        sig = signal.SIGKILL if self.opensearch_stops % 2 else signal.SIGTERM
        self.opensearch.stop(sig)
        self.opensearch_stops += 1
        down = rng.uniform(*self.args.opensearch_down)
        print(f"  OpenSearch stopped ({signal.Signals(sig).name}) for {down:.0f} s", flush=True)
        time.sleep(down)
        seconds = self.opensearch.start()
        self.opensearch_start_seconds.append(round(seconds, 1))
        print(f"  OpenSearch back in {seconds:.0f} s", flush=True)

    def run(self, until: float, rng: random.Random) -> None:
        """Faults at random intervals until ``until`` (and at most ``--kills`` kills);
        with a node of its own, every other fault stops OpenSearch instead."""
        turn = 0
        while True:
            pause = rng.uniform(*self.args.kill_every)
            if time.monotonic() + pause >= until:
                return
            time.sleep(pause)
            bounce_node = self.opensearch is not None and turn % 2 == 1
            if bounce_node:
                self.bounce_opensearch(rng)
            elif self.args.kills is None or sum(self.kills.values()) < self.args.kills:
                self.restart_server()
            turn += 1


# --- the checks at the end --------------------------------------------------------------------
def check_index_cli(data_dir: Path) -> dict[str, Any]:
    """``hindsight check-index`` over the stopped server's store: its JSON and exit code."""
    script = Path(sys.executable).with_name("hindsight")
    done = subprocess.run(
        [str(script), "--data-dir", str(data_dir), "check-index"],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        report = {"stdout": done.stdout[-2000:], "stderr": done.stderr[-2000:]}
    return {"method": "hindsight check-index", "exit_code": done.returncode, "report": report}


# --- one soak -----------------------------------------------------------------------------------
def start_clients(url: str, args: argparse.Namespace, users: list[str], known: list[str]) -> Any:
    texts = generate_memories(2000, seed=args.seed + 1)
    queries = generate_queries(200, seed=args.seed + 2)
    tally = Tally()
    until = time.monotonic() + args.minutes * 60

    def agent(number: int) -> None:
        rng = random.Random(args.seed * 1000 + number)
        with httpx.Client(base_url=url, timeout=args.patience) as http:
            client = Client(http, rng, users, texts, queries, list(known))
            client_loop(client, until, args.patience, tally)

    pool = ThreadPoolExecutor(args.clients)
    futures = [pool.submit(agent, n) for n in range(args.clients)]
    return pool, futures, tally, until


def soak(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    data_dir = workdir / "data"
    opensearch = pump = None
    if args.backend == "aws":
        opensearch = SoakOpenSearch(workdir / "opensearch")
        print(f"starting an OpenSearch node of the soak's own on {opensearch.url} ...", flush=True)
        opensearch.start()
        os.environ.update(aws_environment(opensearch.url))
    port = free_port()
    server = start_server("serve", data_dir, args.threads, None, port=port)
    faults = Faults(args, data_dir, port, server, opensearch)
    try:
        if args.backend == "aws":
            pump = StreamPump(os.environ["HINDSIGHT_TABLE"])
            pump.start()
        return run_soak(args, faults, pump)
    finally:
        if faults.server.process.poll() is None:
            faults.server.stop()
        if opensearch is not None:
            opensearch.stop()
            drop_aws_resources(os.environ["HINDSIGHT_TABLE"])


def run_soak(args: argparse.Namespace, faults: Faults, pump: StreamPump | None) -> dict[str, Any]:
    users = [f"soak-user-{i}" for i in range(args.users)]
    url = faults.server.url
    seeded = seed(url, users, generate_memories(SEED_PER_USER * len(users), seed=7))
    began = time.monotonic()
    pool, futures, tally, until = start_clients(url, args, users, seeded)
    print(f"{args.clients} clients for {args.minutes} min against {url} ...", flush=True)
    faults.run(until, random.Random(args.seed))
    for future in futures:
        future.result()
    pool.shutdown()
    duration = time.monotonic() - began
    acknowledged = sorted({i for o in tally.outcomes for i in o.acknowledged} | set(seeded))
    drained = pump.drain() if pump is not None else None
    lost = read_back(faults.server.url, acknowledged)
    exit_code = faults.server.stop()
    index = check_index_cli(faults.data_dir)
    summary = summarise(tally.outcomes, duration)
    operations = Counter(o.operation for o in tally.outcomes)
    errors = Counter(
        str(o.status) for o in tally.outcomes if not isinstance(o.status, int) or o.status >= 400
    )
    return {
        "backend": args.backend,
        "minutes_asked": args.minutes,
        "duration_s": round(duration, 1),
        "clients": args.clients,
        "users": args.users,
        "operations": summary["operations"],
        "operations_by_type": dict(sorted(operations.items())),
        "throughput_per_s": summary["throughput_per_s"],
        "errors_by_status": dict(errors),
        "errors_by_operation": summary["errors"],
        "retries_by_cause": dict(tally.retries),
        "kills": dict(faults.kills),
        "restarts": faults.restarts,
        "restart_seconds": faults.restart_seconds,
        "sigterm_exit_codes": faults.sigterm_exit_codes,
        "opensearch_stops": faults.opensearch_stops,
        "opensearch_start_seconds": faults.opensearch_start_seconds,
        "stream_drained": drained,
        "acknowledged_writes": len(acknowledged),
        "lost_writes": len(lost),
        "lost_ids": lost[:20],
        "index_check": index,
        "index_disagreements": disagreements(index),
        "final_server_exit_code": exit_code,
        "load_average_after": load_average(),
    }


def disagreements(index: dict[str, Any]) -> int:
    """Memories stored but not indexed plus documents indexed but not stored."""
    report = index.get("report", {})
    if "missing_count" in report:
        return int(report["missing_count"]) + int(report["extra_count"])
    return 0 if index.get("exit_code") == 0 else 1  # no report: count the failure


def report(result: dict[str, Any]) -> str:
    r = result
    return "\n".join(
        [
            f"soak ({r['backend']}): {r['duration_s']} s, {r['clients']} clients, "
            f"{r['operations']} operations ({r['throughput_per_s']}/s)",
            f"  operations by type: {r['operations_by_type']}",
            f"  errors by status (after retries): {r['errors_by_status'] or 0}",
            f"  retries by cause: {r['retries_by_cause'] or 0}",
            f"  kills: {r['kills'] or 0}, restarts: {r['restarts']} "
            f"(back in {r['restart_seconds']} s), SIGTERM exit codes {r['sigterm_exit_codes']}",
            f"  OpenSearch stops: {r['opensearch_stops']} (back in "
            f"{r['opensearch_start_seconds']} s), stream drained: {r['stream_drained']}",
            f"  acknowledged writes: {r['acknowledged_writes']}, lost writes: {r['lost_writes']}",
            f"  index disagreements: {r['index_disagreements']} ({r['index_check'].get('method')})",
            f"  final server exit code: {r['final_server_exit_code']}",
        ]
    )


def failed(result: dict[str, Any]) -> bool:
    graceful = all(code == 0 for code in result["sigterm_exit_codes"])
    return bool(
        result["lost_writes"]
        or result["index_disagreements"]
        or not graceful
        or result["final_server_exit_code"] != 0
        or result["stream_drained"] is False
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="how long the load runs")
    parser.add_argument("--backend", choices=["embedded", "aws"], default="embedded")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--threads", type=int, default=8, help="hindsight serve --threads")
    parser.add_argument(
        "--kill-every", type=float, nargs=2, default=[15.0, 35.0], metavar=("MIN", "MAX"),
        help="seconds between faults, drawn uniformly",
    )  # fmt: skip
    parser.add_argument("--kills", type=int, default=None, help="at most this many kills")
    parser.add_argument(
        "--opensearch-down", type=float, nargs=2, default=[5.0, 15.0], metavar=("MIN", "MAX"),
        help="--backend aws: seconds OpenSearch stays stopped",
    )  # fmt: skip
    parser.add_argument("--patience", type=float, default=120.0, help="retrying, per operation")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "soak.json")
    args = parser.parse_args(argv)
    info = machine_info()
    print(machine_header(info), flush=True)
    with tempfile.TemporaryDirectory(prefix="hindsight-soak-") as tmp:
        result = soak(args, Path(tmp))
    print(report(result), flush=True)
    # one entry per backend: a run replaces its own backend's last result only
    runs = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    runs = {k: v for k, v in runs.items() if k in ("embedded", "aws")}
    write_result(args.out, {**runs, args.backend: {"machine": info, **result}})
    print(f"wrote {args.out}", flush=True)
    return 1 if failed(result) else 0


if __name__ == "__main__":
    raise SystemExit(main())
