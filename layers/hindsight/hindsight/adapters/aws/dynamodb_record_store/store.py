"""DynamoDBRecordStore: the RecordStore port on one table (see the package for its layout)."""

from __future__ import annotations

import builtins
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from hindsight.adapters.aws.dynamodb_record_store.dedup import delete_marker, put_deduplicated
from hindsight.adapters.aws.dynamodb_record_store.errors import (
    is_condition_failure,
)
from hindsight.adapters.aws.dynamodb_record_store.expressions import Expression
from hindsight.adapters.aws.dynamodb_record_store.items import (
    ACTIVITY_SK,
    MEMORY,
    MEMORY_SK,
    activity_shard,
    from_attribute_values,
    from_us,
    marker_sk,
    memory_from_item,
    memory_item,
    memory_pk,
    to_attribute_values,
    user_pk,
    vector_from_item,
)
from hindsight.adapters.aws.dynamodb_record_store.listing import (
    active_users_since,
    list_page,
    scan_memories,
)
from hindsight.adapters.aws.dynamodb_record_store.requests import TableRequests
from hindsight.adapters.aws.dynamodb_record_store.table import BY_USER_INDEX, default_client
from hindsight.adapters.index_rules import already_exists
from hindsight.adapters.paging import epoch_us
from hindsight.core.errors import NotFoundError
from hindsight.core.models import EpisodicMemory, ListQuery, Memory, Page, StoredVector


class DynamoDBRecordStore:
    """RecordStore in one DynamoDB table; thread-safe (boto3 clients are)."""

    def __init__(self, table_name: str, client: Any = None) -> None:
        self._table = TableRequests(table_name, client if client is not None else default_client())

    @property
    def table_name(self) -> str:
        return self._table.table_name

    @property
    def client(self) -> Any:
        return self._table.client

    @property
    def request_counts(self) -> Counter[str]:
        """Requests made so far, per DynamoDB operation (``clear()`` to start over)."""
        return self._table.counts

    # --- writes ----------------------------------------------------------------------------
    def put(
        self,
        memory: Memory,
        vector: StoredVector | None = None,
        dedup_key: str | None = None,
        dedup_window_seconds: float = 0.0,
    ) -> None:
        values = memory_item(memory, vector)
        if dedup_key is None:
            try:
                self._table.call(
                    "PutItem",
                    TableName=self.table_name,
                    Item=to_attribute_values(values),
                    ConditionExpression="attribute_not_exists(pk)",
                )
            except ClientError as exc:
                raise already_exists(memory) from exc
        else:
            values["marker_sk"] = marker_sk(dedup_key)
            put_deduplicated(self._table, memory, values, dedup_window_seconds)
        if isinstance(memory, EpisodicMemory):
            self._touch_activity(memory)

    def _touch_activity(self, memory: EpisodicMemory) -> None:
        """Move the user's activity item forward to this episode's ``created_at``."""
        created = epoch_us(memory.created_at)
        expr = Expression()
        last = expr.name("last_episode_us")
        new = expr.value(created)
        try:
            self._table.call(
                "UpdateItem",
                TableName=self.table_name,
                Key=self._table.key(user_pk(memory.tenant_id, memory.user_id), ACTIVITY_SK),
                UpdateExpression=(
                    f"SET {last} = {new}, {expr.name('gsi2sk')} = {new}, "
                    f"{expr.name('gsi2pk')} = "
                    f"{expr.value(activity_shard(memory.tenant_id, memory.user_id))}, "
                    f"{expr.name('tenant_id')} = {expr.value(memory.tenant_id)}, "
                    f"{expr.name('user_id')} = {expr.value(memory.user_id)}, "
                    f"{expr.name('item_type')} = {expr.value('activity')}"
                ),
                ConditionExpression=f"attribute_not_exists({last}) OR {last} < {new}",
                **expr.params(),
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    def update(self, memory: Memory, vector: StoredVector | None = None) -> None:
        values = memory_item(memory, vector)
        expr = Expression()
        keep = {"pk", "sk"}
        assignments = [
            f"{expr.name(name)} = {expr.value(value)}"
            for name, value in values.items()
            if name not in keep
        ]
        removable = {"status", "category", "session_id", "expires_us", "expires_at"}
        removals = [expr.name(name) for name in sorted(removable - set(values))]
        update = "SET " + ", ".join(assignments)
        if removals:
            update += " REMOVE " + ", ".join(removals)
        try:
            self._table.call(
                "UpdateItem",
                TableName=self.table_name,
                Key=self._table.key(values["pk"], MEMORY_SK),
                UpdateExpression=update,
                ConditionExpression=(
                    f"attribute_exists(pk) AND {expr.name('user_id')} = "
                    f"{expr.value(memory.user_id)}"
                ),
                **expr.params(),
            )
        except ClientError as exc:
            raise NotFoundError(f"memory {memory.memory_id} does not exist") from exc

    def delete(self, tenant_id: str, memory_id: str) -> bool:
        old = self._table.call(
            "DeleteItem",
            TableName=self.table_name,
            Key=self._table.key(memory_pk(tenant_id, memory_id), MEMORY_SK),
            ReturnValues="ALL_OLD",
        ).get("Attributes")
        if not old:
            return False
        item = from_attribute_values(old)
        if "marker_sk" in item:
            delete_marker(
                self._table, tenant_id, str(item["user_id"]), str(item["marker_sk"]), memory_id
            )
        return True

    def erase_user(self, tenant_id: str, user_id: str) -> int:
        partition = user_pk(tenant_id, user_id)
        erased: set[tuple[str, str]] = set()
        while True:  # the by_user index may lag behind: repeat until it shows nothing new
            keys = [
                (item["pk"]["S"], item["sk"]["S"])
                for item in self._table.query_all(
                    IndexName=BY_USER_INDEX,
                    KeyConditionExpression="gsi1pk = :p",
                    ExpressionAttributeValues={":p": {"S": partition}},
                    ProjectionExpression="pk, sk",
                )
            ]
            fresh = [key for key in keys if key not in erased]
            if not fresh:
                break
            self._table.delete_keys(fresh)
            erased.update(fresh)
        own = [
            (item["pk"]["S"], item["sk"]["S"])
            for item in self._table.query_all(
                KeyConditionExpression="pk = :p",
                ExpressionAttributeValues={":p": {"S": partition}},
                ProjectionExpression="pk, sk",
                ConsistentRead=True,
            )
        ]
        self._table.delete_keys(own)
        return len(erased)

    def set_cursor(self, tenant_id: str, user_id: str, name: str, value: datetime) -> None:
        self._table.call(
            "PutItem",
            TableName=self.table_name,
            Item=to_attribute_values(
                {
                    "pk": user_pk(tenant_id, user_id),
                    "sk": f"C#{name}",
                    "item_type": "cursor",
                    "value_us": epoch_us(value),
                }
            ),
        )

    # --- reads -----------------------------------------------------------------------------
    def get(self, tenant_id: str, memory_id: str) -> Memory | None:
        found = self._table.call(
            "GetItem",
            TableName=self.table_name,
            Key=self._table.key(memory_pk(tenant_id, memory_id), MEMORY_SK),
            ConsistentRead=True,
            ProjectionExpression="#body",
            ExpressionAttributeNames={"#body": "body"},
        ).get("Item")
        return None if found is None else MEMORY.validate_json(found["body"]["S"])

    def get_many(self, tenant_id: str, memory_ids: Sequence[str]) -> builtins.list[Memory]:
        found = self._table.batch_get(tenant_id, memory_ids, ("memory_id", "body"))
        return [memory_from_item(found[mid]) for mid in memory_ids if mid in found]

    def get_vectors(self, tenant_id: str, memory_ids: Sequence[str]) -> dict[str, StoredVector]:
        found = self._table.batch_get(tenant_id, memory_ids, ("memory_id", "vec", "vec_model"))
        vectors = {mid: vector_from_item(item) for mid, item in found.items()}
        return {mid: vector for mid, vector in vectors.items() if vector is not None}

    def list(
        self,
        tenant_id: str,
        user_id: str,
        query: ListQuery,
        limit: int,
        cursor: str | None = None,
    ) -> Page:
        return list_page(self._table, tenant_id, user_id, query, limit, cursor)

    def get_cursor(self, tenant_id: str, user_id: str, name: str) -> datetime | None:
        found = self._table.call(
            "GetItem",
            TableName=self.table_name,
            Key=self._table.key(user_pk(tenant_id, user_id), f"C#{name}"),
            ConsistentRead=True,
        ).get("Item")
        return None if found is None else from_us(int(found["value_us"]["N"]))

    def iter_all(
        self, tenant_id: str | None = None
    ) -> Sequence[tuple[Memory, StoredVector | None]]:
        return scan_memories(self._table, tenant_id)

    def users_with_episodes_since(self, since: datetime) -> builtins.list[tuple[str, str]]:
        return active_users_since(self._table, since)
