"""Load: C clients × N operations of a realistic mix against a local server it starts;
docs/benchmarks.md gives the figures.

    .venv/bin/python bench/load.py                    # 1 and 16 clients, 40 operations each
    .venv/bin/python bench/load.py --server gateway   # the template-driven gateway, to compare

For each client count, from scratch: a fresh data directory and server process, a seed of
memories (not timed), C threads (one HTTP connection each) running N operations of
``MIX`` on users they share, every acknowledged store read back by id (one that cannot be
read is lost), SIGTERM (the server must exit 0). Targets (``targets``), when 1 and 16
clients both ran: 16 clients ≥ 1.7× one's throughput, 0 errors, 0 lost, retrieve p95 ≤ 4×
its single-client p95. Writes bench/results/load.json and load.md (``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from datasets.tables import load_tables
from harness import (
    RESULTS_DIR,
    free_port,
    latency_summary,
    load_average,
    machine_header,
    machine_info,
    markdown_table,
    proc_status_mb,
    stop_process,
    write_json,
)
from synthetic import generate_memories, generate_queries

MIX: dict[str, int] = {
    "store_short": 28,
    "store_long": 4,
    "store_batch": 8,
    "retrieve": 30,
    "context": 10,
    "list": 12,
    "get": 4,
    "reflect": 4,
}
BATCH_ITEMS = 10
REFLECT_RETRIES = 3
SEED_PER_USER = 30
USERS = 8  # shared by the clients, as agents share the people they work for
SERVE_THREADS = 8  # hindsight serve --threads
CATEGORIES = ["preference", "constraint", "event", "plan", "fact", "task"]
# long pastes (meeting notes, release notes, a plan, a ticket) for store_long, zh and en;
# each is kept in the table as its lines
LONG_PARAGRAPHS = ["".join(lines) for lines in load_tables("load")["LONG_PARAGRAPHS"]]


# --- the operations --------------------------------------------------------------------------
@dataclass
class Outcome:
    operation: str
    status: int | str  # HTTP status, or the transport error's name
    seconds: float
    acknowledged: list[str] = field(default_factory=list)
    retries: int = 0  # 409s of a reflection that found another one of its user running


@dataclass
class Client:
    """One agent: its HTTP connection and the randomness of its choices."""

    http: httpx.Client
    rng: random.Random
    users: list[str]
    texts: list[tuple[str, str]]
    queries: list[str]
    known_ids: list[str]

    def user(self) -> str:
        return self.rng.choice(self.users)

    def short_item(self) -> dict[str, Any]:
        text, category = self.rng.choice(self.texts)
        # unique per store, so the dedup window keeps every one (a duplicate is its own test)
        return {"content": f"{text} #{uuid.uuid4().hex[:8]}", "category": category}

    def long_item(self) -> dict[str, Any]:
        paragraphs = []
        while sum(len(p) for p in paragraphs) < self.rng.randint(3000, 6000):
            paragraphs.append(self.rng.choice(LONG_PARAGRAPHS))
        return {"content": "\n\n".join(paragraphs) + f"\n\n({uuid.uuid4().hex[:8]})"}

    def retrieve_body(self, user: str) -> dict[str, Any]:
        body: dict[str, Any] = {"user_id": user, "query": self.rng.choice(self.queries)}
        choice = self.rng.randrange(4)
        if choice == 0:
            body["categories"] = self.rng.sample(CATEGORIES, 2)
        elif choice == 1:
            body["kinds"] = ["episodic"]
            body["top_k"] = 5
        elif choice == 2:
            since = datetime.now(UTC) - timedelta(days=1)
            body["since"] = since.isoformat().replace("+00:00", "Z")
        else:
            body["session_id"] = f"session-{self.rng.randrange(4)}"
        return body


def _ids(reply: httpx.Response) -> list[str]:
    body = reply.json()
    results = body.get("results") if "results" in body else [body]
    return [r["memory_id"] for r in results if r.get("memory_id")]


@dataclass
class PlannedRequest:
    """One operation's HTTP request, built before it is sent (so that it can be resent)."""

    method: str
    path: str
    body: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    stores: bool = False

    def send(self, http: httpx.Client, headers: dict[str, str] | None = None) -> httpx.Response:
        return http.request(
            self.method, self.path, json=self.body, params=self.params, headers=headers
        )


def plan_request(client: Client, operation: str, user: str) -> PlannedRequest:
    """The request of one operation for ``user`` (whether it stores: ``stores``)."""
    session = f"session-{client.rng.randrange(4)}"
    if operation == "store_short":
        body = {"user_id": user, "session_id": session, **client.short_item()}
        return PlannedRequest("POST", "/v1/memories", body, stores=True)
    if operation == "store_long":
        body = {"user_id": user, "session_id": session, **client.long_item()}
        return PlannedRequest("POST", "/v1/memories", body, stores=True)
    if operation == "store_batch":
        items = [client.short_item() for _ in range(BATCH_ITEMS)]
        body = {"user_id": user, "items": items}
        return PlannedRequest("POST", "/v1/memories/batch", body, stores=True)
    if operation == "retrieve":
        return PlannedRequest("POST", "/v1/retrieve", client.retrieve_body(user))
    if operation == "context":
        body = {"user_id": user, "session_id": session, "query": client.rng.choice(client.queries)}
        return PlannedRequest("POST", "/v1/context", body)
    if operation == "list":
        return PlannedRequest("GET", f"/v1/users/{user}/memories", params={"limit": 20})
    if operation == "get" and client.known_ids:
        return PlannedRequest("GET", f"/v1/memories/{client.rng.choice(client.known_ids)}")
    return PlannedRequest("POST", "/v1/reflect", {"user_id": user})


def run_operation(client: Client, operation: str) -> Outcome:
    """One operation, timed. A reflection answered 409 (another reflection of its user is
    running: "retry when it has finished") is retried after a pause, as its message asks;
    the retries are counted, the time includes them."""
    user = client.user()
    started = time.perf_counter()
    retries = 0
    try:
        while True:  # a retry plans its request afresh
            planned = plan_request(client, operation, user)
            reply = planned.send(client.http)
            if operation != "reflect" or reply.status_code != 409 or retries == REFLECT_RETRIES:
                break
            retries += 1
            time.sleep(1.0)
    except httpx.HTTPError as error:
        return Outcome(operation, type(error).__name__, time.perf_counter() - started)
    elapsed = time.perf_counter() - started
    acknowledged = _ids(reply) if planned.stores and reply.status_code in (200, 201) else []
    client.known_ids.extend(acknowledged)
    return Outcome(operation, reply.status_code, elapsed, acknowledged, retries)


# --- the server --------------------------------------------------------------------------------
@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def stop(self) -> int:
        """SIGTERM (the server must exit 0), SIGKILL after 5 minutes; its exit code."""
        return stop_process(self.process, grace=300)


def hindsight_cli() -> list[str]:
    """The command that runs this environment's ``hindsight`` CLI."""
    script = Path(sys.executable).with_name("hindsight")
    return [str(script)] if script.exists() else [sys.executable, "-m", "hindsight.cli"]


def start_server(
    kind: str, data_dir: Path, threads: int, write_threads: int | None, port: int | None = None
) -> Server:
    """``hindsight serve`` on ``port`` (default: a free one); its output is appended to
    ``<data dir>.log``."""
    port = port or free_port()
    command = [*hindsight_cli(), "serve", "--data-dir", str(data_dir), "--port", str(port)]
    if kind == "gateway":
        command += ["--gateway"]
    else:
        command += ["--threads", str(threads)]
        command += ["--write-threads", str(write_threads)] if write_threads else []
    log = data_dir.parent / f"{data_dir.name}.log"
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}; see {log}")
        try:
            if httpx.get(f"{url}/v1/health", timeout=5).status_code == 200:
                return Server(process, url, log)
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"the server did not answer within 600 s; see {log}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def seed(url: str, users: list[str], texts: list[tuple[str, str]]) -> list[str]:
    """SEED_PER_USER short memories per user, through the batch route (not timed)."""
    ids: list[str] = []
    with httpx.Client(base_url=url, timeout=600) as http:
        for number, user in enumerate(users):
            chosen = texts[number * SEED_PER_USER : (number + 1) * SEED_PER_USER]
            items = [{"content": t, "category": c, "session_id": "session-0"} for t, c in chosen]
            reply = http.post("/v1/memories/batch", json={"user_id": user, "items": items})
            reply.raise_for_status()
            ids += _ids(reply)
    return ids


def read_back(url: str, ids: list[str]) -> list[str]:
    """The acknowledged ids that cannot be read (lost writes)."""

    def missing(memory_id: str) -> str | None:
        reply = http.get(f"/v1/memories/{memory_id}")
        return None if reply.status_code == 200 else memory_id

    with httpx.Client(base_url=url, timeout=120) as http, ThreadPoolExecutor(4) as pool:
        return [m for m in pool.map(missing, sorted(set(ids))) if m is not None]


# --- one run -----------------------------------------------------------------------------------
def plan(rng: random.Random, count: int) -> list[str]:
    """``count`` operations in the mix's proportions (largest remainders), shuffled: every
    client runs the same mix, so 1 and 16 clients do comparable work per operation."""
    total = sum(MIX.values())
    shares = {name: count * weight / total for name, weight in MIX.items()}
    counts = {name: int(share) for name, share in shares.items()}
    by_remainder = sorted(MIX, key=lambda name: shares[name] - counts[name], reverse=True)
    for name in by_remainder[: count - sum(counts.values())]:
        counts[name] += 1
    operations = [name for name, n in counts.items() for _ in range(n)]
    rng.shuffle(operations)
    return operations


def drive(
    url: str, clients: int, operations: int, users: list[str], known: list[str], seed_value: int
) -> tuple[list[Outcome], float]:
    """C agents, each running its N operations; every outcome and the wall time."""
    texts = generate_memories(2000, seed=seed_value + 1)
    queries = generate_queries(200, seed=seed_value + 2)
    outcomes: list[Outcome] = []
    lock = threading.Lock()

    def agent(number: int) -> None:
        rng = random.Random(seed_value * 1000 + number)
        with httpx.Client(base_url=url, timeout=600) as http:
            client = Client(http, rng, users, texts, queries, list(known))
            mine = [run_operation(client, op) for op in plan(rng, operations)]
        with lock:
            outcomes.extend(mine)

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(agent, range(clients)))
    return outcomes, time.perf_counter() - started


def summarise(outcomes: list[Outcome], wall: float) -> dict[str, Any]:
    by_operation: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_operation[outcome.operation].append(outcome)
    errors: dict[str, dict[str, int]] = {}
    for name, items in by_operation.items():
        failed = Counter(
            str(o.status) for o in items if not isinstance(o.status, int) or o.status >= 400
        )
        if failed:
            errors[name] = dict(failed)
    return {
        "operations": len(outcomes),
        "seconds": round(wall, 2),
        "throughput_per_s": round(len(outcomes) / wall, 2),
        "latency": {
            name: latency_summary([o.seconds for o in items])
            for name, items in sorted(by_operation.items())
        },
        "errors": errors,
        "error_count": sum(sum(e.values()) for e in errors.values()),
        "reflect_conflicts_retried": sum(o.retries for o in outcomes),
    }


def run(kind: str, clients: int, operations: int, args: argparse.Namespace) -> dict[str, Any]:
    data_dir = Path(args.workdir) / f"{kind}-{clients}c"
    load_before = load_average()
    print(f"\n{clients} client(s) × {operations} operations against {kind} ...", flush=True)
    server = start_server(kind, data_dir, SERVE_THREADS, None)
    try:
        model = httpx.get(f"{server.url}/v1/health", timeout=60).json()["embedding_model"]
        users = [f"load-user-{i}" for i in range(USERS)]
        seeded = seed(server.url, users, generate_memories(SEED_PER_USER * len(users), seed=7))
        cpu_before = cpu_seconds(server.process.pid)
        outcomes, wall = drive(server.url, clients, operations, users, seeded, clients)
        cpu = cpu_seconds(server.process.pid) - cpu_before
        acknowledged = [i for o in outcomes for i in o.acknowledged]
        lost = read_back(server.url, seeded + acknowledged)
        memory = proc_status_mb(server.process.pid)
    finally:
        exit_code = server.stop()
    result = {
        "server": kind,
        "clients": clients,
        "operations_per_client": operations,
        "threads": SERVE_THREADS if kind == "serve" else 1,
        "write_threads": None if kind == "serve" else 1,  # None: serve's default
        "embedding_model": model,
        "embedder_setting": os.environ.get("HINDSIGHT_EMBEDDER", "(default)"),
        **summarise(outcomes, wall),
        "acknowledged_writes": len(set(acknowledged)) + len(set(seeded)),
        "lost_writes": len(lost),
        "lost_ids": lost[:20],
        "server_exit_code": exit_code,
        "server_rss_mb": memory.get("VmRSS"),
        # how busy the server kept the machine's cores while the clients ran
        "server_cpu_seconds": round(cpu, 1),
        "server_cores_busy": round(cpu / wall, 2),
        "load_average_before": load_before,
        "load_average_after": load_average(),
    }
    print(report(result), flush=True)
    return result


# --- output -------------------------------------------------------------------------------------
def report(result: dict[str, Any]) -> str:
    rows = [
        [name, s["count"], s["p50_ms"], s["p95_ms"], s["p99_ms"]]
        for name, s in result["latency"].items()
    ]
    lines = [
        f"{result['clients']} client(s), {result['server']} ({result['embedding_model']}, "
        f"threads {result['threads']}/{result['write_threads'] or 'default'}): "
        f"{result['operations']} operations "
        f"in {result['seconds']} s = {result['throughput_per_s']} ops/s; errors "
        f"{result['errors'] or 0} (reflections retried after 409: "
        f"{result['reflect_conflicts_retried']}); lost writes {result['lost_writes']} of "
        f"{result['acknowledged_writes']}; server exit {result['server_exit_code']}; "
        f"server CPU {result['server_cpu_seconds']} s ({result['server_cores_busy']} cores "
        "busy on average); "
        f"load average {result['load_average_before']} → {result['load_average_after']}",
        markdown_table(["operation", "count", "p50 ms", "p95 ms", "p99 ms"], rows),
    ]
    return "\n".join(lines)


def targets(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    by_clients = {r["clients"]: r for r in results}
    if 1 not in by_clients or 16 not in by_clients:
        return None
    one, many = by_clients[1], by_clients[16]
    speedup = many["throughput_per_s"] / one["throughput_per_s"]
    p95_ratio = many["latency"]["retrieve"]["p95_ms"] / one["latency"]["retrieve"]["p95_ms"]
    return {
        "throughput_16_over_1": round(speedup, 2),
        "throughput_target_met": speedup >= 1.7,
        "errors": one["error_count"] + many["error_count"],
        "lost_writes": one["lost_writes"] + many["lost_writes"],
        "retrieve_p95_16_over_1": round(p95_ratio, 2),
        "retrieve_p95_target_met": p95_ratio <= 4.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--operations", type=int, default=40, help="per client")
    parser.add_argument("--server", choices=["serve", "gateway"], default="serve")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "load.json")
    args = parser.parse_args(argv)
    info = machine_info()
    print(machine_header(info), flush=True)
    with tempfile.TemporaryDirectory(prefix="hindsight-load-") as tmp:
        args.workdir = tmp
        results = [run(args.server, clients, args.operations, args) for clients in args.clients]
    checked = targets(results)
    if checked is not None:
        print(f"\ntargets: {checked}", flush=True)
    document = {"machine": info, "mix": MIX, "runs": results, "targets": checked}
    write_json(args.out, document)
    markdown = "\n\n".join([machine_header(info), *(report(r) for r in results)])
    if checked is not None:
        markdown += f"\n\ntargets: {checked}"
    args.out.with_suffix(".md").write_text(markdown + "\n", encoding="utf-8")
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
