"""What an erase-user costs now that it rewrites the embedded SQLite files.

``secure_delete`` zeroes a deleted row's cell but not the copies SQLite leaves in a page's
free gap when it repacks the page, so an erase-user rewrites the record store and the
search index (``VACUUM``, then the write-ahead log truncated; ``scrub`` in
``adapters/embedded/sqlite_files.py``). This fills a real ``SqliteRecordStore`` and
``EmbeddedSearchIndex`` with N memories of 50 users (384-d vectors, ~200 characters each),
erases one user and prints, per size, the files' sizes and the seconds each erase took,
with the time of the plain deletes (without the rewrite) measured on the same files:

    .venv/bin/python bench/decisions/erase_rewrite.py [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "layers" / "hindsight"))

from hindsight.adapters.embedded import search_index, sqlite_files, sqlite_record_store
from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.core.indexing import index_document
from hindsight.core.models import EpisodicMemory, StoredVector
from hindsight.core.ports import NewRecord
from hindsight.core.text import content_hash

USERS = 50
BATCH = 1000
WORDS = [
    "music",
    "travel",
    "garden",
    "coffee",
    "peanuts",
    "allergy",
    "meeting",
    "monday",
    "python",
    "budget",
]


def records(n: int, rng: np.random.Generator) -> list[NewRecord]:
    out = []
    when = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(n):
        text = f"memory {i}: " + " ".join(rng.choice(WORDS, 30))
        values = rng.standard_normal(384).astype(np.float32)
        memory = EpisodicMemory(
            memory_id=f"m{i}",
            tenant_id="t",
            user_id=f"u{i % USERS}",
            content=text,
            occurred_at=when,
            created_at=when,
            updated_at=when,
            content_hash=content_hash(text),
        )
        vector = StoredVector(model="bench", values=values / np.linalg.norm(values))
        out.append(NewRecord(memory, vector))
    return out


def erase_seconds(n: int, rewrite: bool) -> tuple[float, float, int]:
    root = Path(tempfile.mkdtemp(prefix="erase-rewrite-", dir=os.environ.get("TMPDIR")))
    store = SqliteRecordStore(root / "hindsight.db")
    index = EmbeddedSearchIndex(root / "index", ann_threshold=10**9)
    try:
        rows = records(n, np.random.default_rng(5))
        for start in range(0, n, BATCH):
            batch = rows[start : start + BATCH]
            store.put_many(batch)
            index.upsert([index_document(r.memory, r.vector) for r in batch])
        files = [root / "hindsight.db", root / "index" / "keyword.db"]
        size = sum(path.stat().st_size for path in files)
        # the deletes alone: the rewrite replaced by the log truncation it ends with
        scrub = sqlite_files.scrub if rewrite else sqlite_files.drop_old_log
        search_index.scrub = sqlite_record_store.scrub = scrub  # type: ignore[attr-defined]
        started = time.perf_counter()
        store.erase_user("t", "u7")
        middle = time.perf_counter()
        index.delete_user("t", "u7")
        return middle - started, time.perf_counter() - middle, size
    finally:
        index.close()
        store.close()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    print("| memories | both files MB | erase, records (s) | erase, index (s) | deletes only (s) |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        plain = erase_seconds(n, rewrite=False)
        records_s, index_s, size = erase_seconds(n, rewrite=True)
        print(
            f"| {n:,} | {size / 1e6:.0f} | {records_s:.2f} | {index_s:.2f} | "
            f"{plain[0] + plain[1]:.2f} |"
        )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
