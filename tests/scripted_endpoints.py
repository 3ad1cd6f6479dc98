"""Scripted HTTP endpoints on 127.0.0.1 that speak real wire formats: Bedrock Agent
Runtime's ``POST /rerank`` (rest-json) and OpenAI's ``POST /v1/chat/completions``.

Each reply comes from a script (a list of ``Reply``; the last one repeats): the body the
real service would send, an error with its status and error type, a delay before it, or
bytes that are no JSON at all. Every request is kept (path, headers, JSON body) so tests
can check what the client sent.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: ``status`` with ``body`` (JSON-encoded unless bytes), after
    ``delay`` seconds; ``error_type`` sets rest-json's ``x-amzn-ErrorType`` header."""

    status: int = 200
    body: Any = None
    delay: float = 0.0
    error_type: str = ""


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class ScriptedEndpoint:
    """A threaded HTTP server answering POSTs from ``script`` (``answer`` fills a 200 body
    left None from the request)."""

    script: list[Reply] = field(default_factory=lambda: [Reply()])
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        endpoint = self
        self.released = threading.Event()  # ends a delay early (a test's teardown)

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw
                request = Request(self.path, dict(self.headers), body)
                endpoint.requests.append(request)
                reply = endpoint.script.pop(0) if len(endpoint.script) > 1 else endpoint.script[0]
                if reply.delay:
                    endpoint.released.wait(reply.delay)
                payload = reply.body if reply.body is not None else endpoint.answer(request)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    if reply.error_type:
                        self.send_header("x-amzn-ErrorType", reply.error_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting
                    return

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def answer(self, request: Request) -> Any:
        raise NotImplementedError

    def __enter__(self) -> ScriptedEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def overlap(query: str, text: str) -> float:
    """A relevance from shared words: the share of the query's words the text holds."""
    words = set(re.findall(r"\w+", query.lower()))
    held = set(re.findall(r"\w+", text.lower()))
    return len(words & held) / len(words) if words else 0.0


class BedrockRerankEndpoint(ScriptedEndpoint):
    """Bedrock Agent Runtime's Rerank: ``{"results": [{"index", "relevanceScore"}]}``, best
    first, scored by word overlap, at most ``numberOfResults``."""

    def answer(self, request: Request) -> Any:
        body = request.body
        query = body["queries"][0]["textQuery"]["text"]
        texts = [s["inlineDocumentSource"]["textDocument"]["text"] for s in body["sources"]]
        wanted = body["rerankingConfiguration"]["bedrockRerankingConfiguration"].get(
            "numberOfResults", len(texts)
        )
        scored = sorted(
            ((overlap(query, text), index) for index, text in enumerate(texts)), reverse=True
        )
        results = [{"index": index, "relevanceScore": score} for score, index in scored]
        return {"results": results[:wanted]}


class ChatCompletionsEndpoint(ScriptedEndpoint):
    """OpenAI's chat completions; the assistant scores the memories the user message lists
    by word overlap, 0 to 10, unless the script gives the assistant's text
    (``Reply(body=chat_reply(text))``)."""

    def answer(self, request: Request) -> Any:
        # the JSON closes the last message (after the instructions, without a system role)
        user = json.loads(request.body["messages"][-1]["content"].rsplit("\n\n", 1)[-1])
        scores = [
            {"id": memory["id"], "score": round(10 * overlap(user["query"], memory["text"]))}
            for memory in user["memories"]
        ]
        return chat_reply(json.dumps({"scores": scores}))


def chat_reply(text: str) -> dict[str, Any]:
    """A chat-completions answer whose assistant message is ``text``."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20},
    }


def wait_for(condition: Any, seconds: float = 2.0) -> bool:
    """Whether ``condition()`` holds within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return bool(condition())
