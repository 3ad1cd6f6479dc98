"""A user's cursors (``C#<name>``: how far a job has read, e.g. reflection) and leases
(``L#<name>``: one holder at a time until a moment, e.g. one reflection of a user) as items
of the user's partition."""

from __future__ import annotations

from datetime import datetime

from botocore.exceptions import ClientError

from hindsight.adapters.aws.dynamodb_record_store.errors import is_condition_failure
from hindsight.adapters.aws.dynamodb_record_store.items import (
    from_us,
    to_attribute_values,
    user_pk,
)
from hindsight.adapters.aws.dynamodb_record_store.requests import TableRequests
from hindsight.adapters.paging import epoch_us


def set_cursor(
    table: TableRequests, tenant_id: str, user_id: str, name: str, value: datetime
) -> None:
    table.call(
        "PutItem",
        TableName=table.table_name,
        Item=to_attribute_values(
            {
                "pk": user_pk(tenant_id, user_id),
                "sk": f"C#{name}",
                "item_type": "cursor",
                "value_us": epoch_us(value),
            }
        ),
    )


def acquire_lease(
    table: TableRequests,
    tenant_id: str,
    user_id: str,
    name: str,
    holder: str,
    until: datetime,
    now: datetime,
) -> bool:
    """One conditional PutItem: absent, expired, or already this holder's."""
    try:
        table.call(
            "PutItem",
            TableName=table.table_name,
            Item=to_attribute_values(
                {
                    "pk": user_pk(tenant_id, user_id),
                    "sk": f"L#{name}",
                    "item_type": "lease",
                    "holder": holder,
                    "until_us": epoch_us(until),
                }
            ),
            ConditionExpression="attribute_not_exists(pk) OR holder = :h OR until_us <= :now",
            ExpressionAttributeValues={":h": {"S": holder}, ":now": {"N": str(epoch_us(now))}},
        )
    except ClientError as exc:
        if is_condition_failure(exc):
            return False
        raise
    return True


def release_lease(
    table: TableRequests, tenant_id: str, user_id: str, name: str, holder: str
) -> None:
    try:
        table.call(
            "DeleteItem",
            TableName=table.table_name,
            Key=table.key(user_pk(tenant_id, user_id), f"L#{name}"),
            ConditionExpression="holder = :h",
            ExpressionAttributeValues={":h": {"S": holder}},
        )
    except ClientError as exc:
        if not is_condition_failure(exc):
            raise


def get_cursor(table: TableRequests, tenant_id: str, user_id: str, name: str) -> datetime | None:
    found = table.call(
        "GetItem",
        TableName=table.table_name,
        Key=table.key(user_pk(tenant_id, user_id), f"C#{name}"),
        ConsistentRead=True,
    ).get("Item")
    return None if found is None else from_us(int(found["value_us"]["N"]))
