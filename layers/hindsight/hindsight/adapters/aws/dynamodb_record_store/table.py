"""The table itself: creating it, checking it exists, and the default client."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from hindsight.core.errors import ConfigurationError

logger = logging.getLogger(__name__)

BY_USER_INDEX = "by_user"
BY_ACTIVITY_INDEX = "by_activity"
BY_USER_FACTS_INDEX = "by_user_facts"
BY_USER_CREATED_INDEX = "by_user_created"
# the item saying every fact item of the table is in ``by_user_facts`` (a table made before
# the index gets it from ``add_facts_index`` once its facts are backfilled)
SCHEMA_PK, FACTS_INDEX_SK = "S#schema", "facts_index"
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
# ``by_user_created`` holds what a list filters on and the ``by_user`` sort key (the page
# order), not the body: the few memories a list reads from it are then read by id
_CREATED_INDEX_ATTRIBUTES = [
    "gsi1sk",
    *(a for a in _USER_INDEX_ATTRIBUTES if a not in {"body", "created_us"}),  # a key there
]


_KEY_ATTRIBUTES = [
    {"AttributeName": name, "AttributeType": kind}
    for name, kind in (
        ("pk", "S"),
        ("sk", "S"),
        ("gsi1pk", "S"),
        ("gsi1sk", "S"),
        ("gsi2pk", "S"),
        ("gsi2sk", "N"),
        ("gsi3pk", "S"),
        ("gsi3sk", "S"),
        ("created_us", "N"),
    )
]


def create_table(client: Any, table_name: str, wait: bool = True) -> None:
    """Create the table (on-demand, stream NEW_AND_OLD_IMAGES, TTL on ``expires_at``)."""
    client.create_table(
        TableName=table_name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=_KEY_ATTRIBUTES,
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            _index(BY_USER_INDEX, "gsi1pk", "gsi1sk", _USER_INDEX_ATTRIBUTES),
            _index(BY_ACTIVITY_INDEX, "gsi2pk", "gsi2sk", ["tenant_id", "user_id"]),
            facts_index(),
            created_index(),
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
    if wait:  # a new table: every fact it will hold is in by_user_facts (once it can be
        # written; without waiting, the first maintenance run marks it)
        mark_facts_indexed(client, table_name)


def facts_index() -> dict[str, Any]:
    """``by_user_facts``: a user's semantic memories (only they have ``gsi3pk``) in the
    ``by_user`` order, with its projection. Listing a user's facts (reflection, context,
    the review queue, forgetting an episode) reads the facts alone, not every episode."""
    return _index(BY_USER_FACTS_INDEX, "gsi3pk", "gsi3sk", _USER_INDEX_ATTRIBUTES)


def created_index() -> dict[str, Any]:
    """``by_user_created``: a user's memories by ``created_us`` (keys every memory item
    already has, so DynamoDB fills it from the table itself). A list of what was stored
    after a moment (reflection's cursor, its status, a list's ``stored_since``) reads
    the memories stored since, not every memory of the user."""
    return _index(BY_USER_CREATED_INDEX, "gsi1pk", "created_us", _CREATED_INDEX_ATTRIBUTES)


def _index(name: str, partition: str, sort: str, projected: list[str]) -> dict[str, Any]:
    return {
        "IndexName": name,
        "KeySchema": [
            {"AttributeName": partition, "KeyType": "HASH"},
            {"AttributeName": sort, "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": projected},
    }


def mark_facts_indexed(client: Any, table_name: str) -> None:
    client.put_item(
        TableName=table_name,
        Item={"pk": {"S": SCHEMA_PK}, "sk": {"S": FACTS_INDEX_SK}, "item_type": {"S": "schema"}},
    )


def facts_indexed(client: Any, table_name: str) -> bool:
    """Whether lists of facts may read ``by_user_facts``: the table has it, active, and
    every fact item is in it (the mark)."""
    try:
        if index_status(client, table_name, BY_USER_FACTS_INDEX) != "ACTIVE":
            return False
        key = {"pk": {"S": SCHEMA_PK}, "sk": {"S": FACTS_INDEX_SK}}
        return "Item" in client.get_item(TableName=table_name, Key=key, ConsistentRead=True)
    except ClientError as exc:  # no DescribeTable permission, say: list as before
        logger.warning("cannot tell whether %s holds every fact (%s)", BY_USER_FACTS_INDEX, exc)
        return False


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


def add_facts_index(
    client: Any, table_name: str, create_index: bool, time_left: Callable[[], bool]
) -> int:
    """Bring a table made before ``by_user_facts`` in step with it (``index_facts``)."""
    if index_status(client, table_name, BY_USER_FACTS_INDEX) is None:
        if not create_index:
            logger.warning(
                "table %s has no %s index: deploy the current template (it adds it), then "
                "run maintenance again; facts are listed through by_user until then",
                table_name,
                BY_USER_FACTS_INDEX,
            )
            return 0
        if not _create_index(client, table_name, facts_index()):
            return 0
    updated = 0
    pages = client.get_paginator("scan").paginate(
        TableName=table_name,
        FilterExpression=(
            "item_type = :memory AND kind = :semantic AND attribute_not_exists(gsi3pk)"
        ),
        ProjectionExpression="pk, sk, gsi1pk, gsi1sk",
        ExpressionAttributeValues={":memory": {"S": "memory"}, ":semantic": {"S": "semantic"}},
    )
    for page in pages:
        for item in page.get("Items", []):
            try:
                client.update_item(
                    TableName=table_name,
                    Key={"pk": item["pk"], "sk": item["sk"]},
                    UpdateExpression="SET gsi3pk = :p, gsi3sk = :s",
                    ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeValues={":p": item["gsi1pk"], ":s": item["gsi1sk"]},
                )
                updated += 1
            except ClientError as exc:  # deleted meanwhile
                if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise
        if not time_left():
            logger.info("facts index: %d facts updated, time is up; run again", updated)
            return updated
    if index_status(client, table_name, BY_USER_FACTS_INDEX) != "ACTIVE":  # a later run marks
        logger.warning("facts index: %d facts updated, the index is not active yet", updated)
        return updated
    mark_facts_indexed(client, table_name)
    logger.info("facts index: %d facts updated, table %s marked", updated, table_name)
    return updated


def add_created_index(client: Any, table_name: str, create_index: bool) -> bool:
    """Add ``by_user_created`` to a table made before it (``create_index``: else only say
    so). DynamoDB fills it from the items, nothing is rewritten; lists read it once it is
    active. True when the index was asked for now."""
    try:
        if index_status(client, table_name, BY_USER_CREATED_INDEX) is not None:
            return False
    except ClientError as exc:  # no DescribeTable permission: leave the table as it is
        logger.warning("cannot tell whether %s is there (%s)", BY_USER_CREATED_INDEX, exc)
        return False
    if not create_index:
        logger.warning(
            "table %s has no %s index: deploy the current template (it adds it); lists of "
            "what was stored since a moment read every memory of the user until then",
            table_name,
            BY_USER_CREATED_INDEX,
        )
        return False
    if not _create_index(client, table_name, created_index()):
        return False
    logger.info("%s added to %s, DynamoDB fills it", BY_USER_CREATED_INDEX, table_name)
    return True


def _create_index(client: Any, table_name: str, index: dict[str, Any]) -> bool:
    """Ask DynamoDB to add ``index`` to the table; False (logged) when it refuses: no
    ``UpdateTable`` permission (the template adds it), or another index being added (a
    later run tries again)."""
    keys = {key["AttributeName"] for key in index["KeySchema"]}
    try:
        client.update_table(
            TableName=table_name,
            AttributeDefinitions=[a for a in _KEY_ATTRIBUTES if a["AttributeName"] in keys],
            GlobalSecondaryIndexUpdates=[{"Create": index}],
        )
    except ClientError as exc:
        logger.warning("cannot add %s to %s (%s)", index["IndexName"], table_name, exc)
        return False
    return True


def index_status(client: Any, table_name: str, name: str) -> str | None:
    """An index's ``IndexStatus`` (``ACTIVE``, ``CREATING``...), None without it."""
    described = client.describe_table(TableName=table_name)["Table"]
    for index in described.get("GlobalSecondaryIndexes", []):
        if index["IndexName"] == name:
            return str(index.get("IndexStatus", "ACTIVE"))
    return None
