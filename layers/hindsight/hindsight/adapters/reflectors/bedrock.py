"""Reflector on Amazon Bedrock through the model-agnostic Converse API.

Each answer becomes a ``Completion`` with the tokens of the response's ``usage``;
``stopReason`` "max_tokens" is an answer cut off at the limit, "guardrail_intervened"
and "content_filtered" a refusal.
"""

from __future__ import annotations

import logging
from typing import Any

from hindsight.adapters.reflectors.llm import Completion, Finish, LlmReflector, LlmTimeoutError
from hindsight.core.errors import UnavailableError
from hindsight.core.usecases.context import estimate_tokens

logger = logging.getLogger(__name__)

_ADVICE = {
    "AccessDeniedException": (
        "access to the model is denied: enable it under Bedrock > Model access in this "
        "region and allow bedrock:InvokeModel for the caller"
    ),
    "ResourceNotFoundException": (
        "the model id was not found in this region; check the id or use an inference "
        "profile id (e.g. us.<model id>)"
    ),
    "ValidationException": (
        "Bedrock rejected the request; check that the model id exists in this region and "
        "supports the Converse API"
    ),
    "ThrottlingException": "Bedrock throttled the request; retry later or raise the quota",
    "ServiceQuotaExceededException": "the Bedrock quota is exhausted; retry later",
    "ModelTimeoutException": "the model took too long to answer; retry later",
    "ModelNotReadyException": "the model is not ready yet; retry in a minute",
    "ServiceUnavailableException": "Bedrock is unavailable right now; retry later",
    "InternalServerException": "Bedrock had an internal error; retry later",
    "ModelErrorException": "the model failed to answer; retry later",
}


_REFUSALS = {
    "guardrail_intervened": "a Bedrock guardrail stopped the answer",
    "content_filtered": "Bedrock's content filter stopped the answer",
}


class BedrockReflector(LlmReflector):
    """Reflect and summarise with a Bedrock model; the boto3 client may be injected."""

    def __init__(
        self,
        model_id: str,
        client: Any | None = None,
        region: str | None = None,
        max_tokens: int = 2_000,
        temperature: float = 0.0,
    ) -> None:
        super().__init__(
            complete=self._converse, label=f"bedrock:{model_id}", max_output_tokens=max_tokens
        )
        self._model_id = model_id
        self._client = client
        self._region = region
        self._max_tokens = max_tokens
        self._temperature = temperature

    def _bedrock(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("bedrock-runtime", region_name=self._region)
        return self._client

    def _where(self) -> str:
        region = self._region or getattr(getattr(self._client, "meta", None), "region_name", None)
        return f"model {self._model_id} in region {region or 'default'}"

    def _converse(self, system: str, user: str) -> Completion:
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            NoCredentialsError,
            ReadTimeoutError,
        )

        try:
            response = self._bedrock().converse(
                modelId=self._model_id,
                system=[{"text": system}],
                messages=[{"role": "user", "content": [{"text": user}]}],
                inferenceConfig={"maxTokens": self._max_tokens, "temperature": self._temperature},
            )
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", "Unknown"))
            advice = _ADVICE.get(code, "Bedrock returned an error")
            logger.warning("bedrock error code=%s %s", code, self._where())
            raise UnavailableError(
                f"Bedrock reflector unavailable ({self._where()}): {advice} "
                f"[{code}: {error.get('Message', '')}]"
            ) from exc
        except NoCredentialsError as exc:
            raise UnavailableError(
                f"Bedrock reflector unavailable ({self._where()}): no AWS credentials found; "
                "configure credentials or use HINDSIGHT_REFLECTOR=rule-based"
            ) from exc
        except ReadTimeoutError as exc:
            raise LlmTimeoutError(
                f"Bedrock reflector unavailable ({self._where()}): no answer in time ({exc}); "
                "retry later"
            ) from exc
        except BotoCoreError as exc:
            raise UnavailableError(
                f"Bedrock reflector unavailable ({self._where()}): cannot reach Bedrock "
                f"({exc}); check the region and network"
            ) from exc
        blocks = response.get("output", {}).get("message", {}).get("content", [])
        text = "".join(block.get("text", "") for block in blocks if isinstance(block, dict))
        stop = response.get("stopReason")
        finish: Finish = "stop"
        if stop == "max_tokens":
            logger.warning("bedrock answer truncated at max_tokens=%d", self._max_tokens)
            finish = "length"
        elif stop in _REFUSALS:
            finish = "refused"
        usage = response.get("usage") or {}
        return Completion(
            text=text,
            input_tokens=int(usage.get("inputTokens") or estimate_tokens(system + user)),
            output_tokens=int(usage.get("outputTokens") or estimate_tokens(text)),
            finish=finish,
            refusal=_REFUSALS.get(str(stop), ""),
            max_tokens=self._max_tokens,
        )
