"""One writing process per embedded data directory (``adapters/embedded/writer_lock.py``).

A second process opening the same search index is refused with a message that names the
process holding it and what to do; the lock ends with its process, however that ends. A
second instance in the same process takes over from the first, which is closed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.core.errors import UnavailableError
from hindsight.core.models import IndexDocument, MemoryKind, SearchFilter, StoredVector

ROOT = Path(__file__).resolve().parents[2]
EVERYONE = SearchFilter(tenant_id="t1", user_id="u1")

OPENER = """
import sys
from pathlib import Path
from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.core.errors import UnavailableError

try:
    index = EmbeddedSearchIndex(Path(sys.argv[1]))
except UnavailableError as exc:
    print("refused:", exc.message)
    sys.exit(3)
print("opened", index.count(), flush=True)
if len(sys.argv) > 2:  # hold it until killed
    sys.stdin.readline()
index.close()
"""


def open_elsewhere(path: Path, hold: bool = False) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", OPENER, str(path), *(["hold"] if hold else [])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def document(memory_id: str, text: str) -> IndexDocument:
    moment = datetime(2026, 6, 1, tzinfo=UTC)
    vector = np.zeros(8, dtype=np.float32)
    vector[len(text) % 8] = 1.0
    return IndexDocument(
        memory_id=memory_id,
        tenant_id="t1",
        user_id="u1",
        kind=MemoryKind.EPISODIC,
        scope="global",
        text=text,
        vector=StoredVector("lock-model", vector),
        occurred_at=moment,
        created_at=moment,
    )


def test_a_second_process_is_refused_while_one_writes(tmp_path: Path) -> None:
    path = tmp_path / "data" / "index"
    index = EmbeddedSearchIndex(path)
    index.upsert([document("m1", "the user likes tea")])
    try:
        second = open_elsewhere(path)
        out, err = second.communicate(timeout=60)
        assert second.returncode == 3, (out, err)
        assert f"the Hindsight data in {tmp_path / 'data'} is already open for writing" in out
        assert f"pid {os.getpid()}" in out  # which process holds it
        assert "Stop that process" in out and "HINDSIGHT_DATA_DIR" in out
    finally:
        index.close()
    reopened = open_elsewhere(path)  # closed: the next process may open it
    out, err = reopened.communicate(timeout=60)
    assert reopened.returncode == 0 and out.strip() == "opened 1", (out, err)


def test_the_lock_ends_with_a_process_that_was_killed(tmp_path: Path) -> None:
    path = tmp_path / "index"
    holder = open_elsewhere(path, hold=True)
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "opened 0"
    with pytest.raises(UnavailableError, match=f"pid {holder.pid}"):
        EmbeddedSearchIndex(path)
    holder.send_signal(signal.SIGKILL)  # no close, no clean-up
    holder.communicate(timeout=60)
    index = EmbeddedSearchIndex(path)
    assert index.count() == 0
    index.close()


def test_opening_again_in_the_same_process_takes_over(tmp_path: Path) -> None:
    older = EmbeddedSearchIndex(tmp_path / "index")
    older.upsert([document("m1", "the user likes tea")])
    newer = EmbeddedSearchIndex(tmp_path / "index")
    try:
        assert [h.memory_id for h in newer.keyword_search(EVERYONE, "tea", 5)] == ["m1"]
        for call in (
            lambda: older.upsert([document("m2", "the user likes coffee")]),
            lambda: older.keyword_search(EVERYONE, "tea", 5),
            lambda: older.count(),
        ):
            with pytest.raises(UnavailableError, match="opened again in this process"):
                call()
        newer.upsert([document("m2", "the user likes coffee")])
        assert newer.count() == 2
    finally:
        newer.close()
        older.close()  # already closed: nothing
    last = EmbeddedSearchIndex(tmp_path / "index")
    assert last.count() == 2
    last.close()
