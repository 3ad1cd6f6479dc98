"""A batch of new memories reaches the embedded record store whole or not at all, even when
the process dies in the middle of writing it (``SqliteRecordStore.put_many``, which the write
policy uses where a store offers it): a failing record, or a SIGKILL between two records,
leaves none of the batch behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.adapters.writers import CompensatingWriter
from hindsight.core.errors import HindsightError
from hindsight.core.ports import NewRecord
from tests.contract.builders import episode, text_vector

ROOT = Path(__file__).resolve().parents[2]

# puts a batch of 6 through the write policy and dies with SIGKILL while the 4th is written
KILLED_MID_BATCH = """
import os, signal, sys
from hindsight.adapters.embedded import sqlite_record_store
from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.writers import CompensatingWriter
from hindsight.core.ports import NewRecord
from tests.contract.builders import episode, text_vector

written = []
original = sqlite_record_store._write_vector

def dying(conn, memory, vector):
    original(conn, memory, vector)
    written.append(memory.memory_id)
    if len(written) == 4:
        os.kill(os.getpid(), signal.SIGKILL)

sqlite_record_store._write_vector = dying
records = sqlite_record_store.SqliteRecordStore(sys.argv[1])
writer = CompensatingWriter(records, EmbeddedSearchIndex(sys.argv[2]))
writer.add([NewRecord(episode(f"m{n}", f"note {n}"), text_vector(f"note {n}")) for n in range(6)])
"""


# the index refuses the batch, so the write policy undoes its records; SIGKILL mid-undo
KILLED_MID_UNDO = """
import os, signal, sys
from hindsight.adapters.embedded import sqlite_record_store
from hindsight.adapters.writers import CompensatingWriter
from hindsight.core.errors import UnavailableError
from hindsight.core.ports import NewRecord
from tests.contract.builders import episode, text_vector

deletes = []
opened = sqlite_record_store.open_connection

def traced(path):
    conn = opened(path)
    def trace(statement):
        if statement.startswith("DELETE FROM memories"):
            deletes.append(statement)
            if len(deletes) == 3:
                os.kill(os.getpid(), signal.SIGKILL)
    conn.set_trace_callback(trace)
    return conn

class RefusingIndex:
    def upsert(self, documents):
        raise UnavailableError("the index is full")
    def delete(self, tenant_id, memory_ids):
        pass

sqlite_record_store.open_connection = traced
records = sqlite_record_store.SqliteRecordStore(sys.argv[1])
writer = CompensatingWriter(records, RefusingIndex())
writer.add([NewRecord(episode(f"m{n}", f"note {n}"), text_vector(f"note {n}")) for n in range(6)])
"""


def record(memory_id: str, content: str, key: str | None = None) -> NewRecord:
    return NewRecord(episode(memory_id, content), text_vector(content), dedup_key=key)


@pytest.fixture
def store(tmp_path: Path) -> SqliteRecordStore:
    return SqliteRecordStore(tmp_path / "hindsight.db")


def stored_ids(store: SqliteRecordStore) -> set[str]:
    return {memory.memory_id for memory, _ in store.iter_all("t1")}


def test_a_batch_is_written_with_its_vectors(store: SqliteRecordStore) -> None:
    ids = store.put_many([record("a", "tea"), record("b", "kites"), record("c", "bees")])
    assert ids == ["a", "b", "c"]
    assert stored_ids(store) == {"a", "b", "c"}
    assert set(store.get_vectors("t1", ["a", "b", "c"])) == {"a", "b", "c"}


def test_duplicates_name_the_memory_they_repeat(store: SqliteRecordStore) -> None:
    store.put_many([record("old", "tea", key="k-tea")], dedup_window_seconds=3600)
    batch = [record("x", "tea", key="k-tea"), record("y", "kites", "k-kite"),
             record("z", "kites", "k-kite")]  # fmt: skip
    assert store.put_many(batch, dedup_window_seconds=3600) == ["old", "y", "y"]
    assert stored_ids(store) == {"old", "y"}


def test_a_failing_record_writes_none_of_the_batch(store: SqliteRecordStore) -> None:
    store.put_many([record("taken", "tea")])
    with pytest.raises(HindsightError):
        store.put_many([record("n1", "kites"), record("n2", "bees"), record("taken", "again")])
    assert stored_ids(store) == {"taken"}


def test_the_write_policy_puts_a_batch_in_one_transaction(tmp_path: Path) -> None:
    records = SqliteRecordStore(tmp_path / "hindsight.db")
    index = EmbeddedSearchIndex(tmp_path / "index")
    calls: list[int] = []
    original = records.put_many

    def counting(batch, dedup_window_seconds=0.0):  # type: ignore[no-untyped-def]
        calls.append(len(batch))
        return original(batch, dedup_window_seconds)

    records.put_many = counting  # type: ignore[method-assign]
    writer = CompensatingWriter(records, index)
    assert writer.add([record(f"m{n}", f"note {n}") for n in range(5)]) == [
        f"m{n}" for n in range(5)
    ]
    assert calls == [5]
    assert {mid for _, mid in index.indexed_ids("t1")} == {f"m{n}" for n in range(5)}
    index.close()


def test_a_process_killed_mid_batch_leaves_none_of_it(tmp_path: Path) -> None:
    db, index_dir = tmp_path / "hindsight.db", tmp_path / "index"
    SqliteRecordStore(db).put_many([record("before", "an earlier memory")])
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'layers' / 'hindsight'}"}
    child = subprocess.run(
        [sys.executable, "-c", KILLED_MID_BATCH, str(db), str(index_dir)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]
    assert stored_ids(SqliteRecordStore(db)) == {"before"}  # not m0..m3


def test_a_batch_is_deleted_in_one_transaction(store: SqliteRecordStore) -> None:
    store.put_many([record("a", "tea", key="k"), record("b", "kites"), record("c", "bees")])
    assert store.delete_many("t1", ["a", "b", "unknown"]) == 2
    assert stored_ids(store) == {"c"}
    assert store.get_vectors("t1", ["a", "b"]) == {}
    assert store.put_many([record("d", "tea", key="k")], dedup_window_seconds=3600) == ["d"]


def test_a_process_killed_mid_undo_leaves_the_batch_whole(tmp_path: Path) -> None:
    """The undo of a batch the index refused is one transaction too: killed in the middle,
    the batch stays whole (the next start indexes it), never partly deleted."""
    db = tmp_path / "hindsight.db"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'layers' / 'hindsight'}"}
    child = subprocess.run(
        [sys.executable, "-c", KILLED_MID_UNDO, str(db)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]
    assert stored_ids(SqliteRecordStore(db)) == {f"m{n}" for n in range(6)}
