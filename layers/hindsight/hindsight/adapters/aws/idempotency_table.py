"""The idempotency table on AWS: Powertools' ``DynamoDBPersistenceLayer`` over it.

template.yaml declares the table (``IdempotencyTable``: hash key ``id``, TTL on
``expiration``); a process that may create its resources (``HINDSIGHT_CREATE_RESOURCES``,
the local engines) creates it the same way when it is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from botocore.exceptions import ClientError

KEY_ATTRIBUTE = "id"
EXPIRY_ATTRIBUTE = "expiration"


def create_idempotency_table(client: Any, table_name: str) -> None:
    """Create the table (on-demand, TTL on ``expiration``) unless it exists."""
    try:
        client.describe_table(TableName=table_name)
        return
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
    client.create_table(
        TableName=table_name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": KEY_ATTRIBUTE, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": KEY_ATTRIBUTE, "KeyType": "HASH"}],
    )
    client.get_waiter("table_exists").wait(
        TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )
    client.update_time_to_live(
        TableName=table_name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": EXPIRY_ATTRIBUTE},
    )


def dynamodb_idempotency_store(
    table_name: str, client: Any = None, create: bool = False
) -> DynamoDBPersistenceLayer:
    """Powertools' DynamoDB persistence layer on ``table_name`` (created first if asked)."""
    if client is None:
        import boto3

        client = boto3.client("dynamodb")
    if create:
        create_idempotency_table(client, table_name)
    return DynamoDBPersistenceLayer(
        table_name=table_name,
        key_attr=KEY_ATTRIBUTE,
        expiry_attr=EXPIRY_ATTRIBUTE,
        boto3_client=client,
    )


class DynamoDBAnswerSweep:
    """Finds and deletes idempotency records by what their kept answer holds: a scan of
    the table (it keeps a day of writes; an erasure is rare) filtered on the answer text."""

    def __init__(self, layer: DynamoDBPersistenceLayer) -> None:
        self.client = layer.client
        self.table_name = layer.table_name
        self.key_attr = layer.key_attr
        self.data_attr = layer.data_attr

    def mentioning(self, text: str) -> list[tuple[str, str | None]]:
        found: list[tuple[str, str | None]] = []
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "FilterExpression": "contains(#data, :text)",
            "ProjectionExpression": "#key, #data",
            "ExpressionAttributeNames": {"#key": self.key_attr, "#data": self.data_attr},
            "ExpressionAttributeValues": {":text": {"S": text}},
            "ConsistentRead": True,
        }
        while True:
            page = self.client.scan(**request)
            for item in page.get("Items", []):
                data = item.get(self.data_attr, {}).get("S")
                found.append((item[self.key_attr]["S"], data))
            if "LastEvaluatedKey" not in page:
                return found
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def delete_keys(self, keys: Sequence[str]) -> None:
        for key in keys:
            self.client.delete_item(TableName=self.table_name, Key={self.key_attr: {"S": key}})
