"""The ONNX engine's passage batches: as many as the threads, or a multiple, each as small
as that count allows (``_balanced_batches``), so that no thread runs a batch alone."""

from __future__ import annotations

import random

import pytest

from hindsight.adapters.embedders.onnx_e5_embedder import _balanced_batches, _padded_batches


def _cost(lengths: list[int], batch: list[int]) -> int:
    return len(batch) * max(lengths[i] for i in batch)


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", range(20))
def test_every_text_once_within_the_budget_in_the_fewest_rounds_of_the_threads(
    workers: int, seed: int
) -> None:
    rng = random.Random(seed)
    lengths = [rng.randint(8, 256) for _ in range(rng.randint(1, 300))]
    batches = _balanced_batches(lengths, 2048, workers)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    assert all(_cost(lengths, batch) <= 2048 for batch in batches)
    fewest = len(_padded_batches(lengths, 2048))
    assert fewest <= len(batches) <= -(-fewest // workers) * workers
    # no budget below the one chosen gives as few batches: each is as small as it can be
    largest = max(_cost(lengths, batch) for batch in batches)
    if largest > max(lengths):
        assert len(_padded_batches(lengths, largest - 1)) > -(-fewest // workers) * workers


def test_a_micro_batch_of_short_texts_is_split_evenly_between_two_threads() -> None:
    # ~1,460 tokens in 25 texts, as a micro-batch of short stores reaches the engine: cut at
    # its sum / 2 it made three batches (672, 684 and 352 padded tokens), the third alone
    lengths = [40 + (i * 7) % 45 for i in range(25)]
    batches = _balanced_batches(lengths, 2048, 2)
    assert len(batches) == 2
    costs = sorted(_cost(lengths, batch) for batch in batches)
    assert costs[1] <= 1.35 * sum(lengths) / 2  # the longer share is near half the tokens


def test_one_text_is_one_batch() -> None:
    assert _balanced_batches([300], 2048, 2) == [[0]]
    assert _balanced_batches([512], 512, 4) == [[0]]
