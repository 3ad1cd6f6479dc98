"""The ONNX engine's passage batches (``_balanced_batches``): a few a thread, a multiple of
the threads, each as small as that count allows and the costliest first, so that threads
taking the next batch when free finish close together."""

from __future__ import annotations

import random

import pytest

from hindsight.adapters.embedders.onnx_e5_embedder import (
    ROUNDS_PER_WORKER,
    _balanced_batches,
    _padded_batches,
)


def _cost(lengths: list[int], batch: list[int]) -> int:
    return len(batch) * max(lengths[i] for i in batch)


def _makespan(costs: list[int], workers: int) -> int:
    """When the last thread finishes, each taking the next batch as soon as it is free."""
    free = [0] * workers
    for cost in costs:
        free[free.index(min(free))] += cost
    return max(free)


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", range(20))
def test_every_text_once_within_the_budget_costliest_first(workers: int, seed: int) -> None:
    rng = random.Random(seed)
    lengths = [rng.randint(8, 256) for _ in range(rng.randint(1, 300))]
    batches = _balanced_batches(lengths, 2048, workers)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    costs = [_cost(lengths, batch) for batch in batches]
    assert all(cost <= 2048 for cost in costs)
    assert costs == sorted(costs, reverse=True)
    fewest = len(_padded_batches(lengths, 2048))
    wanted = max(workers * ROUNDS_PER_WORKER, -(-fewest // workers) * workers)
    assert len(batches) <= wanted
    # no smaller budget gives as few batches: each batch is as small as the count allows
    if max(costs) > max(lengths):
        assert len(_padded_batches(lengths, max(costs) - 1)) > wanted


def test_a_micro_batch_of_short_texts_keeps_both_threads_busy_to_the_end() -> None:
    # ~1,460 tokens in 25 texts, as a micro-batch of short stores reaches the engine: cut at
    # its sum / 2 it made three batches (672, 684 and 352 padded tokens), the third alone
    lengths = [40 + (i * 7) % 45 for i in range(25)]
    old = _padded_batches(lengths, sum(lengths) // 2 + 1)
    new = _balanced_batches(lengths, 2048, 2)
    old_costs = [_cost(lengths, batch) for batch in old]
    new_costs = [_cost(lengths, batch) for batch in new]
    assert len(old) == 3 and len(new) == 2 * ROUNDS_PER_WORKER
    assert sum(new_costs) <= sum(old_costs)  # no more padding in all
    assert _makespan(new_costs, 2) <= 0.6 * sum(new_costs)  # the threads end together
    assert _makespan(new_costs, 2) < 0.9 * _makespan(old_costs, 2)


def test_one_text_is_one_batch() -> None:
    assert _balanced_batches([300], 2048, 2) == [[0]]
    assert _balanced_batches([512], 512, 4) == [[0]]
