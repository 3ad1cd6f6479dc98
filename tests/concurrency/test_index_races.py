"""The embedded search index under concurrency: readers never see half a write, and one
user's writes (or graph builds) do not hold up another user's reads.

The in-process ``VectorIndex`` is partitioned per (tenant, user); each partition has its
own readers-writer lock. The isolation tests hold one partition busy on purpose (a write,
or an HNSW graph build, stopped halfway on an event) and require another user's search,
or a second reader of the same user, to finish meanwhile.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight.adapters.embedded import vector_partition
from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.vector_index import VectorIndex
from hindsight.adapters.memory import InMemorySearchIndex
from hindsight.core.models import IndexChunk, IndexDocument, MemoryKind, SearchFilter, StoredVector
from hindsight.core.ports import SearchIndex
from tests.concurrency.conftest import race

DIM = 16
MODEL = "race-model"
WHEN = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
BLOCKED = 3.0  # seconds the busy partition stays busy; a blocked reader waits this long


def unit(rng: np.random.Generator) -> np.ndarray:
    vector = rng.standard_normal(DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def document(
    memory_id: str, text: str, vector: np.ndarray, user_id: str = "u1", chunks: Any = ()
) -> IndexDocument:
    values = np.stack([c.values for c in chunks]) if chunks else vector
    spans = tuple(c.span for c in chunks)
    return IndexDocument(
        memory_id=memory_id,
        tenant_id="t1",
        user_id=user_id,
        kind=MemoryKind.EPISODIC,
        scope="global",
        text=text,
        vector=StoredVector(MODEL, values, spans),
        occurred_at=WHEN,
        created_at=WHEN,
        chunks=tuple(chunks),
    )


def long_document(version: str, pieces: int, rng: np.random.Generator) -> IndexDocument:
    """One long memory in ``pieces`` chunks; every chunk says "zebra" and its version."""
    texts = [f"zebra {version} piece {n} " + "grass " * (3 + n) for n in range(pieces)]
    chunks, start = [], 0
    for text in texts:
        chunks.append(IndexChunk(text=text, values=unit(rng), span=(start, start + len(text))))
        start += len(text)
    return document("long", "".join(texts), chunks[0].values, chunks=chunks)


def of(user_id: str) -> SearchFilter:
    return SearchFilter(tenant_id="t1", user_id=user_id)


@pytest.fixture(params=["embedded", "memory"])
def search_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SearchIndex]:
    index: Any = (
        EmbeddedSearchIndex(tmp_path / "index")
        if request.param == "embedded"
        else InMemorySearchIndex()
    )
    yield index
    if request.param == "embedded":
        index.close()


def test_a_replaced_long_memory_is_never_seen_half_written(search_index: SearchIndex) -> None:
    rng = np.random.default_rng(7)
    versions = {"alpha": long_document("alpha", 3, rng), "beta": long_document("beta", 5, rng)}
    layouts = {
        name: {(n, chunk.span) for n, chunk in enumerate(doc.chunks)}
        for name, doc in versions.items()
    }
    search_index.upsert([versions["alpha"], document("other", "zebra crossing", unit(rng))])
    done = threading.Event()

    def writer() -> None:
        try:
            for step in range(150):
                search_index.upsert([versions["beta" if step % 2 == 0 else "alpha"]])
        finally:
            done.set()

    def reader(seed: int) -> int:
        local = np.random.default_rng(seed)
        reads = 0
        while not done.is_set() or reads < 20:
            hits = {h.memory_id: h for h in search_index.keyword_search(of("u1"), "zebra", 10)}
            assert set(hits) == {"long", "other"}  # never missing while being replaced
            long_hit = hits["long"]
            assert (long_hit.chunk, long_hit.span) in layouts["alpha"] | layouts["beta"]
            for name in ("alpha", "beta"):  # a version's word finds only that version's rows
                for hit in search_index.keyword_search(of("u1"), name, 10):
                    assert (hit.chunk, hit.span) in layouts[name], (name, hit)
            vector_hits = search_index.vector_search(of("u1"), StoredVector(MODEL, unit(local)), 10)
            assert sorted(h.memory_id for h in vector_hits) == ["long", "other"]
            assert search_index.count("t1") == 2
            reads += 1
        return reads

    race(writer, lambda: reader(1), lambda: reader(2))


def _busy(
    monkeypatch: pytest.MonkeyPatch, target: Any, name: str, when: Callable[..., bool]
) -> tuple[threading.Event, threading.Event]:
    """Make ``target.name`` stop (for at most BLOCKED seconds) when ``when(*args)`` holds;
    returns (entered, release)."""
    entered, release = threading.Event(), threading.Event()
    original = getattr(target, name)

    def stalled(*args: Any, **kwargs: Any) -> Any:
        if when(*args, **kwargs):
            entered.set()
            release.wait(BLOCKED)
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, stalled)
    return entered, release


def _finishes_while_busy(
    busy: Callable[[], Any],
    entered: threading.Event,
    release: threading.Event,
    probe: Callable[[], Any],
) -> float:
    """Start ``busy`` (which stops halfway), then time ``probe``; returns its seconds."""
    worker = threading.Thread(target=busy, daemon=True)
    worker.start()
    try:
        assert entered.wait(5), "the busy operation never started"
        started = time.monotonic()
        probe()
        return time.monotonic() - started
    finally:
        release.set()
        worker.join(10)


def _filled(ann_threshold: int = 20_000) -> VectorIndex:
    rng = np.random.default_rng(11)
    index = VectorIndex(ann_threshold=ann_threshold)
    index.upsert([document(f"a{n}", f"apple {n}", unit(rng), "ann") for n in range(40)])
    index.upsert([document(f"b{n}", f"banana {n}", unit(rng), "bob") for n in range(40)])
    return index


def _probe_bob(index: VectorIndex) -> Callable[[], None]:
    query = StoredVector(MODEL, unit(np.random.default_rng(3)))

    def probe() -> None:
        assert len(index.search(of("bob"), query, 5)) == 5
        assert len(index.keyword_search(of("bob"), "banana", 5)) == 5

    return probe


def test_a_write_of_one_user_does_not_hold_up_reads_of_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index = _filled()
    entered, release = _busy(
        monkeypatch, vector_partition.Partition, "add_memory", lambda _p, mid, *_: mid == "slow"
    )
    slow = document("slow", "apple pie", unit(np.random.default_rng(5)), "ann")
    seconds = _finishes_while_busy(
        lambda: index.upsert([slow]), entered, release, _probe_bob(index)
    )
    assert seconds < BLOCKED / 2, f"bob's reads waited {seconds:.2f} s for ann's write"
    assert index.count() == 81


def test_a_graph_build_of_one_user_does_not_hold_up_reads_of_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index = _filled(ann_threshold=30)  # ann's 40 vectors: the first search builds a graph
    ann = index._partitions[("t1", "ann")]
    entered, release = _busy(
        monkeypatch, vector_partition.Partition, "build_graph", lambda p: p is ann
    )
    query = StoredVector(MODEL, unit(np.random.default_rng(4)))
    seconds = _finishes_while_busy(
        lambda: index.search(of("ann"), query, 5), entered, release, _probe_bob(index)
    )
    assert seconds < BLOCKED / 2, f"bob's reads waited {seconds:.2f} s for ann's graph"
    assert index.has_graph("t1", "ann")


def test_readers_of_one_user_search_side_by_side(monkeypatch: pytest.MonkeyPatch) -> None:
    index = _filled()
    together = threading.Barrier(2, timeout=BLOCKED)
    original = VectorIndex._mask

    def meeting(self: VectorIndex, *args: Any) -> Any:
        together.wait()  # both readers must be inside the partition at the same time
        return original(self, *args)

    monkeypatch.setattr(VectorIndex, "_mask", meeting)
    query = StoredVector(MODEL, unit(np.random.default_rng(6)))
    hits = race(*[lambda: index.search(of("bob"), query, 3)] * 2)
    assert hits[0] == hits[1] and len(hits[0]) == 3


def test_searches_while_a_partition_changes_under_them_stay_well_formed() -> None:
    """Approximate (HNSW) and keyword searches of a partition that is being written at the
    same time: hnswlib must never search a graph while it is added to, nor the postings be
    resized while a reader holds a view of them."""
    rng = np.random.default_rng(12)
    index = VectorIndex(ann_threshold=64)
    vectors = {f"m{n}": unit(rng) for n in range(400)}
    index.upsert([document(mid, f"kiwi {mid}", vectors[mid], "ann") for mid in list(vectors)[:200]])
    known = set(vectors)
    done = threading.Event()

    def writer() -> None:
        order = random.Random(5)
        try:
            for step in range(300):
                mid = order.choice(sorted(vectors))
                if step % 3 == 0:
                    index.delete("t1", [mid])
                else:
                    index.upsert([document(mid, f"kiwi {mid}", vectors[mid], "ann")])
        finally:
            done.set()

    def reader(seed: int) -> int:
        local = np.random.default_rng(seed)
        reads = 0
        while not done.is_set():
            hits = index.search(of("ann"), StoredVector(MODEL, unit(local)), 10)
            assert len(hits) <= 10 and {h.memory_id for h in hits} <= known
            words = index.keyword_search(of("ann"), "kiwi", 10)
            assert len(words) <= 10 and {h.memory_id for h in words} <= known
            reads += 1
        return reads

    reads = race(writer, lambda: reader(1), lambda: reader(2))
    assert min(reads[1:]) > 0
