"""Kill -9 ``hindsight serve`` in the middle of batch and single stores, again and again
(issue #15): after each restart on the same data directory every acknowledged write is
there and found by its text, no batch is half-applied, and the search index holds as many
memories as the record store; after the last one the server is killed once more while it
starts again (loading the model and the index, repairing the index); at the end
``hindsight check-index`` finds the two in agreement id for id. ``crash_loop.py`` is the
machinery; ``bench/crash.py`` runs it longer.

Bounded by count and time: ``KILLS`` kills, none started after ``TIME_CAP`` seconds.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.concurrency.crash_loop import (
    CrashableServer,
    Findings,
    Ledger,
    check_index,
    kill_mid_writes,
    verify,
)

KILLS = 3
TIME_CAP = 40.0  # seconds after which no further kill starts
RETRIEVE_SAMPLE = 10  # acknowledged writes retrieved by their text after each restart


def explain(findings: Findings, server: CrashableServer) -> str:
    return (
        f"lost={findings.lost[:10]} unfindable={findings.unfindable[:10]} "
        f"half_applied={findings.half_applied[:10]} stored={findings.stored} "
        f"indexed={findings.indexed}\nserver log:\n{server.log_tail()}"
    )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[CrashableServer]:
    served = CrashableServer(tmp_path / "data", tmp_path / "server.log")
    yield served
    served.kill()


def test_acknowledged_writes_survive_kill_9_whole(
    server: CrashableServer, rng: random.Random
) -> None:
    ledger = Ledger()
    server.start()
    server.wait_ready()
    deadline = time.monotonic() + TIME_CAP
    kills = 0
    while kills < KILLS and (kills == 0 or time.monotonic() < deadline):
        kill_mid_writes(server, ledger, rng)
        kills += 1
        if kills == KILLS or time.monotonic() >= deadline:
            # the last crash once more while the server starts again: loading the model
            # and the index, repairing what the crash left unindexed
            server.start()
            time.sleep(rng.uniform(0.3, 2.0))
            server.kill()
        server.start()
        server.wait_ready()
        findings = verify(server, ledger, rng, RETRIEVE_SAMPLE)
        assert findings.ok, explain(findings, server)

    server.stop()
    code, report = check_index(server.data_dir)
    assert code == 0 and report["agrees"], report
    assert report["searchable"] == report["indexed"] == findings.stored

    assert ledger.unexpected == []  # no 5xx or 4xx while the server was up
    assert len(ledger.acked) >= kills  # the writers got answers before each kill
    sent = sum(len(contents) for _, contents in ledger.batches)
    assert sent > len(ledger.acked)  # and some writes were cut off by a kill
