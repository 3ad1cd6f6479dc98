"""``core.embedding.reporting``: while a job watches, texts are embedded in slices and
the counts reported after each; the vectors are those of one call, in order."""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from hindsight.core.embedding import PROGRESS_SLICE, PROGRESS_STEPS, embed_documents, reporting
from tests.fakes import HashingEmbedder


def test_slices_report_every_step_and_give_the_vectors_of_one_call() -> None:
    embedder = HashingEmbedder()
    texts = [f"note {i} about kites and 风筝 {i * 7}" for i in range(100)]
    whole = embed_documents(embedder, texts)
    steps: list[tuple[int, int]] = []
    with reporting(lambda done, total: steps.append((done, total))):
        sliced = embed_documents(embedder, texts)
    assert all(np.array_equal(a.values, b.values) for a, b in zip(whole, sliced, strict=True))
    assert steps[0] == (0, 100) and steps[-1] == (100, 100)
    assert [done for done, _ in steps] == sorted({done for done, _ in steps})
    assert 8 <= len(steps) - 1 <= PROGRESS_STEPS  # about a dozen steps, none empty
    # every engine call but the last takes at least PROGRESS_SLICE texts
    assert all(b - a >= PROGRESS_SLICE for (a, _), (b, _) in pairwise(steps[:-1]))


def test_without_a_watcher_nothing_is_reported_and_few_texts_make_one_step() -> None:
    embedder = HashingEmbedder()
    steps: list[tuple[int, int]] = []
    embed_documents(embedder, ["one"])  # nobody watching: one call, no reports
    assert steps == []
    with reporting(lambda done, total: steps.append((done, total))):
        embed_documents(embedder, ["one", "two"])
    assert steps == [(0, 2), (2, 2)]
    with reporting(lambda done, total: steps.append((done, total))):
        assert embed_documents(embedder, []) == []
    assert steps[-1] == (0, 0)
