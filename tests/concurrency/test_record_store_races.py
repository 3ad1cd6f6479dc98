"""Record stores under concurrency: the dedup window holds for racing duplicates, and the
SQLite file is shared by threads and processes without ``database is locked`` reaching a
caller (WAL, a pool of read connections, one writer at a time, a busy timeout)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.core.errors import DuplicateMemoryError
from hindsight.core.models import ListQuery
from hindsight.core.ports import RecordStore
from tests.concurrency.conftest import race
from tests.contract.builders import T0, episode, text_vector

ROOT = Path(__file__).resolve().parents[2]
HOUR = 3600.0


def put_or_duplicate(store: RecordStore, memory_id: str, key: str, minutes: float = 0.0) -> str:
    """The id the put names: its own if written, the existing one if a duplicate."""
    memory = episode(memory_id, f"content of {key}", occurred_at=T0 + timedelta(minutes=minutes))
    try:
        store.put(memory, text_vector(key), dedup_key=key, dedup_window_seconds=HOUR)
    except DuplicateMemoryError as duplicate:
        return duplicate.existing_memory_id
    return memory_id


def listed(store: RecordStore, user_id: str = "u1") -> list[str]:
    page = store.list("t1", user_id, ListQuery(include_expired=True), 1_000)
    return sorted(m.memory_id for m in page.items)


def test_racing_puts_of_one_dedup_key_write_one_memory(record_store: RecordStore) -> None:
    for round_number in range(3):
        key = f"u1|global|hash-{round_number}"
        named = race(
            *[
                lambda n=n, key=key: put_or_duplicate(record_store, f"{key}-{n}", key, n)
                for n in range(8)
            ]
        )
        assert len(set(named)) == 1, named  # one memory, and every put names it
    assert len(listed(record_store)) == 3


def test_threads_sharing_one_sqlite_file_never_find_it_locked(tmp_path: Path) -> None:
    store = SqliteRecordStore(tmp_path / "hindsight.db")

    def life(worker: int) -> int:
        local = random.Random(worker)
        user = f"u{worker % 3}"  # two workers per user
        written: list[str] = []
        for step in range(60):
            action = local.random()
            if action < 0.5:
                memory = episode(f"w{worker}-{step}", f"step {step}", user_id=user)
                store.put(memory, text_vector(f"step {step}"), dedup_key=f"{worker}-{step % 7}")
                written.append(memory.memory_id)
            elif action < 0.65 and written:
                store.delete("t1", written.pop(local.randrange(len(written))))
            elif action < 0.75:
                store.set_cursor("t1", user, "reflection", T0 + timedelta(seconds=step))
            elif action < 0.8:
                store.acquire_lease("t1", user, "reflection", f"w{worker}", T0, T0)
            else:
                store.list("t1", user, ListQuery(), 20)
                store.get_many("t1", written[-5:])
        return len(written)

    race(*[lambda n=n: life(n) for n in range(6)])
    assert sum(len(listed(store, f"u{n}")) for n in range(3)) > 0
    store.close()


WRITER = """
import json, sys
from datetime import timedelta
from pathlib import Path
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.core.errors import DuplicateMemoryError
from tests.contract.builders import T0, episode, text_vector

store = SqliteRecordStore(Path(sys.argv[1]))
worker = sys.argv[2]
print("ready", flush=True)
sys.stdin.readline()  # every process waits here until all are ready, then all go at once
until = T0 + timedelta(minutes=5)
leased = store.acquire_lease("t1", "u1", "reflection", worker, until, T0)
written = duplicates = 0
for n in range(60):
    key = f"shared-{n % 20}"  # every process tries the same 20 keys, three times each
    memory = episode(f"{worker}-{n}", key, occurred_at=T0 + timedelta(seconds=n))
    try:
        store.put(memory, text_vector(key), dedup_key=key, dedup_window_seconds=3600)
        written += 1
    except DuplicateMemoryError:
        duplicates += 1
print(json.dumps({"leased": leased, "written": written, "duplicates": duplicates}))
"""


def test_processes_writing_one_sqlite_file_keep_the_dedup_window_and_the_lease(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hindsight.db"
    SqliteRecordStore(path).close()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), f"p{n}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for n in range(3)
    ]
    for writer in writers:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    outcomes = []
    for writer in writers:
        out, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err[-2000:]  # no "database is locked", no error at all
        outcomes.append(json.loads(out))
    assert [o["leased"] for o in outcomes].count(True) == 1  # one process won the lease
    assert sum(o["written"] for o in outcomes) == 20  # one memory per key
    assert sum(o["duplicates"] for o in outcomes) == 160
    store = SqliteRecordStore(path)
    assert len(listed(store)) == 20
    store.close()
