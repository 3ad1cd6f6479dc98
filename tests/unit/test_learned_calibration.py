"""Per-language calibration of the learned extractor: Chinese statements get their own
Platt scaling (fitted on Chinese dev dialogues by training/train_extractor.py), English ones
keep theirs; weights written before it existed still load (one scaling for all)."""

from __future__ import annotations

import numpy as np

from hindsight.adapters.reflectors.learned.model import (
    CATEGORIES,
    StatementModel,
    from_arrays,
    shipped_model,
)
from hindsight.adapters.reflectors.learned.segments import FEATURE_NAMES

DIM = 4


def model(platt_zh: tuple[float, float] | None) -> StatementModel:
    """A model whose logit is the vector's first value (no cheap signal counts)."""
    w = np.zeros(DIM + len(FEATURE_NAMES), dtype=np.float32)
    w[0] = 1.0
    return StatementModel(
        w=w,
        b=0.0,
        platt=(1.0, 0.0),
        threshold=0.5,
        category_w=np.zeros((DIM + len(FEATURE_NAMES), len(CATEGORIES)), dtype=np.float32),
        category_b=np.zeros(len(CATEGORIES), dtype=np.float32),
        embedding_model="test",
        dimension=DIM,
        platt_zh=platt_zh,
    )


def test_chinese_statements_use_the_chinese_scaling() -> None:
    texts = ["I love hiking", "我喜欢爬山", "I am a nurse", "我是护士"]
    vectors = np.zeros((len(texts), DIM), dtype=np.float32)
    vectors[:, 0] = [0.0, 0.0, 2.0, 2.0]
    p = model((1.0, 1.0)).probabilities(vectors, texts)
    sigmoid = lambda x: 1.0 / (1.0 + np.exp(-x))  # noqa: E731
    np.testing.assert_allclose(p, [sigmoid(0.0), sigmoid(1.0), sigmoid(2.0), sigmoid(3.0)], 1e-6)
    unscaled = model(None).probabilities(vectors, texts)
    np.testing.assert_allclose(
        unscaled, [sigmoid(0.0), sigmoid(0.0), sigmoid(2.0), sigmoid(2.0)], 1e-6
    )
    assert model((1.0, 1.0)).probabilities(np.zeros((0, DIM)), []).shape == (0,)


def test_weights_without_a_chinese_scaling_still_load() -> None:
    shipped = shipped_model()
    assert shipped.platt_zh is not None
    # the Chinese dev dialogues said: more Chinese statements are facts than the English
    # scaling makes of them (same slope, a higher intercept)
    assert shipped.platt_zh[0] == shipped.platt[0] and shipped.platt_zh[1] > shipped.platt[1]
    arrays = {
        "w": shipped.w,
        "b": np.float32(shipped.b),
        "platt": np.asarray(shipped.platt, dtype=np.float32),
        "threshold": np.float32(shipped.threshold),
        "category_w": shipped.category_w,
        "category_b": shipped.category_b,
        "embedding_model": np.asarray(shipped.embedding_model),
        "dimension": np.int32(shipped.dimension),
    }
    assert from_arrays(arrays).platt_zh is None
    with_zh = from_arrays({**arrays, "platt_zh": np.asarray(shipped.platt_zh, np.float32)})
    assert with_zh.platt_zh == shipped.platt_zh
