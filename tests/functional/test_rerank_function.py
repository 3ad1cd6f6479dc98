"""The rerank stage through the retrieve function: HINDSIGHT_RERANKER=openai:<model> wired
by the bootstrap, the LLM a scripted chat-completions endpoint on 127.0.0.1. The HTTP
answer's ``why`` carries the rerank part, scores never increase down the page or across
pages, and a failing endpoint leaves the first-stage order with a 200."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import build_memory_service, configure
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder
from tests.functional.conftest import ADMIN_KEY, KEYS, call
from tests.scripted_endpoints import ChatCompletionsEndpoint, Reply

MEMORIES = [
    "the user is allergic to peanuts",
    "the user plays tennis on Sunday",
    "用户对花生过敏",
    "the user drives a blue Toyota",
    "the user bought new running shoes",
    "lunch with the team on Friday",
    "peanut butter is in the cupboard",
    "the doctor confirmed the allergy in May",
]


@pytest.fixture
def chat() -> Iterator[ChatCompletionsEndpoint]:
    with ChatCompletionsEndpoint() as endpoint:
        yield endpoint


@pytest.fixture
def reranked_service(chat: ChatCompletionsEndpoint) -> Iterator[MemoryService]:
    settings = Settings.from_env(
        {
            "HINDSIGHT_BACKEND": "memory",
            "HINDSIGHT_API_KEYS": json.dumps(KEYS),
            "HINDSIGHT_RERANKER": "openai:tiny-llm",
            "HINDSIGHT_OPENAI_BASE_URL": f"{chat.url}/v1",
            "HINDSIGHT_RERANK_TOP_N": "5",
            "HINDSIGHT_RERANK_BUDGET_SECONDS": "30",
        }
    )
    built = build_memory_service(
        settings, embedder=HashingEmbedder(), reflector=RuleBasedReflector()
    )
    configure(settings, built)
    for content in MEMORIES:
        reply = call(
            "POST", "/v1/memories", body={"user_id": "u1", "content": content}, key=ADMIN_KEY
        )
        assert reply.status == 201, reply.body
    yield built
    configure()


def retrieve(**body: object):  # type: ignore[no-untyped-def]
    reply = call(
        "POST", "/v1/retrieve", body={"user_id": "u1", "min_score": 0, **body}, key=ADMIN_KEY
    )
    assert reply.status == 200, reply.body
    return reply.body


def test_why_carries_the_rerank_and_scores_never_increase_across_pages(
    reranked_service: MemoryService, chat: ChatCompletionsEndpoint
) -> None:
    query = "is the user allergic to peanuts"
    first = retrieve(query=query, top_k=3)
    second = retrieve(query=query, top_k=3, cursor=first["next_cursor"])
    results = first["results"] + second["results"]
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    assert results[0]["content"] == "the user is allergic to peanuts"
    for result in results[:5]:
        part = result["why"]["rerank"]
        assert part["reranker"] == "openai:tiny-llm"
        assert 0.0 <= part["relevance"] <= 1.0
        assert result["score"] == result["why"]["score"]
        assert result["score"] == pytest.approx(
            part["first_stage_score"] + part["change"], abs=2e-6
        )
    assert all("rerank" not in r["why"] for r in results[5:])
    assert first["partial"] is False
    assert len(chat.requests) == 2  # both pages hold some of the top 5


def test_a_failing_llm_leaves_the_first_stage_order_and_says_so(
    reranked_service: MemoryService, chat: ChatCompletionsEndpoint
) -> None:
    chat.script = [Reply(502, {"error": {"message": "bad gateway"}})]
    body = retrieve(query="peanuts", top_k=5)
    assert body["partial"] is False
    for result in body["results"]:
        assert "HTTP 502" in result["why"]["rerank"]["skipped"]
        assert "first_stage_score" not in result["why"]["rerank"]
