"""The reflector ``HINDSIGHT_REFLECTOR`` names, built from settings (the bootstraps call it).

The learned offline reflector when nothing is configured; an LLM reflector always runs
after an offline one (``HINDSIGHT_REFLECTOR_OFFLINE``), whose facts it refines and keeps
when the LLM fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hindsight.core.errors import ConfigurationError

if TYPE_CHECKING:
    from hindsight.adapters.reflectors.llm import LlmReflector
    from hindsight.core.ports import Embedder, Reflector
    from hindsight.settings import Settings


def _bundled_embedder(settings: Settings) -> Embedder:
    from hindsight.adapters.embedders.factory import build_embedder as build
    from hindsight.adapters.embedders.micro_batching import MicroBatchingEmbedder

    return MicroBatchingEmbedder(
        build(settings.embedder, background_niceness=settings.embed_background_niceness)
    )


def build_reflector(settings: Settings, embedder: Embedder | None = None) -> Reflector:
    """The configured reflector; the learned offline one (``learned``, over the bundled
    word embeddings: no embedder needed) when nothing is configured. ``learned-e5`` reads
    the statements' e5 vectors and embeds with ``embedder`` (the service's)."""
    spec = settings.reflector.strip()
    if spec in {"rule-based", "rules"}:
        from hindsight.adapters.reflectors.rule_based import RuleBasedReflector

        return RuleBasedReflector()
    if spec in {"", "learned", "learned-static", "offline"}:
        from hindsight.adapters.reflectors.learned import LearnedReflector

        return LearnedReflector(embedder, static=True)
    if spec == "learned-e5":
        from hindsight.adapters.reflectors.learned import LearnedReflector

        return LearnedReflector(embedder or _bundled_embedder(settings))
    kind, _, model = spec.partition(":")
    if kind == "bedrock" and model:
        from hindsight.adapters.reflectors.bedrock import BedrockReflector

        bedrock = BedrockReflector(
            model_id=model,
            region=settings.bedrock_region or None,
            max_tokens=settings.reflector_max_tokens,
        )
        return _offline_first(settings, bedrock, embedder)
    if kind == "openai" and model:
        from hindsight.adapters.reflectors.openai_compatible import OpenAICompatibleReflector

        if not settings.openai_base_url:
            raise ConfigurationError(
                "HINDSIGHT_REFLECTOR=openai:<model> needs HINDSIGHT_OPENAI_BASE_URL "
                "(e.g. https://api.openai.com/v1) and HINDSIGHT_OPENAI_API_KEY"
            )
        openai = OpenAICompatibleReflector(
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key,
            model=model,
            timeout=settings.reflector_timeout_seconds,
            max_tokens=settings.reflector_max_tokens,
            system_role=settings.openai_system_role,
        )
        return _offline_first(settings, openai, embedder)
    raise ConfigurationError(
        f"HINDSIGHT_REFLECTOR={spec!r} is not understood; use 'learned' (the default), "
        "'rule-based', 'learned-e5', 'bedrock:<model id>' or 'openai:<model>'"
    )


def _offline_first(
    settings: Settings, llm: LlmReflector, embedder: Embedder | None = None
) -> Reflector:
    """An LLM reflector run after the offline one (HINDSIGHT_REFLECTOR_OFFLINE): the
    offline facts are refined by the LLM and kept whenever the LLM fails; at most
    HINDSIGHT_REFLECTOR_TOKEN_BUDGET tokens per reflection run (0: no limit)."""
    from hindsight.adapters.reflectors.offline_first import OfflineFirstReflector

    offline_spec = settings.reflector_offline.strip()
    if ":" in offline_spec:
        raise ConfigurationError(
            f"HINDSIGHT_REFLECTOR_OFFLINE={offline_spec!r} must name an offline reflector "
            "('learned' or 'rule-based'), not an LLM"
        )
    offline = build_reflector(settings.model_copy(update={"reflector": offline_spec}), embedder)
    budget = settings.reflector_token_budget or None
    return OfflineFirstReflector(offline, llm, token_budget=budget)
