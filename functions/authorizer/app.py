"""Lambda authorizer (REQUEST): an API key to a tenant and the scopes it may use.

The key comes as ``Authorization: Bearer <key>`` or ``x-api-key: <key>``. Keys are
configured as in ``hindsight.api.auth`` and, on AWS, read from the SSM SecureString
parameter named by ``HINDSIGHT_API_KEYS_PARAMETER`` (cached for
``HINDSIGHT_API_KEYS_CACHE_SECONDS``); without it the usual settings
(``HINDSIGHT_API_KEYS[_FILE]``) are used. The answer is shaped by
``hindsight.api.authorizer``.
"""

from __future__ import annotations

import threading
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from hindsight.adapters.aws.ssm_api_keys import SsmKeyRingSource
from hindsight.api.auth import KeyRingSource, SettingsKeyRingSource
from hindsight.api.authorizer import authorize
from hindsight.api.observability import logger, metrics, tracer
from hindsight.settings import Settings

__all__ = ["SsmKeyRingSource", "configure_key_source", "key_source", "lambda_handler"]

_source_lock = threading.Lock()
_source: KeyRingSource | None = None


def configure_key_source(source: KeyRingSource | None = None) -> None:
    """Set (or with no argument, clear) the key source; tests and tools use this."""
    global _source
    with _source_lock:
        _source = source


def key_source() -> KeyRingSource:
    """The configured source, built from the settings on first use."""
    global _source
    with _source_lock:
        if _source is None:
            settings = Settings.from_env()
            parameter = settings.api_keys_parameter.strip()
            if parameter:
                _source = SsmKeyRingSource(parameter, ttl_seconds=settings.api_keys_cache_seconds)
            else:
                _source = SettingsKeyRingSource(settings)
        return _source


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return authorize(event, key_source())
