"""Bedrock Titan V2 embedder against botocore's Stubber (moto's bedrock-runtime returns
an empty body for InvokeModel, so it cannot stand in for embeddings)."""

from __future__ import annotations

import io
import json

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from hindsight.adapters.embedders.bedrock_embedder import BedrockTitanEmbedder
from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.errors import ConfigurationError, UnavailableError
from hindsight.core.ports import Embedder


def runtime_client():  # type: ignore[no-untyped-def]
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def body(values: list[float]) -> StreamingBody:
    raw = json.dumps({"embedding": values, "inputTextTokenCount": 3}).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def expect(stubber: Stubber, text: str, values: list[float], dimensions: int = 256) -> None:
    stubber.add_response(
        "invoke_model",
        {"body": body(values), "contentType": "application/json"},
        {
            "modelId": "amazon.titan-embed-text-v2:0",
            "body": json.dumps(
                {
                    "inputText": text,
                    "dimensions": dimensions,
                    "normalize": True,
                    "embeddingTypes": ["float"],
                }
            ),
            "contentType": "application/json",
            "accept": "application/json",
        },
    )


def test_embeds_with_invoke_model_and_returns_unit_float32() -> None:
    client = runtime_client()
    embedder = BedrockTitanEmbedder(dimensions=256, client=client)
    assert isinstance(embedder, Embedder)
    with Stubber(client) as stubber:
        expect(stubber, "用户对花生过敏", [3.0] + [0.0] * 255)
        expect(stubber, "peanuts", [0.0, 4.0] + [0.0] * 254)
        query = embedder.embed_query("用户对花生过敏")
        docs = embedder.embed_documents(["peanuts"])
        stubber.assert_no_pending_responses()
    assert query.dtype == np.float32 and query.shape == (256,)
    assert query[0] == pytest.approx(1.0)
    assert docs.shape == (1, 256) and docs[0, 1] == pytest.approx(1.0)
    assert embedder.model_name == "bedrock:amazon.titan-embed-text-v2:0@256"


def test_access_denied_says_to_enable_the_model() -> None:
    client = runtime_client()
    embedder = BedrockTitanEmbedder(client=client)
    with Stubber(client) as stubber:
        stubber.add_client_error("invoke_model", "AccessDeniedException", "no access")
        with pytest.raises(UnavailableError, match="enable access to the model"):
            embedder.embed_query("hello")


def test_a_wrong_sized_answer_is_unavailable() -> None:
    client = runtime_client()
    embedder = BedrockTitanEmbedder(dimensions=256, client=client)
    with Stubber(client) as stubber:
        expect(stubber, "hello", [1.0, 2.0])
        with pytest.raises(UnavailableError, match="256-dimensional"):
            embedder.embed_query("hello")


def test_factory_builds_titan_from_the_spec() -> None:
    default = build_embedder("bedrock:amazon.titan-embed-text-v2:0")
    assert isinstance(default, BedrockTitanEmbedder)
    assert (default.model_id, default.dimension) == ("amazon.titan-embed-text-v2:0", 1024)
    small = build_embedder("bedrock:amazon.titan-embed-text-v2:0@512")
    assert small.dimension == 512
    with pytest.raises(ConfigurationError, match="256, 512 or 1024"):
        build_embedder("bedrock:amazon.titan-embed-text-v2:0@300")
