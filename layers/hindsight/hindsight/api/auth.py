"""API-key authentication: a request's credentials mapped to a ``Principal``.

Keys come from settings: ``HINDSIGHT_API_KEYS_FILE`` (a JSON or YAML file) or
``HINDSIGHT_API_KEYS`` (inline JSON), both shaped like::

    {"keys": [{"key": "...", "tenant_id": "acme", "read_scopes": ["*"],
               "write_scopes": ["calendar"], "default_scope": "calendar",
               "key_id": "calendar-agent", "secrets": "refuse"}]}

An entry may give ``key_sha256`` (hex digest of the key) instead of ``key``, and
``secrets`` (``redact``, ``refuse`` or ``off``) for its own policy on secrets in stored
content instead of ``HINDSIGHT_SECRETS``. A
request presents its key as ``Authorization: Bearer <key>`` or ``x-api-key: <key>``.
When an API Gateway Lambda authorizer has already resolved the caller, its
``requestContext.authorizer`` (which clients cannot forge) is trusted instead.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hindsight.core.errors import ConfigurationError, UnauthorizedError
from hindsight.core.models import GLOBAL_SCOPE, Principal
from hindsight.settings import Settings

logger = logging.getLogger(__name__)

NO_KEYS_MESSAGE = (
    "no API keys are configured; set HINDSIGHT_API_KEYS_FILE or run locally with --allow-anonymous"
)
MISSING_KEY_MESSAGE = (
    "an API key is required; send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'"
)
UNKNOWN_KEY_MESSAGE = "the API key is not valid; check the key or ask for a new one"


class ApiKeyConfigError(ConfigurationError):
    """The server's API key configuration cannot be read (an operator problem)."""


class NoKeysConfiguredError(UnauthorizedError):
    """No keys are configured and anonymous access is off (401)."""


class MissingKeyError(UnauthorizedError):
    """The request presents no key (401)."""


class ApiKeyEntry(BaseModel):
    """One configured key (the file format)."""

    model_config = ConfigDict(extra="forbid")

    key: str | None = Field(default=None, min_length=8)
    key_sha256: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{64}$")
    tenant_id: str = Field(min_length=1, max_length=128)
    key_id: str | None = None
    read_scopes: list[str] = Field(default_factory=lambda: ["*"])
    write_scopes: list[str] = Field(default_factory=lambda: ["*"])
    default_scope: str = GLOBAL_SCOPE
    # this key's own secrets policy (redact, refuse, off); None: HINDSIGHT_SECRETS
    secrets: Literal["redact", "refuse", "off"] | None = None

    @model_validator(mode="after")
    def _one_secret(self) -> ApiKeyEntry:
        if (self.key is None) == (self.key_sha256 is None):
            raise ValueError("give exactly one of key or key_sha256")
        return self

    def digest(self) -> bytes:
        if self.key_sha256 is not None:
            return bytes.fromhex(self.key_sha256)
        return hashlib.sha256((self.key or "").encode()).digest()

    def principal(self, position: int) -> Principal:
        return Principal(
            tenant_id=self.tenant_id,
            key_id=self.key_id or f"key-{position}",
            read_scopes=frozenset(self.read_scopes),
            write_scopes=frozenset(self.write_scopes),
            default_scope=self.default_scope,
            secrets=self.secrets,
        )


class ApiKeyFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keys: list[ApiKeyEntry]


@dataclass(frozen=True)
class KeyRing:
    """Configured keys as (sha256 digest, principal) pairs."""

    entries: tuple[tuple[bytes, Principal], ...]

    def __len__(self) -> int:
        return len(self.entries)

    def lookup(self, presented: str) -> Principal | None:
        """The principal of a presented key, comparing digests in constant time."""
        digest = hashlib.sha256(presented.encode()).digest()
        found: Principal | None = None
        for known, principal in self.entries:
            if hmac.compare_digest(known, digest) and found is None:
                found = principal
        return found


def parse_key_config(text: str, source: str) -> KeyRing:
    """Parse a JSON or YAML key configuration (JSON is YAML, so one loader reads both)."""
    try:
        data = yaml.safe_load(text) if text.strip() else {"keys": []}
    except yaml.YAMLError as exc:
        raise ApiKeyConfigError(
            f"the API key configuration in {source} is not valid JSON or YAML; fix it"
        ) from exc
    try:
        parsed = ApiKeyFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'keys'}: {e['msg']}" for e in exc.errors()
        )
        raise ApiKeyConfigError(
            f"the API key configuration in {source} is invalid ({problems}); fix it"
        ) from exc
    return KeyRing(
        tuple((entry.digest(), entry.principal(i)) for i, entry in enumerate(parsed.keys, 1))
    )


_cache_lock = threading.Lock()
_cache: dict[tuple[str, str, int, int], KeyRing] = {}


def load_key_ring(settings: Settings) -> KeyRing:
    """Keys from settings (file first, then inline), re-read when the file changes."""
    if settings.api_keys_file:
        path = Path(settings.api_keys_file).expanduser()
        try:
            stat = path.stat()
        except OSError as exc:
            raise ApiKeyConfigError(
                f"HINDSIGHT_API_KEYS_FILE={settings.api_keys_file} cannot be read; check the path"
            ) from exc
        cache_key = ("file", str(path), stat.st_mtime_ns, stat.st_size)
        with _cache_lock:
            ring = _cache.get(cache_key)
        if ring is None:
            ring = parse_key_config(path.read_text(encoding="utf-8"), str(path))
    elif settings.api_keys:
        cache_key = ("inline", settings.api_keys, 0, 0)
        with _cache_lock:
            ring = _cache.get(cache_key)
        if ring is None:
            ring = parse_key_config(settings.api_keys, "HINDSIGHT_API_KEYS")
    else:
        return KeyRing(())
    with _cache_lock:
        if len(_cache) > 16:
            _cache.clear()
        _cache[cache_key] = ring
    return ring


class KeyRingSource(Protocol):
    """Where the configured keys come from (settings here; SSM in ``adapters.aws``)."""

    def key_ring(self) -> KeyRing: ...


class SettingsKeyRingSource:
    """Keys from ``HINDSIGHT_API_KEYS`` / ``HINDSIGHT_API_KEYS_FILE`` (local, LocalStack)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def key_ring(self) -> KeyRing:
        return load_key_ring(self.settings)


def presented_key(headers: Mapping[str, Any] | None) -> str | None:
    """The key from ``Authorization: Bearer`` or ``x-api-key`` (header names case-blind)."""
    lowered = {str(k).lower(): v for k, v in (headers or {}).items() if v is not None}
    authorization = str(lowered.get("authorization", "")).strip()
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    api_key = str(lowered.get("x-api-key", "")).strip()
    return api_key or None


def _scopes(value: Any, default: frozenset[str]) -> frozenset[str]:
    if value is None:
        return default
    if isinstance(value, list | tuple | set | frozenset):
        items = [str(v).strip() for v in value]
    else:
        items = [part.strip() for part in str(value).split(",")]
    return frozenset(item for item in items if item)


def principal_from_authorizer(authorizer: Mapping[str, Any] | None) -> Principal | None:
    """The principal a Lambda authorizer put into ``requestContext.authorizer``, if any."""
    if not authorizer or not authorizer.get("tenant_id"):
        return None
    return Principal(
        tenant_id=str(authorizer["tenant_id"]),
        key_id=str(authorizer.get("key_id") or authorizer.get("principalId") or "authorizer"),
        read_scopes=_scopes(authorizer.get("read_scopes"), frozenset({"*"})),
        write_scopes=_scopes(authorizer.get("write_scopes"), frozenset({"*"})),
        default_scope=str(authorizer.get("default_scope") or GLOBAL_SCOPE),
        secrets=str(authorizer["secrets"]) if authorizer.get("secrets") else None,
    )


def anonymous_principal(settings: Settings) -> Principal:
    return Principal(
        tenant_id=settings.anonymous_tenant,
        key_id="anonymous",
        read_scopes=frozenset({"*"}),
        write_scopes=frozenset({"*"}),
        default_scope=GLOBAL_SCOPE,
    )


def authenticate(
    headers: Mapping[str, Any] | None,
    authorizer: Mapping[str, Any] | None,
    settings: Settings,
) -> Principal:
    """Who is calling, or UnauthorizedError (401)."""
    trusted = principal_from_authorizer(authorizer)
    if trusted is not None:
        return trusted
    ring = load_key_ring(settings)
    if len(ring) == 0:
        if settings.allow_anonymous:
            return anonymous_principal(settings)
        raise NoKeysConfiguredError(NO_KEYS_MESSAGE)
    key = presented_key(headers)
    if key is None:
        raise MissingKeyError(MISSING_KEY_MESSAGE)
    principal = ring.lookup(key)
    if principal is None:
        logger.info("unknown api key presented")
        raise UnauthorizedError(UNKNOWN_KEY_MESSAGE)
    return principal


def optional_caller(authenticate_caller: Callable[[], Principal]) -> Principal | None:
    """The caller when the request names one, None when it presents no key (or this
    process holds no keys: a public route on AWS, where only the authorizer reads them).

    A presented key that is not valid still raises ``UnauthorizedError`` (401).
    """
    try:
        return authenticate_caller()
    except (NoKeysConfiguredError, MissingKeyError):
        return None


def key_sha256(key: str) -> str:
    """The hex digest to put in a key file's ``key_sha256`` instead of the key itself."""
    return hashlib.sha256(key.encode()).hexdigest()
