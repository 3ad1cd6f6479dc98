"""Amazon Bedrock Titan Text Embeddings V2 (``HINDSIGHT_EMBEDDER=bedrock:<model id>``).

For deployments that do not want a model inside Lambda. One ``InvokeModel`` request per
text (Titan V2 embeds one input per call), a few in parallel; vectors come back
L2-normalised (``normalize: true``) with 256, 512 or 1024 dimensions. The model name
recorded with every vector includes the dimension, so vectors of two sizes never mix.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from botocore.exceptions import BotoCoreError, ClientError

from hindsight.core.errors import ConfigurationError, UnavailableError

logger = logging.getLogger(__name__)

TITAN_V2_MODEL_ID = "amazon.titan-embed-text-v2:0"
TITAN_V2_DIMENSIONS = (256, 512, 1024)
TITAN_V2_DEFAULT_DIMENSIONS = 1024
MAX_INPUT_CHARS = 50_000  # Titan V2 accepts up to 50,000 characters (8,192 tokens)
TITAN_V2_WINDOW_TOKENS = 8_192
_CJK_OR_WIDE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
_PARALLEL_REQUESTS = 4


class BedrockTitanEmbedder:
    """Embedder on Bedrock ``InvokeModel``; the client is created on first use if not given."""

    def __init__(
        self,
        model_id: str = TITAN_V2_MODEL_ID,
        dimensions: int = TITAN_V2_DEFAULT_DIMENSIONS,
        client: Any = None,
        region: str | None = None,
    ) -> None:
        if dimensions not in TITAN_V2_DIMENSIONS:
            raise ConfigurationError(
                f"Titan Text Embeddings V2 makes vectors of 256, 512 or 1024 dimensions, not "
                f"{dimensions}; pick one of those"
            )
        self.model_id = model_id
        self._dimensions = dimensions
        self._client = client
        self._region = region
        self.requests = 0

    @property
    def model_name(self) -> str:
        return f"bedrock:{self.model_id}@{self._dimensions}"

    @property
    def dimension(self) -> int:
        return self._dimensions

    @property
    def window_tokens(self) -> int:
        return TITAN_V2_WINDOW_TOKENS

    def count_tokens(self, text: str) -> int:
        """An upper estimate: Bedrock exposes no tokenizer. Each Chinese/Japanese/Korean
        character counts as a token and every 3 other characters as one (English averages
        4-5 characters a token), so chunks sized by it stay within the window."""
        wide = len(_CJK_OR_WIDE.findall(text))
        return wide + -(-(len(text) - wide) // 3) + 2

    def _runtime(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("bedrock-runtime", region_name=self._region)
        return self._client

    def _embed_one(self, text: str) -> np.ndarray:
        body = {
            "inputText": text[:MAX_INPUT_CHARS] or " ",
            "dimensions": self._dimensions,
            "normalize": True,
            "embeddingTypes": ["float"],
        }
        self.requests += 1
        try:
            response = self._runtime().invoke_model(
                modelId=self.model_id,
                body=json.dumps(body),
                contentType="application/json",
                accept="application/json",
            )
            payload = json.loads(response["body"].read())
        except ClientError as exc:
            raise UnavailableError(self._advice(exc)) from exc
        except BotoCoreError as exc:
            raise UnavailableError(
                f"cannot reach Amazon Bedrock for {self.model_id} ({exc}); check the region "
                "and the network, then retry"
            ) from exc
        values = payload.get("embeddingsByType", {}).get("float") or payload.get("embedding")
        if not values or len(values) != self._dimensions:
            raise UnavailableError(
                f"Amazon Bedrock returned no {self._dimensions}-dimensional embedding for "
                f"{self.model_id}; check the model id (HINDSIGHT_EMBEDDER) and retry"
            )
        vector = np.asarray(values, dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def _advice(self, exc: ClientError) -> str:
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "AccessDeniedException":
            return (
                f"Amazon Bedrock refused {self.model_id}; enable access to the model in the "
                "Bedrock console and allow bedrock:InvokeModel for this role"
            )
        if code == "ThrottlingException":
            return f"Amazon Bedrock is throttling {self.model_id}; retry in a moment"
        if code in {"ResourceNotFoundException", "ValidationException"}:
            return (
                f"Amazon Bedrock cannot embed with {self.model_id} ({code}: "
                f"{exc.response.get('Error', {}).get('Message', '')}); check HINDSIGHT_EMBEDDER "
                "and the region"
            )
        return f"Amazon Bedrock failed for {self.model_id} ({code}); retry later"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimensions), dtype=np.float32)
        if len(texts) == 1:
            return self._embed_one(texts[0])[None, :]
        with ThreadPoolExecutor(max_workers=min(_PARALLEL_REQUESTS, len(texts))) as pool:
            rows = list(pool.map(self._embed_one, texts))
        return np.vstack(rows)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed_one(text)


def parse_bedrock_spec(spec: str) -> tuple[str, int]:
    """``bedrock:<model id>[@<dimensions>]`` → (model id, dimensions)."""
    rest = spec.strip()[len("bedrock:") :].strip()
    model_id, _, size = rest.rpartition("@") if "@" in rest else (rest, "", "")
    model_id = model_id.strip() or TITAN_V2_MODEL_ID
    try:
        dimensions = int(size) if size else TITAN_V2_DEFAULT_DIMENSIONS
    except ValueError as exc:
        raise ConfigurationError(
            f"embedder spec {spec!r}: the part after @ must be the dimension (256, 512, 1024)"
        ) from exc
    return model_id, dimensions
