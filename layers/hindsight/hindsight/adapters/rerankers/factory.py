"""The reranker ``HINDSIGHT_RERANKER`` names, built from settings (the bootstrap calls it)."""

from __future__ import annotations

import logging

from hindsight.core.errors import ConfigurationError
from hindsight.core.ports import Reranker
from hindsight.settings import Settings, reranker_spec

logger = logging.getLogger(__name__)


def build_reranker(settings: Settings) -> Reranker | None:
    """The rerank stage's model (``HINDSIGHT_RERANKER``), or None when it is off."""
    spec = reranker_spec(settings.reranker)
    if spec is None:
        return None
    kind, model = spec
    logger.info(
        "rerank stage on reranker=%s:%s top_n=%d budget_seconds=%g",
        kind,
        model,
        settings.rerank_top_n,
        settings.rerank_budget_seconds,
    )
    if kind == "cross-encoder":
        from hindsight.adapters.rerankers.cross_encoder import CrossEncoderReranker

        return CrossEncoderReranker(model)
    if kind == "bedrock":
        from hindsight.adapters.rerankers.bedrock import BedrockReranker

        region = settings.bedrock_region or settings.region or None
        return BedrockReranker(model, region=region, timeout=settings.rerank_budget_seconds)
    from hindsight.adapters.reflectors.openai_compatible import OpenAICompatibleReflector
    from hindsight.adapters.rerankers.openai_compatible import OpenAICompatibleReranker

    if not settings.openai_base_url:
        raise ConfigurationError(
            "HINDSIGHT_RERANKER=openai:<model> needs HINDSIGHT_OPENAI_BASE_URL "
            "(e.g. https://api.openai.com/v1) and HINDSIGHT_OPENAI_API_KEY"
        )
    client = OpenAICompatibleReflector(
        base_url=settings.openai_base_url,
        api_key=settings.openai_api_key,
        model=model,
        timeout=settings.rerank_budget_seconds,
        max_tokens=OpenAICompatibleReranker.max_tokens(settings.rerank_top_n),
        system_role=settings.openai_system_role,
    )
    return OpenAICompatibleReranker(client, model)
