"""The Bedrock and OpenAI-compatible rerankers against scripted local endpoints that speak
the real wire formats (tests/scripted_endpoints.py): the request each sends, the answer
each reads, and what a slow, failing or garbled endpoint does, to the adapter and through
the rerank stage (the first-stage order stands, within the budget)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight.adapters.rerankers.bedrock import BedrockReranker
from hindsight.adapters.rerankers.openai_compatible import (
    SYSTEM,
    OpenAICompatibleReranker,
    RerankerOutputError,
    parse_scores,
)
from hindsight.bootstrap import build_memory_service, build_reranker
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import ConfigurationError, UnavailableError
from hindsight.core.models import Principal
from hindsight.core.ports import Reranker
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder, ScriptedReflector
from tests.scripted_endpoints import (
    BedrockRerankEndpoint,
    ChatCompletionsEndpoint,
    Reply,
    chat_reply,
)

QUERY = "where does the user live"
TEXTS = [
    "the user plays tennis on Sunday",
    "the user does live in Berlin",
    "用户住在杭州",
    "where the user parks the car",
]
MODEL = "amazon.rerank-v1:0"


@pytest.fixture
def bedrock(monkeypatch: pytest.MonkeyPatch) -> Iterator[BedrockRerankEndpoint]:
    """The endpoint, and the environment boto3 builds the adapter's own client from."""
    with BedrockRerankEndpoint() as endpoint:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME", endpoint.url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        yield endpoint


@pytest.fixture
def chat() -> Iterator[ChatCompletionsEndpoint]:
    with ChatCompletionsEndpoint() as endpoint:
        yield endpoint


def bedrock_reranker(timeout: float = 2.0) -> BedrockReranker:
    return BedrockReranker(MODEL, region="eu-central-1", timeout=timeout)


def openai_reranker(chat: ChatCompletionsEndpoint, budget: float = 2.0, **more: Any) -> Reranker:
    settings = Settings(
        reranker="openai:tiny-llm",
        openai_base_url=f"{chat.url}/v1",
        openai_api_key="sk-test",
        rerank_budget_seconds=budget,
        **more,
    )
    reranker = build_reranker(settings)
    assert isinstance(reranker, OpenAICompatibleReranker)
    return reranker


def service_with(settings: Settings, principal: Principal):  # type: ignore[no-untyped-def]
    service = build_memory_service(
        settings, embedder=HashingEmbedder(), reflector=ScriptedReflector()
    )
    for text in TEXTS * 2:
        service.store(principal, StoreMemoryCommand(user_id="u1", content=text))
    return service


def retrieve(service, principal: Principal):  # type: ignore[no-untyped-def]
    command = RetrieveCommand(user_id="u1", query=QUERY, min_score=0, top_k=8)
    return service.retrieve(principal, command)


# --- Bedrock's Rerank API -----------------------------------------------------------------


def test_bedrock_sends_the_rerank_request_and_reads_each_sources_relevance(
    bedrock: BedrockRerankEndpoint,
) -> None:
    reranker = bedrock_reranker()
    assert isinstance(reranker, Reranker) and reranker.label == f"bedrock:{MODEL}"
    relevances = reranker.rerank(QUERY, TEXTS)
    # the answer lists results best first; each lands on its source's index
    assert relevances == [0.4, 0.8, 0.0, 0.6]
    (request,) = bedrock.requests
    assert request.path == "/rerank"
    assert request.headers["Authorization"].startswith("AWS4-HMAC-SHA256")
    assert "/eu-central-1/bedrock/aws4_request" in request.headers["Authorization"]
    assert request.body == {
        "queries": [{"type": "TEXT", "textQuery": {"text": QUERY}}],
        "sources": [
            {
                "type": "INLINE",
                "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": t}},
            }
            for t in TEXTS
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "numberOfResults": 4,
                "modelConfiguration": {
                    "modelArn": f"arn:aws:bedrock:eu-central-1::foundation-model/{MODEL}"
                },
            },
        },
    }


def test_bedrock_takes_a_model_arn_as_given(bedrock: BedrockRerankEndpoint) -> None:
    arn = "arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0"
    BedrockReranker(arn, region="us-west-2").rerank(QUERY, TEXTS[:2])
    configuration = bedrock.requests[0].body["rerankingConfiguration"]
    assert configuration["bedrockRerankingConfiguration"]["modelConfiguration"]["modelArn"] == arn


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (Reply(500, {"message": "boom"}, error_type="InternalServerException"), "Internal"),
        (Reply(403, {"message": "no"}, error_type="AccessDeniedException"), "Model access"),
        (Reply(429, {"message": "slow down"}, error_type="ThrottlingException"), "throttled"),
        (Reply(200, b"<html>not json</html>"), "0 of 4"),
        (Reply(200, {"results": [{"index": 0, "relevanceScore": 0.5}]}), "1 of 4"),
        (Reply(200, {"results": [{"index": 9, "relevanceScore": 0.5}] * 4}), "0 of 4"),
    ],
    ids=["5xx", "access-denied", "throttled", "garbage", "left-out", "bad-index"],
)
def test_bedrock_failures_are_unavailable_errors_after_one_request(
    bedrock: BedrockRerankEndpoint, reply: Reply, words: str
) -> None:
    bedrock.script = [reply]
    with pytest.raises(UnavailableError) as caught:
        bedrock_reranker().rerank(QUERY, TEXTS)
    assert words in caught.value.message
    assert len(bedrock.requests) == 1  # no retries: they would outlast the budget


def test_bedrock_scores_outside_zero_to_one_are_clamped(bedrock: BedrockRerankEndpoint) -> None:
    results = [{"index": 0, "relevanceScore": 1.7}, {"index": 1, "relevanceScore": -0.2}]
    bedrock.script = [Reply(200, {"results": results})]
    assert bedrock_reranker().rerank(QUERY, TEXTS[:2]) == [1.0, 0.0]


def test_a_slow_bedrock_times_out_at_the_budget(bedrock: BedrockRerankEndpoint) -> None:
    bedrock.script = [Reply(delay=5.0)]
    started = time.monotonic()
    with pytest.raises(UnavailableError, match=r"timeout|timed out"):
        bedrock_reranker(timeout=0.3).rerank(QUERY, TEXTS)
    assert time.monotonic() - started < 2.0


def test_retrieve_reranks_with_bedrock_and_stands_when_it_is_slow(
    bedrock: BedrockRerankEndpoint,
) -> None:
    principal = Principal(tenant_id="t1")
    settings = Settings(
        backend="memory",
        reranker=f"bedrock:{MODEL}",
        region="eu-central-1",
        rerank_top_n=4,
        rerank_budget_seconds=30,  # a loaded test machine is slow; the endpoint is not
    )
    service = service_with(settings, principal)
    result = retrieve(service, principal)
    top = result.results[:4]
    assert all(r.why["rerank"]["reranker"] == f"bedrock:{MODEL}" for r in top)
    assert "live" in top[0].content
    assert [r.score for r in result.results] == sorted(
        (r.score for r in result.results), reverse=True
    )
    bedrock.script = [Reply(delay=15.0)]
    slow = service_with(settings.model_copy(update={"rerank_budget_seconds": 1.0}), principal)
    started = time.monotonic()
    stood = retrieve(slow, principal)
    assert time.monotonic() - started < 5.0
    assert all("skipped" in r.why["rerank"] for r in stood.results[:4])
    assert stood.partial is False


# --- an OpenAI-compatible LLM -------------------------------------------------------------


def test_the_llm_is_asked_for_strict_json_scores_and_they_become_relevances(
    chat: ChatCompletionsEndpoint,
) -> None:
    reranker = openai_reranker(chat)
    assert reranker.label == "openai:tiny-llm"
    assert reranker.rerank(QUERY, TEXTS) == [0.4, 0.8, 0.0, 0.6]
    (request,) = chat.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-test"
    body = request.body
    assert body["model"] == "tiny-llm" and body["temperature"] == 0.0
    assert body["response_format"] == {"type": "json_object"}
    assert body["max_tokens"] == OpenAICompatibleReranker.max_tokens(20)
    assert body["messages"][0] == {"role": "system", "content": SYSTEM}
    sent = json.loads(body["messages"][1]["content"])
    assert sent == {
        "query": QUERY,
        "memories": [{"id": i, "text": t} for i, t in enumerate(TEXTS, 1)],
    }


def test_a_fenced_json_answer_is_read(chat: ChatCompletionsEndpoint) -> None:
    fenced = '```json\n{"scores": [{"id": 2, "score": 9}, {"id": 1, "score": 3}]}\n```'
    chat.script = [Reply(body=chat_reply(fenced))]
    assert openai_reranker(chat).rerank(QUERY, TEXTS[:2]) == [0.3, 0.9]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Memory 2 is the most relevant.", "not JSON"),
        ('{"ranking": [2, 1]}', 'no "scores"'),
        ('{"scores": [{"id": 1, "score": 3}]}', "leaves out memories [2]"),
        ('{"scores": [{"id": 1, "score": 3}, {"id": 1, "score": 4}]}', "scored twice"),
        ('{"scores": [{"id": 1, "score": 11}, {"id": 2, "score": 4}]}', "not 0 to 10"),
        ('{"scores": [{"id": 1, "score": "high"}, {"id": 2, "score": 4}]}', "not 0 to 10"),
        ('{"scores": [{"id": 3, "score": 1}, {"id": 2, "score": 4}]}', "no memory id"),
        ('{"scores": [{"id": true, "score": 1}, {"id": 2, "score": 4}]}', "no memory id"),
    ],
)
def test_bad_llm_output_is_refused_whole(
    chat: ChatCompletionsEndpoint, text: str, words: str
) -> None:
    chat.script = [Reply(body=chat_reply(text))]
    with pytest.raises(RerankerOutputError, match=words.replace("[", r"\[").replace("]", r"\]")):
        openai_reranker(chat).rerank(QUERY, TEXTS[:2])
    with pytest.raises(RerankerOutputError):
        parse_scores(text, 2)


def test_a_failing_endpoint_is_unavailable(chat: ChatCompletionsEndpoint) -> None:
    chat.script = [Reply(503, {"error": {"message": "overloaded"}})]
    with pytest.raises(UnavailableError, match="HTTP 503"):
        openai_reranker(chat).rerank(QUERY, TEXTS)


def test_without_a_base_url_the_setting_says_what_to_set() -> None:
    with pytest.raises(ConfigurationError, match="HINDSIGHT_OPENAI_BASE_URL"):
        build_reranker(Settings(reranker="openai:tiny-llm"))


@pytest.mark.parametrize(
    "reply",
    [
        Reply(delay=15.0),
        Reply(500, {"error": {"message": "boom"}}),
        Reply(body=chat_reply("I would rather not say.")),
    ],
    ids=["slow", "5xx", "garbage"],
)
def test_retrieve_stands_on_the_first_stage_when_the_llm_fails(
    chat: ChatCompletionsEndpoint, reply: Reply
) -> None:
    principal = Principal(tenant_id="t1")
    settings = Settings(
        backend="memory",
        reranker="openai:tiny-llm",
        openai_base_url=f"{chat.url}/v1",
        rerank_top_n=4,
        rerank_budget_seconds=30,  # a loaded test machine is slow; the endpoint is not
    )
    good = retrieve(service_with(settings, principal), principal)
    assert "live" in good.results[0].content
    assert all("relevance" in r.why["rerank"] for r in good.results[:4])
    chat.script = [reply]
    service = service_with(settings.model_copy(update={"rerank_budget_seconds": 1.0}), principal)
    started = time.monotonic()
    stood = retrieve(service, principal)
    assert time.monotonic() - started < 5.0
    assert all("skipped" in r.why["rerank"] for r in stood.results[:4])
    assert all("rerank" not in r.why for r in stood.results[4:])
    scores = [r.score for r in stood.results]
    assert scores == [r.why["score"] for r in stood.results]


# --- both bootstraps wire it ---------------------------------------------------------------


def test_the_embedded_and_aws_bootstraps_rerank_with_the_configured_reranker(
    bedrock: BedrockRerankEndpoint, tmp_path: Path
) -> None:
    """HINDSIGHT_RERANKER reaches retrieve through build_embedded_service (SQLite) and
    build_aws_service (DynamoDB on moto; the index in process, the stream's stand-in)."""
    from hindsight.adapters.memory import InMemorySearchIndex
    from hindsight.bootstrap import build_aws_service, build_embedded_service
    from tests.integration.dynamodb_local import moto_client, require_moto

    rerank: dict[str, Any] = {
        "reranker": f"bedrock:{MODEL}",
        "region": "eu-central-1",
        "rerank_top_n": 4,
        "rerank_budget_seconds": 30,
    }
    embedded = build_embedded_service(
        Settings(data_dir=tmp_path, **rerank),
        embedder=HashingEmbedder(),
        reflector=ScriptedReflector(),
    )
    client = moto_client()
    require_moto(client)
    table = f"hindsight-rerank-{uuid.uuid4().hex[:10]}"
    aws = build_aws_service(
        Settings(backend="aws", table=table, **rerank),
        embedder=HashingEmbedder(),
        reflector=ScriptedReflector(),
        index=InMemorySearchIndex(),
        dynamodb_client=client,
    )
    try:
        principal = Principal(tenant_id="t1")
        for service in (embedded, aws):
            for text in TEXTS:
                service.store(principal, StoreMemoryCommand(user_id="u1", content=text))
            top = retrieve(service, principal).results[0]
            assert top.why["rerank"]["reranker"] == f"bedrock:{MODEL}", top.why
            assert "live" in top.content
        assert len(bedrock.requests) == 2
    finally:
        client.delete_table(TableName=table)


def test_without_a_system_role_the_instructions_open_the_user_message(
    chat: ChatCompletionsEndpoint,
) -> None:
    reranker = openai_reranker(chat, openai_system_role=False)
    assert reranker.rerank(QUERY, TEXTS[:2]) == [0.4, 0.8]
    (message,) = chat.requests[0].body["messages"]
    assert message["role"] == "user" and message["content"].startswith(SYSTEM)
