"""The learned reflector's static variant (``HINDSIGHT_REFLECTOR=learned``, the default): statement
vectors are means of e5's word embeddings, read from the bundled model file; the embedder
is never called for them, and stored vectors (the model's) are not mixed in."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from hindsight.adapters.reflectors.learned import LABEL, LearnedReflector
from hindsight.adapters.reflectors.learned.model import STATIC_WEIGHTS_FILE, shipped_model
from hindsight.adapters.reflectors.learned.static import STATIC_MODEL_NAME, StaticStatementVectors
from hindsight.bootstrap import build_reflector
from hindsight.core.errors import ConfigurationError
from hindsight.core.models import EpisodicMemory, StoredVector
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder

T0 = datetime(2026, 6, 3, 9, 0, tzinfo=UTC)


class RecordingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(dimension=384, model_name="intfloat/multilingual-e5-small")
        self.embedded: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        return super().embed_documents(texts)


@pytest.fixture(scope="module")
def vectors() -> StaticStatementVectors:
    return StaticStatementVectors()


def test_static_vectors_are_unit_rows_the_same_for_the_same_text(
    vectors: StaticStatementVectors,
) -> None:
    texts = ["I love hiking.", "我喜欢爬山。", "I love hiking.", "The stock market fell."]
    rows = vectors.get(texts)
    assert rows.shape == (4, 384) and rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(rows[0], rows[2])
    assert rows[0] @ rows[3] < 0.999  # different words, a different vector
    assert vectors.get([]).shape == (0, 384)


def episode(number: int, content: str) -> EpisodicMemory:
    when = T0 + timedelta(minutes=number)
    return EpisodicMemory(
        memory_id=f"mem_{number:03d}",
        tenant_id="t1",
        user_id="u1",
        content=content,
        occurred_at=when,
        created_at=when,
        updated_at=when,
    )


def test_the_static_reflector_never_embeds_and_ignores_stored_vectors() -> None:
    embedder = RecordingEmbedder()
    reflector = LearnedReflector(embedder, static=True)  # type: ignore[arg-type]
    assert reflector.label == LABEL
    episodes = [episode(1, "I'm allergic to peanuts."), episode(2, "我是一名护士。")]
    stored = {
        e.memory_id: StoredVector(model=embedder.model_name, values=np.ones(384, np.float32))
        for e in episodes
    }
    plain = reflector.reflect("u1", episodes, [])
    given = reflector.reflect_with_vectors("u1", episodes, [], stored)
    assert embedder.embedded == []
    assert [f.content for f in plain.facts] == [f.content for f in given.facts]
    assert any("peanut" in f.content for f in plain.facts)
    assert any("护士" in f.content for f in plain.facts)


def test_the_static_weights_are_their_own() -> None:
    static = shipped_model(STATIC_WEIGHTS_FILE)
    assert static.embedding_model == STATIC_MODEL_NAME
    assert shipped_model().embedding_model != STATIC_MODEL_NAME
    with pytest.raises(ConfigurationError, match="trained on"):
        LearnedReflector(RecordingEmbedder(), model=static)  # type: ignore[arg-type]


def test_bootstrap_builds_the_static_reflector() -> None:
    for spec in ("", "learned", "learned-static"):  # unset, named, the former name
        built = build_reflector(Settings(reflector=spec), RecordingEmbedder())  # type: ignore[arg-type]
        assert isinstance(built, LearnedReflector) and built.label == LABEL
    assert isinstance(build_reflector(Settings()), LearnedReflector)  # no embedder needed
    under_llm = build_reflector(
        Settings(reflector="openai:some-model", openai_base_url="http://127.0.0.1:9/v1")
    )
    offline = under_llm._offline  # type: ignore[attr-defined]
    assert isinstance(offline, LearnedReflector) and offline.label == LABEL  # the offline pass
