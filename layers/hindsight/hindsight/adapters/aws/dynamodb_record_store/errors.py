"""botocore's errors translated into the domain's, with what to do about them.

Conditional-check failures pass through untranslated: the store's operations read them.
Throttling (``ProvisionedThroughputExceededException``, ``ThrottlingException``,
``RequestLimitExceeded``) reaches here only after botocore's own retries with backoff
(``default_client``: standard mode, 4 attempts) ran out; it becomes ``TableThrottledError``,
an ``UnavailableError`` (HTTP 503) whose ``Retry-After`` is ``THROTTLED_RETRY_AFTER_SECONDS``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import BotoCoreError, ClientError

from hindsight.core.errors import UnavailableError

THROTTLING_CODES = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
)
THROTTLED_RETRY_AFTER_SECONDS = 2


class TableThrottledError(UnavailableError):
    """DynamoDB kept throttling the table after the client's retries: retry shortly."""

    retry_after_seconds = THROTTLED_RETRY_AFTER_SECONDS


@contextmanager
def translated_errors(table_name: str, operation: str) -> Iterator[None]:
    """Raise UnavailableError for botocore's errors during ``operation`` on the table."""
    try:
        yield
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = error.get("Code", "")
        if code in {"ConditionalCheckFailedException", "TransactionCanceledException"}:
            raise
        if code in THROTTLING_CODES:
            raise TableThrottledError(
                f"DynamoDB is throttling requests to table {table_name} ({code}) and kept "
                f"doing so through the client's retries; nothing was written by this "
                f"{operation}: retry in {THROTTLED_RETRY_AFTER_SECONDS} s or more (if it "
                "persists, the operator should raise the table's capacity or use on-demand)"
            ) from exc
        raise UnavailableError(
            _advice(table_name, operation, code, error.get("Message", ""))
        ) from exc
    except BotoCoreError as exc:
        raise UnavailableError(
            f"cannot reach DynamoDB for table {table_name} ({exc}); check the region, "
            "the network, credentials and AWS_ENDPOINT_URL_DYNAMODB, then retry"
        ) from exc


def _advice(table_name: str, operation: str, code: str, message: str) -> str:
    if code == "ResourceNotFoundException":
        return (
            f"DynamoDB table {table_name} does not exist; create it with "
            "`HINDSIGHT_BACKEND=aws hindsight serve` (creates missing resources), deploy "
            "template.yaml, or set HINDSIGHT_TABLE to an existing table"
        )
    if code in {
        "AccessDeniedException",
        "UnrecognizedClientException",
        "ExpiredTokenException",
    }:
        return (
            f"DynamoDB refused {operation} on {table_name} ({code}); check the "
            "credentials and that the role may use the table"
        )
    return f"DynamoDB {operation} on {table_name} failed ({code}: {message}); retry later"


def is_condition_failure(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"
