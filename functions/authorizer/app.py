"""Lambda authorizer (REQUEST): an API key to a tenant and the scopes it may use.

The key comes as ``Authorization: Bearer <key>`` or ``x-api-key: <key>``. Keys are
configured as in ``hindsight.api.auth`` (``{"keys": [{"key_sha256": ..., "tenant_id":
..., "read_scopes": [...], "write_scopes": [...], "default_scope": ..., "key_id": ...}]}``)
and, on AWS, read from the SSM SecureString parameter named by
``HINDSIGHT_API_KEYS_PARAMETER`` (cached for ``HINDSIGHT_API_KEYS_CACHE_SECONDS``).
Without that variable the usual settings (``HINDSIGHT_API_KEYS[_FILE]``) are used.

A known key is allowed on every route of the stage; the answer's ``context`` carries
``tenant_id``, ``key_id``, ``default_scope`` and the scopes as comma-separated lists,
which ``hindsight.api.auth`` trusts. A missing or unknown key raises
``Exception("Unauthorized")``, which API Gateway turns into 401.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from aws_lambda_powertools.utilities.typing import LambdaContext

from hindsight.api.auth import KeyRing, load_key_ring, parse_key_config, presented_key
from hindsight.api.observability import MetricUnit, logger, metrics, tracer
from hindsight.core.errors import HindsightError
from hindsight.core.models import Principal
from hindsight.settings import Settings

PARAMETER_ENV = "HINDSIGHT_API_KEYS_PARAMETER"
CACHE_SECONDS_ENV = "HINDSIGHT_API_KEYS_CACHE_SECONDS"
DEFAULT_CACHE_SECONDS = 300.0
UNAUTHORIZED = "Unauthorized"  # the exact message API Gateway maps to 401


class ApiKeySourceError(HindsightError):
    """The key configuration could not be fetched (an operator problem, not the caller's)."""

    http_status = 500


class KeyRingSource(Protocol):
    """Where the authorizer gets the configured keys from."""

    def key_ring(self) -> KeyRing: ...


class SettingsKeyRingSource:
    """Keys from ``HINDSIGHT_API_KEYS`` / ``HINDSIGHT_API_KEYS_FILE`` (local, LocalStack)."""

    def key_ring(self) -> KeyRing:
        return load_key_ring(Settings.from_env())


class SsmKeyRingSource:
    """Keys from an SSM SecureString parameter, re-read after ``ttl_seconds``."""

    def __init__(
        self,
        parameter_name: str,
        client: Any = None,
        ttl_seconds: float = DEFAULT_CACHE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.parameter_name = parameter_name
        self._client = client
        self._ttl = ttl_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._ring: KeyRing | None = None
        self._loaded_at = 0.0

    def _ssm(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("ssm")
        return self._client

    def key_ring(self) -> KeyRing:
        with self._lock:
            fresh = self._monotonic() - self._loaded_at < self._ttl
            if self._ring is not None and fresh:
                return self._ring
            try:
                answer = self._ssm().get_parameter(Name=self.parameter_name, WithDecryption=True)
                text = answer["Parameter"]["Value"]
            except Exception as exc:  # botocore errors: keep serving the last good keys
                if self._ring is not None:
                    logger.warning(
                        "api key parameter unreadable; using cached keys",
                        parameter=self.parameter_name,
                        error=type(exc).__name__,
                    )
                    return self._ring
                raise ApiKeySourceError(
                    f"the API key parameter {self.parameter_name} cannot be read; check that it "
                    "exists as a SecureString and that the authorizer may read it"
                ) from exc
            self._ring = parse_key_config(text, f"SSM parameter {self.parameter_name}")
            self._loaded_at = self._monotonic()
            return self._ring


_source_lock = threading.Lock()
_source: KeyRingSource | None = None


def configure_key_source(source: KeyRingSource | None = None) -> None:
    """Set (or with no argument, clear) the key source; tests and tools use this."""
    global _source
    with _source_lock:
        _source = source


def key_source() -> KeyRingSource:
    """The configured source, built from the environment on first use."""
    global _source
    with _source_lock:
        if _source is None:
            parameter = os.environ.get(PARAMETER_ENV, "").strip()
            if parameter:
                ttl = float(os.environ.get(CACHE_SECONDS_ENV) or DEFAULT_CACHE_SECONDS)
                _source = SsmKeyRingSource(parameter, ttl_seconds=ttl)
            else:
                _source = SettingsKeyRingSource()
        return _source


def stage_resources(method_arn: str) -> str:
    """``arn:...:api-id/stage/*``: every route of the stage the request came to."""
    prefix, _, path = method_arn.partition(":execute-api:")
    if not path:
        return method_arn
    parts = path.split("/")
    return f"{prefix}:execute-api:{'/'.join(parts[:2])}/*"


def _joined(scopes: frozenset[str]) -> str:
    return ",".join(sorted(scopes))


def allow(principal: Principal, method_arn: str) -> dict[str, Any]:
    """The IAM policy and context API Gateway caches and forwards for an allowed key."""
    return {
        "principalId": f"{principal.tenant_id}:{principal.key_id}",
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Action": "execute-api:Invoke",
                    "Effect": "Allow",
                    "Resource": stage_resources(method_arn),
                }
            ],
        },
        "context": {
            "tenant_id": principal.tenant_id,
            "key_id": principal.key_id,
            "read_scopes": _joined(principal.read_scopes),
            "write_scopes": _joined(principal.write_scopes),
            "default_scope": principal.default_scope,
        },
    }


def authorize(event: dict[str, Any], source: KeyRingSource) -> dict[str, Any]:
    """The authorizer answer for a REQUEST event, or ``Exception("Unauthorized")``."""
    headers = event.get("headers") or {}
    key = presented_key(headers)
    if key is None:
        logger.info("no api key presented")
        raise Exception(UNAUTHORIZED)  # API Gateway maps exactly this to 401
    principal = source.key_ring().lookup(key)
    if principal is None:
        logger.info("unknown api key presented")
        metrics.add_metric(name="UnknownApiKeys", unit=MetricUnit.Count, value=1)
        raise Exception(UNAUTHORIZED)
    logger.append_keys(tenant_id=principal.tenant_id, key_id=principal.key_id)
    logger.info("api key accepted")
    return allow(principal, str(event.get("methodArn", "")))


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return authorize(event, key_source())
