"""Reflector on any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama...).

Each answer becomes a ``Completion``: the text of ``choices[0].message.content``, the
tokens of ``usage`` (estimated when the endpoint leaves it out), and how the model
stopped: ``finish_reason`` "length" is an answer cut off at ``max_tokens``, a
``message.refusal`` or ``finish_reason`` "content_filter" a refusal.

The instructions go as a system message. Some chat formats have no system role: Gemma's
(llama-cpp-python's ``gemma`` format drops the message without a word; Gemma 2's template
on vLLM answers 400 "System role not supported"). With ``system_role=False``
(``HINDSIGHT_OPENAI_SYSTEM_ROLE=false``) the instructions open the user message instead;
an endpoint that refuses a system message (a 400 naming the system role) gets the same
request that way at once, and every later one.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import httpx

from hindsight.adapters.reflectors.llm import Completion, Finish, LlmReflector, LlmTimeoutError
from hindsight.core.errors import UnavailableError
from hindsight.core.usecases.context import estimate_tokens

logger = logging.getLogger(__name__)

_STATUS_ADVICE = {
    401: "the API key was rejected; check HINDSIGHT_OPENAI_API_KEY",
    403: "the API key may not use this model",
    404: "the endpoint or model was not found; check HINDSIGHT_OPENAI_BASE_URL and the model",
    429: "rate limited or out of quota; retry later",
}


def _tokens(usage: Any, key: str, fallback: int) -> int:
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and value >= 0 else fallback


def _finish(choice: dict[str, Any], message: dict[str, Any]) -> tuple[Finish, str]:
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip():
        return "refused", refusal.strip()
    reason = choice.get("finish_reason")
    if reason == "content_filter":
        return "refused", "the endpoint's content filter stopped the answer"
    return ("length", "") if reason == "length" else ("stop", "")


# a 400 saying the chat format takes no system message ("System role not supported",
# "Conversation roles must alternate user/assistant/user/assistant/...")
_NO_SYSTEM_ROLE = re.compile(r"system (?:role|message|prompt)|roles must alternate", re.I)


def messages(system: str, user: str, system_role: bool) -> list[dict[str, str]]:
    """The chat messages of one call: the instructions as a system message, or opening the
    user message when the endpoint's chat format has no system role."""
    if system_role:
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return [{"role": "user", "content": f"{system}\n\n{user}"}]


class OpenAICompatibleReflector(LlmReflector):
    """POSTs to ``{base_url}/chat/completions`` asking for a JSON object."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        http_client: httpx.Client | None = None,
        timeout: float = 60.0,
        max_tokens: int = 2_000,
        temperature: float = 0.0,
        system_role: bool = True,
    ) -> None:
        super().__init__(complete=self._chat, label=f"openai:{model}", max_output_tokens=max_tokens)
        self._url = f"{base_url.rstrip('/')}/chat/completions"
        self._api_key = api_key
        self._model = model
        self._client = http_client
        self._timeout = timeout
        self._max_tokens = max_tokens
        self._temperature = temperature
        self._system_role = system_role

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(timeout=self._timeout)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            return self._http().post(self._url, json=body, headers=headers, timeout=self._timeout)
        except httpx.TimeoutException as exc:
            raise LlmTimeoutError(
                f"OpenAI-compatible reflector unavailable: {self._url} did not answer within "
                f"{self._timeout:g}s; retry later"
            ) from exc
        except httpx.HTTPError as exc:
            raise UnavailableError(
                f"OpenAI-compatible reflector unavailable: cannot reach {self._url} ({exc}); "
                "check HINDSIGHT_OPENAI_BASE_URL"
            ) from exc

    def chat(self, system: str, user: str) -> Completion:
        """One chat completion asking for a JSON object (the LLM reranker asks through it)."""
        return self._chat(system, user)

    def _chat(self, system: str, user: str) -> Completion:
        body: dict[str, Any] = {
            "model": self._model,
            "messages": messages(system, user, self._system_role),
            "temperature": self._temperature,
            "max_tokens": self._max_tokens,
            "response_format": {"type": "json_object"},
        }
        response = self._post(body)
        for _ in range(2):  # each refused feature is dropped once: JSON mode, the system role
            if response.status_code != 400:
                break
            if "response_format" in body and "response_format" in response.text:
                logger.info("endpoint rejects response_format; retrying without it")
                body.pop("response_format")
            elif self._system_role and _NO_SYSTEM_ROLE.search(response.text):
                logger.warning(
                    "endpoint rejects the system role; the instructions open the user message "
                    "from now on (HINDSIGHT_OPENAI_SYSTEM_ROLE=false says so up front) model=%s",
                    self._model,
                )
                self._system_role = False
                body["messages"] = messages(system, user, system_role=False)
            else:
                break
            response = self._post(body)
        if response.status_code >= 400:
            advice = _STATUS_ADVICE.get(response.status_code, "the endpoint returned an error")
            raise UnavailableError(
                f"OpenAI-compatible reflector unavailable ({self._model} at {self._url}): "
                f"HTTP {response.status_code}, {advice}"
            )
        try:
            payload = response.json()
            choice = payload["choices"][0]
            message = choice["message"]
            content = message.get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise UnavailableError(
                f"OpenAI-compatible reflector unavailable: {self._url} did not answer in the "
                "chat-completions format"
            ) from exc
        text = content if isinstance(content, str) else ""
        finish, refusal = _finish(choice, message)
        if finish == "length":
            logger.warning(
                "answer cut off at max_tokens=%d model=%s", self._max_tokens, self._model
            )
        usage = payload.get("usage")
        return Completion(
            text=text,
            input_tokens=_tokens(usage, "prompt_tokens", estimate_tokens(system + user)),
            output_tokens=_tokens(usage, "completion_tokens", estimate_tokens(text)),
            finish=finish,
            refusal=refusal,
            max_tokens=self._max_tokens,
        )
