"""Reranker on Amazon Bedrock's Rerank API (``bedrock-agent-runtime`` ``rerank``).

One call sends the query (a ``TEXT`` query) and every memory (an ``INLINE`` ``TEXT``
source) to a reranking model, named by its ARN: a model id such as
``amazon.rerank-v1:0`` or ``cohere.rerank-v3-5:0`` becomes
``arn:aws:bedrock:<region>::foundation-model/<id>``. The answer lists ``results`` with
the ``index`` of a source and its ``relevanceScore``; every source is asked for
(``numberOfResults``), and an answer that leaves one out is unusable. The caller needs
``bedrock:Rerank`` and ``bedrock:InvokeModel`` on the model.

The client is built with the rerank's time budget as its timeouts and no retries: a
retry would only outlast the budget, after which the first-stage order stands anyway.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from hindsight.core.errors import UnavailableError

logger = logging.getLogger(__name__)

_ADVICE = {
    "AccessDeniedException": (
        "access is denied: enable the model under Bedrock > Model access in this region and "
        "allow bedrock:Rerank and bedrock:InvokeModel for the caller"
    ),
    "ResourceNotFoundException": "the model was not found in this region; check its id or ARN",
    "ValidationException": "Bedrock rejected the request; check that the model is a reranker",
    "ThrottlingException": "Bedrock throttled the request; retry later or raise the quota",
    "ServiceQuotaExceededException": "the Bedrock quota is exhausted; retry later",
}


class BedrockReranker:
    """Relevances from a Bedrock reranking model; the boto3 client may be injected."""

    def __init__(
        self,
        model: str,
        client: Any | None = None,
        region: str | None = None,
        timeout: float = 2.0,
    ) -> None:
        self._model = model
        self._client = client
        self._region = region
        self._timeout = timeout

    @property
    def label(self) -> str:
        return f"bedrock:{self._model}"

    def warm(self) -> None:
        self._runtime()  # the client only: nothing to load

    def _runtime(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config

            config = Config(
                connect_timeout=self._timeout,
                read_timeout=self._timeout,
                retries={"total_max_attempts": 1, "mode": "standard"},
            )
            self._client = boto3.client(
                "bedrock-agent-runtime", region_name=self._region, config=config
            )
        return self._client

    def model_arn(self) -> str:
        """The model's ARN: as given, or the foundation model's in the client's region."""
        if self._model.startswith("arn:"):
            return self._model
        region = self._region or self._runtime().meta.region_name
        return f"arn:aws:bedrock:{region}::foundation-model/{self._model}"

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        from botocore.exceptions import BotoCoreError, ClientError
        from botocore.parsers import ResponseParserError

        sources = [
            {
                "type": "INLINE",
                "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": t}},
            }
            for t in texts
        ]
        configuration = {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "numberOfResults": len(texts),
                "modelConfiguration": {"modelArn": self.model_arn()},
            },
        }
        try:
            response = self._runtime().rerank(
                queries=[{"type": "TEXT", "textQuery": {"text": query}}],
                sources=sources,
                rerankingConfiguration=configuration,
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            advice = _ADVICE.get(code, "Bedrock returned an error; retry later")
            raise UnavailableError(f"Bedrock rerank failed ({code or exc}): {advice}") from exc
        except (BotoCoreError, ResponseParserError) as exc:  # no endpoint, timeouts, garbage
            raise UnavailableError(f"Bedrock rerank unavailable: {exc}") from exc
        return _relevances(response, len(texts))


def _source(text: str) -> dict[str, Any]:
    document = {"type": "TEXT", "textDocument": {"text": text}}
    return {"type": "INLINE", "inlineDocumentSource": document}


def _relevances(response: Any, count: int) -> list[float]:
    """Each source's relevance, by its index in the request; every source must have one."""
    found: dict[int, float] = {}
    for result in response.get("results") or []:
        index, score = result.get("index"), result.get("relevanceScore")
        if isinstance(index, int) and 0 <= index < count and isinstance(score, int | float):
            found[index] = min(1.0, max(0.0, float(score)))  # the port's [0, 1]
    if len(found) != count:
        raise UnavailableError(
            f"Bedrock rerank answered for {len(found)} of {count} memories; the first-stage "
            "order stands"
        )
    return [found[index] for index in range(count)]
