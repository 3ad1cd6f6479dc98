"""Deduplicated writes: the memory and its dedup marker in one transaction.

The marker (``D#{sha256 of the dedup key}`` in the user's partition) names the memory that
holds the content. One ``TransactWriteItems`` puts the memory (condition: id absent) and
the marker (condition: absent, or its memory occurred outside the window, or has
expired), so concurrent duplicates create exactly one memory. A marker whose memory was
deleted (TTL, or a crash between the two deletes of ``delete``) is detected and reclaimed.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from hindsight.adapters.aws.dynamodb_record_store.errors import (
    is_condition_failure,
)
from hindsight.adapters.aws.dynamodb_record_store.expressions import Expression
from hindsight.adapters.aws.dynamodb_record_store.items import (
    MEMORY_SK,
    from_attribute_values,
    memory_pk,
    to_attribute_values,
    user_pk,
)
from hindsight.adapters.aws.dynamodb_record_store.requests import TableRequests
from hindsight.adapters.backend_rules import already_exists
from hindsight.core.errors import DuplicateMemoryError, UnavailableError
from hindsight.core.models import Memory

_PUT_ATTEMPTS = 10


def put_deduplicated(
    table: TableRequests, memory: Memory, values: dict[str, Any], window_seconds: float
) -> None:
    """Put the memory's item ``values`` (``marker_sk`` set) unless a duplicate holds the
    marker: then raise DuplicateMemoryError naming it."""
    occurred = values["occurred_us"]
    window_us = max(0, math.ceil(window_seconds * 1_000_000))
    marker_values = {
        "pk": user_pk(memory.tenant_id, memory.user_id),
        "sk": values["marker_sk"],
        "item_type": "marker",
        "memory_id": memory.memory_id,
        "occurred_us": occurred,
    }
    if memory.expires_at is not None:
        marker_values["expires_us"] = values["expires_us"]
        marker_values["expires_at"] = values["expires_at"]
    stale: str | None = None
    for attempt in range(_PUT_ATTEMPTS):
        expr = Expression()
        condition = (
            f"attribute_not_exists(pk) OR {expr.name('occurred_us')} <= "
            f"{expr.value(occurred - window_us)} OR {expr.name('occurred_us')} >= "
            f"{expr.value(occurred + window_us)} OR {expr.name('expires_us')} <= "
            f"{expr.value(values['created_us'])}"
        )
        if stale is not None:
            condition += f" OR {expr.name('memory_id')} = {expr.value(stale)}"
        try:
            table.call(
                "TransactWriteItems",
                TransactItems=[
                    {
                        "Put": {
                            "TableName": table.table_name,
                            "Item": to_attribute_values(values),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {
                        "Put": {
                            "TableName": table.table_name,
                            "Item": to_attribute_values(marker_values),
                            "ConditionExpression": condition,
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                            **expr.params(),
                        }
                    },
                ],
            )
            return
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons") or [{}, {}]
            codes = [reason.get("Code", "None") for reason in reasons]
            if codes[0] == "ConditionalCheckFailed":
                raise already_exists(memory) from exc
            if codes[1] == "ConditionalCheckFailed":
                existing = _marker_owner(table, marker_values, reasons[1].get("Item"))
                if existing is not None and _exists(table, memory.tenant_id, existing):
                    raise DuplicateMemoryError(existing) from exc
                stale = existing  # its memory is gone: the marker may be reclaimed
                continue
            if "TransactionConflict" not in codes:
                raise UnavailableError(
                    f"DynamoDB refused to store memory {memory.memory_id} "
                    f"({', '.join(codes)}); retry later"
                ) from exc
            time.sleep(random.uniform(0, 0.02 * 2**attempt))
    raise UnavailableError("too many concurrent writes of the same content; retry in a moment")


def _marker_owner(
    table: TableRequests, marker_values: Mapping[str, Any], old_item: Mapping[str, Any] | None
) -> str | None:
    if old_item:
        return str(from_attribute_values(old_item)["memory_id"])
    found = table.call(
        "GetItem",
        TableName=table.table_name,
        Key=table.key(marker_values["pk"], marker_values["sk"]),
        ConsistentRead=True,
    ).get("Item")
    return None if found is None else str(found["memory_id"]["S"])


def _exists(table: TableRequests, tenant_id: str, memory_id: str) -> bool:
    found = table.call(
        "GetItem",
        TableName=table.table_name,
        Key=table.key(memory_pk(tenant_id, memory_id), MEMORY_SK),
        ConsistentRead=True,
        ProjectionExpression="pk",
    )
    return "Item" in found


def delete_marker(
    table: TableRequests, tenant_id: str, user_id: str, marker_sk: str, memory_id: str
) -> None:
    """Free the memory's dedup marker unless a newer memory has claimed it since."""
    try:
        table.call(
            "DeleteItem",
            TableName=table.table_name,
            Key=table.key(user_pk(tenant_id, user_id), marker_sk),
            ConditionExpression="memory_id = :m",
            ExpressionAttributeValues={":m": {"S": memory_id}},
        )
    except ClientError as exc:
        if not is_condition_failure(exc):
            raise
