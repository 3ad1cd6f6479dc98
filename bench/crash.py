"""Crash safety of the embedded product (#15): kill -9 ``hindsight serve`` mid-stores, N times.

    .venv/bin/python bench/crash.py --iterations 30

Client threads store single memories and batches over HTTP; the server is killed with
SIGKILL at a random moment, restarted on the same data directory, and checked
(``tests/concurrency/crash_loop.py``): every acknowledged write listed, read back by id and
found by a retrieve of its exact text; no batch half-applied; as many memories indexed as
stored. Between the kill and the restart ``hindsight check-index`` reads what the crash
left for the start to repair (a memory stored whose index write never happened); at the
end, after a graceful stop, it compares the ids of the whole store. Writes
bench/results/crash.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))  # tests.concurrency.crash_loop, the kill loop itself

from harness import RESULTS_DIR, machine_info, write_json  # noqa: E402

from tests.concurrency.crash_loop import (  # noqa: E402
    CrashableServer,
    Findings,
    Ledger,
    check_index,
    kill_mid_writes,
    verify,
)

WRITERS = 3  # client threads storing
SEED = 15
STARTUP_KILL_EVERY = 5  # every 5th iteration also kills the server once while it starts


class Tally:
    """Sums over the iterations."""

    def __init__(self) -> None:
        self.survived = 0
        self.lost: set[str] = set()
        self.unfindable: set[str] = set()
        self.half_applied: set[str] = set()
        self.count_disagreements = 0
        self.repairs_needed: list[int] = []  # per kill: what check-index found before restart
        self.orphans_after_kill = 0
        self.restart_seconds: list[float] = []
        self.kill_moments: list[float] = []
        self.retrieved = 0

    def add(self, findings: Findings) -> None:
        self.survived += findings.ok
        self.lost.update(findings.lost)
        self.unfindable.update(findings.unfindable)
        self.half_applied.update(findings.half_applied)
        self.count_disagreements += findings.index_disagrees
        self.retrieved += findings.retrieved


def restart(server: CrashableServer, tally: Tally, rng: random.Random, kill_on_start: bool) -> None:
    if kill_on_start:
        server.start()
        time.sleep(rng.uniform(0.3, 2.0))
        server.kill()
    server.start()
    tally.restart_seconds.append(server.wait_ready())


def inspect(server: CrashableServer, tally: Tally) -> None:
    """What the crash left: stored but not indexed (the start repairs it), indexed but gone."""
    _, report = check_index(server.data_dir)
    tally.repairs_needed.append(int(report["missing_count"]))
    tally.orphans_after_kill += int(report["orphan_count"])


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    rng = random.Random(SEED)
    server = CrashableServer(workdir / "data", workdir / "server.log")
    ledger, tally = Ledger(), Tally()
    began = time.monotonic()
    server.start()
    server.wait_ready()
    try:
        for iteration in range(1, args.iterations + 1):
            tally.kill_moments.append(kill_mid_writes(server, ledger, rng, WRITERS))
            inspect(server, tally)
            restart(server, tally, rng, iteration % STARTUP_KILL_EVERY == 0)
            findings = verify(server, ledger, rng, None)  # every acknowledged write retrieved
            tally.add(findings)
            print(
                f"kill {iteration:>3}: acknowledged {findings.acknowledged:>5} stored "
                f"{findings.stored:>5} indexed {findings.indexed:>5} lost {len(findings.lost)} "
                f"half-applied {len(findings.half_applied)} unfindable "
                f"{len(findings.unfindable)} repaired at start "
                f"{tally.repairs_needed[-1]}",
                flush=True,
            )
        server.stop()
        code, final = check_index(server.data_dir)
    finally:
        server.kill()
    sent = sum(len(contents) for _, contents in ledger.batches)
    return {
        "iterations": args.iterations,
        "iterations_survived": tally.survived,
        "writers": WRITERS,
        "seed": SEED,
        "writes_sent": sent,
        "batches_sent": len(ledger.batches),
        "acknowledged_writes": len(ledger.acked),
        "lost_writes": len(tally.lost),
        "half_applied_batches": len(tally.half_applied),
        "unfindable_writes": len(tally.unfindable),
        "retrieves_checked": tally.retrieved,
        "index_count_disagreements": tally.count_disagreements,
        "final_check_index": {"exit_code": code, **{k: final[k] for k in _FINAL_KEYS}},
        "unexpected_answers": ledger.unexpected[:20],
        "repaired_at_start": {
            "kills_leaving_unindexed_memories": sum(1 for n in tally.repairs_needed if n),
            "memories": sum(tally.repairs_needed),
            "orphans_after_kill": tally.orphans_after_kill,
        },
        "restart_seconds": _spread(tally.restart_seconds),
        "kill_after_seconds": _spread(tally.kill_moments),
        "wall_seconds": round(time.monotonic() - began, 1),
        "machine": machine_info(),
    }


_FINAL_KEYS = ("agrees", "stored", "searchable", "indexed", "missing_count", "extra_count")


def _spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "min": round(min(values), 2),
        "median": round(statistics.median(values), 2),
        "max": round(max(values), 2),
    }


def summary(result: dict[str, Any]) -> str:
    final = result["final_check_index"]
    lines = [
        f"iterations survived      : {result['iterations_survived']} / {result['iterations']}",
        f"acknowledged writes      : {result['acknowledged_writes']} "
        f"(of {result['writes_sent']} sent in {result['batches_sent']} requests)",
        f"lost writes              : {result['lost_writes']}",
        f"half-applied batches     : {result['half_applied_batches']}",
        f"unfindable by their text : {result['unfindable_writes']} "
        f"(of {result['retrieves_checked']} retrieved)",
        f"index disagreements      : {result['index_count_disagreements']} count mismatches "
        f"after restarts; final check-index agrees={final['agrees']} "
        f"(missing {final['missing_count']}, extra {final['extra_count']}, "
        f"{final['indexed']} indexed)",
        f"unexpected answers       : {len(result['unexpected_answers'])}",
        f"restart seconds          : {result['restart_seconds']}",
        f"wall seconds             : {result['wall_seconds']}",
    ]
    repaired = result["repaired_at_start"]
    lines.insert(
        6,
        f"left for the start       : {repaired['memories']} memories stored but unindexed "
        f"after {repaired['kills_leaving_unindexed_memories']} kills; "
        f"{repaired['orphans_after_kill']} orphans",
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30, help="kills mid-writes")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "crash.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hindsight-crash-") as tmp:
        result = run(args, Path(tmp))
    write_json(args.out, result)
    print(summary(result))
    print(f"written to {args.out}")
    clean = result["iterations_survived"] == result["iterations"]
    return 0 if clean and result["final_check_index"]["agrees"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
