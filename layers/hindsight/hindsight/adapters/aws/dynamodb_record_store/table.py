"""The table itself: creating it, checking it exists, and the default client."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from hindsight.core.errors import ConfigurationError

BY_USER_INDEX = "by_user"
BY_ACTIVITY_INDEX = "by_activity"
_USER_INDEX_ATTRIBUTES = [
    "body",
    "kind",
    "scope",
    "status",
    "category",
    "session_id",
    "created_us",
    "expires_us",
]


def create_table(client: Any, table_name: str, wait: bool = True) -> None:
    """Create the table (on-demand, stream NEW_AND_OLD_IMAGES, TTL on ``expires_at``)."""
    client.create_table(
        TableName=table_name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "gsi1pk", "AttributeType": "S"},
            {"AttributeName": "gsi1sk", "AttributeType": "S"},
            {"AttributeName": "gsi2pk", "AttributeType": "S"},
            {"AttributeName": "gsi2sk", "AttributeType": "N"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": BY_USER_INDEX,
                "KeySchema": [
                    {"AttributeName": "gsi1pk", "KeyType": "HASH"},
                    {"AttributeName": "gsi1sk", "KeyType": "RANGE"},
                ],
                "Projection": {
                    "ProjectionType": "INCLUDE",
                    "NonKeyAttributes": _USER_INDEX_ATTRIBUTES,
                },
            },
            {
                "IndexName": BY_ACTIVITY_INDEX,
                "KeySchema": [
                    {"AttributeName": "gsi2pk", "KeyType": "HASH"},
                    {"AttributeName": "gsi2sk", "KeyType": "RANGE"},
                ],
                "Projection": {
                    "ProjectionType": "INCLUDE",
                    "NonKeyAttributes": ["tenant_id", "user_id"],
                },
            },
        ],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    if wait:
        client.get_waiter("table_exists").wait(
            TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
        )
    client.update_time_to_live(
        TableName=table_name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"},
    )


def table_exists(client: Any, table_name: str) -> bool:
    try:
        client.describe_table(TableName=table_name)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return False
        raise
    return True


def default_client(region: str | None = None) -> Any:
    """A DynamoDB client from the standard AWS chain (honours ``AWS_ENDPOINT_URL*``)."""
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "max_attempts": 4},
        connect_timeout=3,
        read_timeout=10,
        max_pool_connections=32,
    )
    from botocore.exceptions import NoRegionError

    try:
        return boto3.client("dynamodb", region_name=region, config=config)
    except NoRegionError as exc:
        raise ConfigurationError(
            "HINDSIGHT_BACKEND=aws found no AWS region: set AWS_DEFAULT_REGION (or "
            "HINDSIGHT_REGION), e.g. AWS_DEFAULT_REGION=us-east-1; to run the AWS backend on "
            "this machine against the local engines, use `make run-aws`"
        ) from exc
