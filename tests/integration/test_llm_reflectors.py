"""LLM reflectors against a real local HTTP server (OpenAI-compatible) and Bedrock's wire model.

The OpenAI-compatible reflector talks to a real ``http.server`` on 127.0.0.1 that speaks
the chat-completions shape with scripted replies. Bedrock's Converse API has no local
emulator (moto does not implement it), so the Bedrock tests use botocore's ``Stubber`` on
a real ``boto3`` client: the one place in this suite where a stub is acceptable. The
Stubber still checks every request against Bedrock's service model.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import httpx
import pytest
from botocore.config import Config
from botocore.stub import ANY, Stubber

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.adapters.reflectors.bedrock import BedrockReflector
from hindsight.adapters.reflectors.learned import LearnedReflector
from hindsight.adapters.reflectors.llm import REFLECTION_SYSTEM_PROMPT, LlmTimeoutError
from hindsight.adapters.reflectors.offline_first import OfflineFirstReflector
from hindsight.adapters.reflectors.openai_compatible import OpenAICompatibleReflector
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.commands import ReflectCommand, StoreMemoryCommand
from hindsight.core.errors import ReflectorOutputError, UnavailableError
from hindsight.core.models import Confidence, EpisodicMemory, FactCategory, Principal
from hindsight.core.policy import Policy
from tests.fakes import FixedClock, HashingEmbedder, SequentialIds, numbered_episode


def episode(number: int, content: str) -> EpisodicMemory:
    return numbered_episode(number, content)


EPISODES = [episode(1, "I'm allergic to peanuts."), episode(2, "我下周要去北京出差")]
VALID = json.dumps(
    {
        "facts": [
            {
                "content": "The user is allergic to peanuts.",
                "category": "constraint",
                "confidence": "high",
                "topic": "allergy:peanut",
                "source_memory_ids": ["mem_1"],
            },
            {
                "content": "用户下周（2026-06-08至2026-06-14）要去北京出差。",
                "category": "task",
                "confidence": "medium",
                "topic": "plan:trip:beijing",
                "source_memory_ids": ["mem_2"],
            },
        ]
    },
    ensure_ascii=False,
)
PRINCIPAL = Principal(tenant_id="acme")
UNKNOWN_SOURCE = VALID.replace('"mem_2"', '"mem_404"')
NOT_JSON = "Sorry, I can only answer in prose."


# --- a real chat-completions server --------------------------------------------------------------


class ChatServer:
    """Serves POST /v1/chat/completions from a script of (status, assistant text) replies."""

    def __init__(self) -> None:
        self.script: list[tuple[int, str]] = []
        self.delay = 0.0  # seconds before each reply (a model too slow for the timeout)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                server.requests.append(json.loads(self.rfile.read(length)))
                server.headers.append(dict(self.headers))
                status, text = server.script.pop(0) if server.script else (500, "no script")
                time.sleep(server.delay)
                if self.path != "/v1/chat/completions":
                    status, text = 404, "not found"
                if status == 200:
                    body = json.dumps(
                        {
                            "id": "chatcmpl-test",
                            "object": "chat.completion",
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop",
                                }
                            ],
                        }
                    ).encode()
                else:
                    body = json.dumps({"error": {"message": text}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server


def openai_reflector(server: ChatServer, **kwargs: Any) -> OpenAICompatibleReflector:
    return OpenAICompatibleReflector(
        base_url=server.base_url + "/", api_key="sk-test", model="test-model", **kwargs
    )


def test_openai_valid_answer(chat: ChatServer) -> None:
    chat.script = [(200, VALID)]
    reflector = openai_reflector(chat)
    output = reflector.reflect("u1", EPISODES, [])
    reflector.close()
    assert output.reflector == "openai:test-model" == reflector.label
    assert [(f.category, f.confidence, f.topic, f.source_memory_ids) for f in output.facts] == [
        (FactCategory.CONSTRAINT, Confidence.HIGH, "allergy:peanut", ["mem_1"]),
        (FactCategory.TASK, Confidence.MEDIUM, "plan:trip:beijing", ["mem_2"]),
    ]
    (request,) = chat.requests
    assert request["model"] == "test-model"
    assert request["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert "[mem_1]" in request["messages"][1]["content"]
    assert chat.headers[0]["Authorization"] == "Bearer sk-test"


def test_openai_invalid_then_valid_is_retried(chat: ChatServer) -> None:
    chat.script = [(200, NOT_JSON), (200, f"```json\n{VALID}\n```")]
    output = openai_reflector(chat).reflect("u1", EPISODES, [])
    assert len(output.facts) == 2
    assert len(chat.requests) == 2
    assert "rejected" in chat.requests[1]["messages"][1]["content"]


def test_openai_invalid_twice_raises(chat: ChatServer) -> None:
    chat.script = [(200, NOT_JSON), (200, '{"facts": [{"content": ""}]}')]
    with pytest.raises(ReflectorOutputError, match="nothing was stored"):
        openai_reflector(chat).reflect("u1", EPISODES, [])
    assert len(chat.requests) == 2


def test_openai_unknown_source_id_drops_that_fact_not_the_answer(chat: ChatServer) -> None:
    chat.script = [(200, UNKNOWN_SOURCE)]
    output = openai_reflector(chat).reflect("u1", EPISODES, [])
    assert [f.topic for f in output.facts] == ["allergy:peanut"]  # the other fact stands
    assert len(chat.requests) == 1  # nothing to retry
    assert output.usage is not None
    (failure,) = output.usage.failures
    assert "mem_404" in failure and "dropped" in failure


def offline_first(chat: ChatServer, budget: int | None = None, **kwargs: Any) -> Any:
    """The LLM reflector behind the default offline pass, for one reflection run."""
    return OfflineFirstReflector(
        LearnedReflector(static=True), openai_reflector(chat, **kwargs), token_budget=budget
    ).for_run()


def test_a_rejection_without_evidence_keeps_the_offline_fact_pending(chat: ChatServer) -> None:
    chat.script = [(200, json.dumps({"facts": [], "rejected": ["c1"]}))]
    episodes = [episode(1, "I'm allergic to peanuts.")]
    offline = LearnedReflector(static=True).reflect("u1", episodes, []).facts
    assert [f.confidence for f in offline] == [Confidence.HIGH]
    (kept,) = offline_first(chat).reflect("u1", episodes, []).facts
    assert (kept.content, kept.confidence) == (offline[0].content, Confidence.LOW)
    assert "c1 " in chat.requests[0]["messages"][1]["content"]  # it was shown as c1
    service = assemble(
        local_ports(
            InMemoryRecordStore(),
            InMemorySearchIndex(),
            HashingEmbedder(),
            OfflineFirstReflector(LearnedReflector(static=True), openai_reflector(chat)),
            clock=FixedClock(),
            ids=SequentialIds(),
        ),
        Policy(auto_approve_high_confidence=True),
    )
    chat.script = [(200, json.dumps({"facts": [], "rejected": ["c1"]}))]
    service.store(PRINCIPAL, StoreMemoryCommand(user_id="u1", content="I'm allergic to peanuts."))
    result = service.reflect(PRINCIPAL, ReflectCommand(user_id="u1"))
    assert [f["content"] for f in result.pending] == [kept.content]  # not auto-approved
    assert result.created == result.pending


def test_a_timed_out_call_is_charged_against_the_token_budget(chat: ChatServer) -> None:
    chat.delay = 0.5
    chat.script = [(200, VALID)]
    reflector = offline_first(chat, budget=3_000, timeout=0.2, max_tokens=1_000)
    output = reflector.reflect("u1", EPISODES, [])
    assert output.usage is not None and output.usage.calls == 1
    assert output.usage.input_tokens > 500  # the prompt it was sent
    assert output.usage.output_tokens == 1_000  # the answer it may still be writing
    assert "did not answer" in output.usage.failures[0]
    assert any("allergic" in f.content for f in output.facts)  # the offline facts kept
    chat.delay = 0.0
    chat.script = [(200, VALID)]
    again = reflector.reflect("u1", EPISODES, [])  # the same run: the budget is spent
    assert again.usage is not None and again.usage.calls == 0
    assert again.usage.budget_exhausted and len(chat.requests) == 1


@pytest.mark.parametrize(("status", "hint"), [(500, "HTTP 500"), (401, "API key"), (429, "rate")])
def test_openai_http_errors_are_unavailable(chat: ChatServer, status: int, hint: str) -> None:
    chat.script = [(status, "boom")]
    with pytest.raises(UnavailableError, match=hint):
        openai_reflector(chat).reflect("u1", EPISODES, [])
    assert len(chat.requests) == 1  # no retry on transport errors


def test_openai_endpoint_without_response_format_support(chat: ChatServer) -> None:
    chat.script = [(400, "response_format is not supported"), (200, VALID)]
    output = openai_reflector(chat).reflect("u1", EPISODES, [])
    assert len(output.facts) == 2
    assert "response_format" not in chat.requests[1]


def test_openai_without_system_role_opens_the_user_message_with_the_instructions(
    chat: ChatServer,
) -> None:
    chat.script = [(200, VALID)]
    output = openai_reflector(chat, system_role=False).reflect("u1", EPISODES, [])
    assert len(output.facts) == 2
    (request,) = chat.requests
    (message,) = request["messages"]
    assert message["role"] == "user"
    assert message["content"].startswith(REFLECTION_SYSTEM_PROMPT)
    assert "[mem_1]" in message["content"]


def test_openai_endpoint_refusing_the_system_role_is_asked_again_without_it(
    chat: ChatServer,
) -> None:
    chat.script = [
        (400, "System role not supported"),
        (200, VALID),
        (200, '{"intent": "", "entities": [], "open_tasks": [], "mood": ""}'),
    ]
    reflector = openai_reflector(chat)
    assert len(reflector.reflect("u1", EPISODES, []).facts) == 2
    reflector.summarize(EPISODES)  # a later call goes without the system role at once
    assert [[m["role"] for m in r["messages"]] for r in chat.requests] == [
        ["system", "user"],
        ["user"],
        ["user"],
    ]
    assert chat.requests[1]["messages"][0]["content"].startswith(REFLECTION_SYSTEM_PROMPT)


def test_openai_endpoint_refusing_json_mode_and_the_system_role(chat: ChatServer) -> None:
    chat.script = [
        (400, "response_format is not supported"),
        (400, "Conversation roles must alternate user/assistant/user/assistant/..."),
        (200, VALID),
    ]
    assert len(openai_reflector(chat).reflect("u1", EPISODES, []).facts) == 2
    last = chat.requests[2]
    assert "response_format" not in last and [m["role"] for m in last["messages"]] == ["user"]


def test_openai_other_bad_request_is_not_retried(chat: ChatServer) -> None:
    chat.script = [(400, "max_tokens is too large for this model")]
    with pytest.raises(UnavailableError, match="HTTP 400"):
        openai_reflector(chat).reflect("u1", EPISODES, [])
    assert len(chat.requests) == 1


def test_openai_unreachable_server_is_unavailable() -> None:
    with ChatServer() as server:
        base_url = server.base_url
    reflector = OpenAICompatibleReflector(base_url, "sk-test", "test-model", timeout=2.0)
    with pytest.raises(UnavailableError, match="cannot reach"):
        reflector.reflect("u1", EPISODES, [])


def test_openai_summarize(chat: ChatServer) -> None:
    chat.script = [
        (200, '{"intent": "订酒店", "entities": ["北京"], "open_tasks": ["出差"], "mood": ""}')
    ]
    with httpx.Client() as client:
        summary = openai_reflector(chat, http_client=client).summarize(EPISODES)
    assert (summary.intent, summary.entities, summary.summarizer) == (
        "订酒店",
        ["北京"],
        "openai:test-model",
    )


# --- Bedrock Converse through botocore's Stubber ----------------------------------------

MODEL_ID = "anthropic.claude-3-5-haiku-20241022-v1:0"


def converse_reply(text: str) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 100, "outputTokens": 50, "totalTokens": 150},
        "metrics": {"latencyMs": 10},
    }


EXPECTED_REQUEST = {
    "modelId": MODEL_ID,
    "system": ANY,
    "messages": ANY,
    "inferenceConfig": {"maxTokens": 2000, "temperature": 0.0},
}


@pytest.fixture
def bedrock() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def test_bedrock_valid_answer(bedrock: tuple[Any, Stubber]) -> None:
    client, stubber = bedrock
    stubber.add_response("converse", converse_reply(VALID), EXPECTED_REQUEST)
    reflector = BedrockReflector(MODEL_ID, client=client)
    output = reflector.reflect("u1", EPISODES, [])
    assert reflector.label == f"bedrock:{MODEL_ID}" == output.reflector
    assert [f.topic for f in output.facts] == ["allergy:peanut", "plan:trip:beijing"]


def test_bedrock_invalid_then_valid_is_retried(bedrock: tuple[Any, Stubber]) -> None:
    client, stubber = bedrock
    stubber.add_response("converse", converse_reply(NOT_JSON), EXPECTED_REQUEST)
    stubber.add_response("converse", converse_reply(f"Here you go:\n{VALID}"), EXPECTED_REQUEST)
    output = BedrockReflector(MODEL_ID, client=client).reflect("u1", EPISODES, [])
    assert len(output.facts) == 2


def test_bedrock_invalid_twice_raises(bedrock: tuple[Any, Stubber]) -> None:
    client, stubber = bedrock
    stubber.add_response("converse", converse_reply(NOT_JSON), EXPECTED_REQUEST)
    stubber.add_response("converse", converse_reply('{"facts": "none"}'), EXPECTED_REQUEST)
    with pytest.raises(ReflectorOutputError, match="nothing was stored"):
        BedrockReflector(MODEL_ID, client=client).reflect("u1", EPISODES, [])


def test_bedrock_unknown_source_id_drops_that_fact(bedrock: tuple[Any, Stubber]) -> None:
    client, stubber = bedrock
    stubber.add_response("converse", converse_reply(UNKNOWN_SOURCE), EXPECTED_REQUEST)
    output = BedrockReflector(MODEL_ID, client=client).reflect("u1", EPISODES, [])
    assert [f.topic for f in output.facts] == ["allergy:peanut"]
    stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("code", "status", "hint"),
    [
        ("AccessDeniedException", 403, "Model access"),
        ("ResourceNotFoundException", 404, "not found in this region"),
        ("InternalServerException", 500, "internal error"),
        ("ThrottlingException", 429, "throttled"),
    ],
)
def test_bedrock_client_errors_are_unavailable(
    bedrock: tuple[Any, Stubber], code: str, status: int, hint: str
) -> None:
    client, stubber = bedrock
    stubber.add_client_error("converse", code, "service says no", status)
    with pytest.raises(UnavailableError) as caught:
        BedrockReflector(MODEL_ID, client=client).reflect("u1", EPISODES, [])
    assert hint in caught.value.message
    assert "us-east-1" in caught.value.message
    assert code in caught.value.message


def test_bedrock_unreachable_endpoint_is_unavailable() -> None:
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 1}, connect_timeout=2, read_timeout=2),
    )
    with pytest.raises(UnavailableError, match="cannot reach Bedrock"):
        BedrockReflector(MODEL_ID, client=client).reflect("u1", EPISODES, [])


def test_bedrock_read_timeout_is_a_timeout() -> None:
    with socket.socket() as silent:  # accepts the connection, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=f"http://127.0.0.1:{silent.getsockname()[1]}",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"max_attempts": 1}, connect_timeout=2, read_timeout=1),
        )
        with pytest.raises(LlmTimeoutError, match="no answer in time"):
            BedrockReflector(MODEL_ID, client=client).reflect("u1", EPISODES, [])


def test_bedrock_summarize(bedrock: tuple[Any, Stubber]) -> None:
    client, stubber = bedrock
    stubber.add_response(
        "converse",
        converse_reply('{"intent": "Book a hotel", "entities": [], "open_tasks": [], "mood": ""}'),
        EXPECTED_REQUEST,
    )
    summary = BedrockReflector(MODEL_ID, client=client).summarize(EPISODES)
    assert summary.intent == "Book a hotel"
    assert summary.summarizer == f"bedrock:{MODEL_ID}"
