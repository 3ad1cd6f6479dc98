"""HINDSIGHT_RERANKER and its knobs: what each value builds, and what a bad one says."""

from __future__ import annotations

import pytest

from hindsight.adapters.rerankers.bedrock import BedrockReranker
from hindsight.adapters.rerankers.cross_encoder import CrossEncoderReranker
from hindsight.adapters.rerankers.openai_compatible import OpenAICompatibleReranker
from hindsight.bootstrap import build_reranker, policy_from
from hindsight.core.errors import ConfigurationError
from hindsight.settings import Settings


def test_off_by_default() -> None:
    settings = Settings.from_env({})
    assert settings.reranker == "none"
    assert build_reranker(settings) is None
    policy = policy_from(settings)
    assert (policy.rerank_top_n, policy.rerank_budget_seconds) == (20, 2.0)


@pytest.mark.parametrize("value", ["none", "NONE", "off", "", "  none  "])
def test_none_in_any_spelling_is_off(value: str) -> None:
    assert build_reranker(Settings.from_env({"HINDSIGHT_RERANKER": value})) is None


def test_each_kind_builds_its_adapter_without_loading_or_calling_anything() -> None:
    def built(**env: str) -> object:
        variables = {f"HINDSIGHT_{name.upper()}": value for name, value in env.items()}
        return build_reranker(Settings.from_env(variables))

    local = built(reranker="cross-encoder:/models/ms-marco-MiniLM-L-6-v2")
    assert isinstance(local, CrossEncoderReranker)
    assert local.label == "cross-encoder:/models/ms-marco-MiniLM-L-6-v2"
    bedrock = built(reranker="bedrock:amazon.rerank-v1:0", bedrock_region="us-west-2")
    assert isinstance(bedrock, BedrockReranker)
    assert bedrock.model_arn() == "arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0"
    llm = built(reranker="openai:gpt-4o-mini", openai_base_url="http://127.0.0.1:9/v1")
    assert isinstance(llm, OpenAICompatibleReranker) and llm.label == "openai:gpt-4o-mini"


@pytest.mark.parametrize(
    ("variables", "words"),
    [
        ({"HINDSIGHT_RERANKER": "cohere:rerank-v3"}, "use none, cross-encoder:<path or model"),
        ({"HINDSIGHT_RERANKER": "cross-encoder"}, "is not a reranker"),
        ({"HINDSIGHT_RERANKER": "bedrock:"}, "bedrock:<model id or ARN>"),
        ({"HINDSIGHT_RERANK_TOP_N": "0"}, "a whole number between 1 and 100"),
        ({"HINDSIGHT_RERANK_TOP_N": "many"}, "HINDSIGHT_RERANK_TOP_N"),
        ({"HINDSIGHT_RERANK_BUDGET_SECONDS": "0"}, "a number > 0 and ≤ 60"),
    ],
)
def test_a_bad_value_names_the_variable_and_what_to_set(
    variables: dict[str, str], words: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_env(variables)
    assert words in caught.value.message
    assert next(iter(variables)) in caught.value.message
