"""API keys from an SSM SecureString parameter: the authorizer's key source on AWS.

The parameter holds the key configuration of ``hindsight.api.auth`` (JSON or YAML).
It is read at most once per ``ttl_seconds``; when SSM cannot be read after a good
read, the last good keys keep being served (and a warning is logged), so an SSM
hiccup never locks every client out.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from hindsight.api.auth import KeyRing, parse_key_config
from hindsight.core.errors import ConfigurationError

logger = logging.getLogger(__name__)

DEFAULT_CACHE_SECONDS = 300.0


class ApiKeySourceError(ConfigurationError):
    """The key configuration could not be fetched (an operator problem, not the caller's)."""


class SsmKeyRingSource:
    """``KeyRingSource`` over one SSM parameter; the client is injected or made on first use."""

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
                        "api key parameter unreadable; using cached keys parameter=%s error=%s",
                        self.parameter_name,
                        type(exc).__name__,
                    )
                    return self._ring
                raise ApiKeySourceError(
                    f"the API key parameter {self.parameter_name} cannot be read; check that it "
                    "exists as a SecureString and that the authorizer may read it "
                    "(HINDSIGHT_API_KEYS_PARAMETER names it)"
                ) from exc
            self._ring = parse_key_config(text, f"SSM parameter {self.parameter_name}")
            self._loaded_at = self._monotonic()
            return self._ring
