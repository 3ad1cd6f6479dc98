"""What reading one user's mean vector costs on the AWS record store (moto: DynamoDB + S3).

Query centering (``core/centering.py``) reads a user's mean vector once per user every
five minutes in a warm retrieve function: the ids of the user's newest 200 memories, then
their stored vectors. Before session 14 it read the ids through ``RecordStore.list``,
which parses every memory, fetches the body of each large one (a pasted document over
128 KiB) from S3 and batch-reads the hit counts; ``RecordStore.list_ids`` reads only the
``by_user`` index's sort keys. This script stores one user's memories in moto (a share of
them long documents whose body and chunk vectors go to S3, as ``HINDSIGHT_BLOB_BUCKET``
does), then times both reads, alternating, and counts their DynamoDB and S3 requests.
Both end in the same ``get_vectors`` and the same mean (checked). Prints numbers, asserts
nothing but that the two means agree. Needs moto (``make services``).

    .venv/bin/python bench/mean_read.py                  # 200 memories, 20 of them long
    .venv/bin/python bench/mean_read.py --memories 400 --long 100 --rounds 9
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness import synthetic_episode  # noqa: E402

from hindsight.adapters.aws.dynamodb_record_store import DynamoDBRecordStore  # noqa: E402
from hindsight.core.centering import MEAN_SAMPLE, mean_of  # noqa: E402
from hindsight.core.models import ListQuery, StoredVector  # noqa: E402
from tests.integration.dynamodb_local import fresh_store  # noqa: E402

MODEL, DIM = "bench-model", 384
LONG_CHARS = 150_000  # a pasted document: its JSON body is over the 128 KiB inline limit
CHUNK_CHARS = 1_500  # one chunk vector per this many characters (100 for a long one)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def fill(store: DynamoDBRecordStore, memories: int, long: int, seed: int) -> None:
    """``memories`` memories of one user, every ``memories // long``-th a long document."""
    rng = np.random.default_rng(seed)
    every = max(1, memories // long) if long else 0
    for n in range(memories):
        is_long = bool(every) and n % every == 0 and n // every < long
        content = (
            (f"document {n}: " + "lorem ipsum dolor " * 9_000)[:LONG_CHARS]
            if is_long
            else (f"turn {n}: we talked about the weather and the garden")
        )
        rows = LONG_CHARS // CHUNK_CHARS if is_long else 1
        values = rng.standard_normal((rows, DIM)).astype(np.float32)
        values /= np.linalg.norm(values, axis=1, keepdims=True)
        spans = tuple((i * CHUNK_CHARS, (i + 1) * CHUNK_CHARS) for i in range(rows))
        vector = StoredVector(MODEL, values, spans) if is_long else StoredVector(MODEL, values[0])
        at = T0 + timedelta(minutes=n)
        memory = synthetic_episode(f"m{n:05d}", "t1", "u1", content, "note", at, at, f"s{n // 10}")
        store.put(memory, vector)


def through_list(store: DynamoDBRecordStore, now: datetime) -> list[str]:
    page = store.list("t1", "u1", ListQuery(now=now), MEAN_SAMPLE)
    return [memory.memory_id for memory in page.items]


def through_list_ids(store: DynamoDBRecordStore, now: datetime) -> list[str]:
    return list(store.list_ids("t1", "u1", ListQuery(now=now), MEAN_SAMPLE))


def s3_counter(store: DynamoDBRecordStore) -> Counter[str]:
    """S3 requests made through the store's payload client, per operation."""
    counts: Counter[str] = Counter()
    payloads = store.payloads
    assert payloads is not None, "the store keeps no large payloads in S3"

    def count(model: Any, **_: Any) -> None:
        counts[model.name] += 1

    payloads.client.meta.events.register("before-call.s3.*", count)
    return counts


def read_mean(
    store: DynamoDBRecordStore, ids_of: Callable[[DynamoDBRecordStore, datetime], list[str]]
) -> tuple[float, np.ndarray | None]:
    now = T0 + timedelta(days=365)
    start = time.perf_counter()
    ids = ids_of(store, now)
    mean = mean_of(list(store.get_vectors("t1", ids).values()), MODEL, DIM)
    return (time.perf_counter() - start) * 1000, mean


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=MEAN_SAMPLE)
    parser.add_argument("--long", type=int, default=20, help="how many are long documents")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    store = fresh_store("hindsight-mean-read")
    fill(store, args.memories, args.long, seed=14)
    s3 = s3_counter(store)
    ways = {"list (before)": through_list, "list_ids (now)": through_list_ids}
    times: dict[str, list[float]] = {name: [] for name in ways}
    requests: dict[str, dict[str, int]] = {}
    means: dict[str, np.ndarray | None] = {}
    for _ in range(args.rounds):
        for name, ids_of in ways.items():
            store.request_counts.clear()
            s3.clear()
            elapsed, means[name] = read_mean(store, ids_of)
            times[name].append(elapsed)
            requests[name] = {
                **{f"dynamodb {k}": v for k, v in sorted(store.request_counts.items())},
                **{f"s3 {k}": v for k, v in sorted(s3.items())},
            }
    first, second = means.values()
    assert first is not None and second is not None and np.allclose(first, second)
    print(
        f"one user, {args.memories} memories ({args.long} long documents of "
        f"{LONG_CHARS:,} characters), the newest {MEAN_SAMPLE} read; moto on this machine; "
        f"median of {args.rounds} alternating rounds"
    )
    for name in ways:
        counted = ", ".join(f"{k} {v}" for k, v in requests[name].items())
        print(f"{name:16s} {statistics.median(times[name]):8.1f} ms   {counted}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
