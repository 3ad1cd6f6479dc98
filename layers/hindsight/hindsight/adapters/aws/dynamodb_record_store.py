"""RecordStore on one DynamoDB table (single-table design): the AWS backend's source of truth.

Table design (string keys ``pk``/``sk``; ``#`` and ``%`` inside ids are escaped as ``%23``
and ``%25`` so ids can never forge another key):

=============  ==============================  ===============  =============================
item           pk                              sk               what else
=============  ==============================  ===============  =============================
memory         ``T#{tenant}#M#{memory_id}``    ``M``            filter attributes, ``body``
                                                                (the memory as pydantic JSON),
                                                                ``vec`` (float32 bytes),
                                                                ``vec_model``, ``vec_dim``
dedup marker   ``T#{tenant}#U#{user}``         ``D#{sha256}``   ``memory_id``, ``occurred_us``,
                                                                ``expires_us`` of its memory
cursor         ``T#{tenant}#U#{user}``         ``C#{name}``     ``value_us``
activity       ``T#{tenant}#U#{user}``         ``A``            ``last_episode_us``
=============  ==============================  ===============  =============================

Memories are keyed by id (not by user) so that ``get``/``get_many`` (every retrieve, right
after a store) are strongly consistent reads, and update/delete are conditional writes
on the base key. A user's memories are kept together by the global secondary index
``by_user`` (``gsi1pk`` = ``T#{tenant}#U#{user}``, ``gsi1sk`` = ``{occurred_us + 10^17,
20 digits}#{memory_id}``, so the index order is ``occurred_at`` then id, exactly the
paging order); it projects the filter attributes and ``body`` but not the vector.
Markers, cursors and the activity item share the user's partition in the base table.

``users_with_episodes_since`` reads the sparse index ``by_activity`` (``gsi2pk`` =
``A#{shard 0..15}``, ``gsi2sk`` = ``last_episode_us``, a number) over the activity items,
which each episodic store moves forward with a conditional update.

Times are integer microseconds since the epoch (``*_us``), exact like the SQLite store.
``expires_at`` is the TTL attribute in epoch seconds (rounded up, so DynamoDB never
deletes early); DynamoDB deletes expired items late, so every list filters on the exact
``expires_us`` itself. Dedup: one ``TransactWriteItems`` puts the memory (condition: id
absent) and the marker (condition: absent, or its memory occurred outside the window, or
has expired), so concurrent duplicates create exactly one memory. A marker whose memory
was deleted (TTL, or a crash between the two deletes of ``delete``) is detected and
reclaimed. Pages use the shared keyset cursor of ``hindsight.adapters.memory``; filters
the index cannot key on are a ``FilterExpression`` and pages are read until ``limit``
items pass. Lists and erase read the ``by_user`` index, which DynamoDB updates
asynchronously (usually well under a second) after a write.
"""

from __future__ import annotations

import builtins
import hashlib
import logging
import math
import random
import threading
import time
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import TypeAdapter

from hindsight.adapters.paging import decode_page_cursor, encode_page_cursor, epoch_us
from hindsight.core.errors import (
    ConflictError,
    DuplicateMemoryError,
    NotFoundError,
    UnavailableError,
)
from hindsight.core.models import (
    EpisodicMemory,
    ListQuery,
    Memory,
    Page,
    SemanticMemory,
    StoredVector,
)

logger = logging.getLogger(__name__)

_MEMORY: TypeAdapter[Memory] = TypeAdapter(Memory)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()
MEMORY_SK = "M"
ACTIVITY_SK = "A"
BY_USER_INDEX = "by_user"
BY_ACTIVITY_INDEX = "by_activity"
ACTIVITY_SHARDS = 16
_OCCURRED_OFFSET = 10**17  # makes pre-1970 times positive so the padded key sorts
_BATCH_GET = 100
_BATCH_WRITE = 25
_PUT_ATTEMPTS = 10
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


# --- keys ------------------------------------------------------------------------------
def _escape(value: str) -> str:
    return value.replace("%", "%25").replace("#", "%23")


def memory_pk(tenant_id: str, memory_id: str) -> str:
    return f"T#{_escape(tenant_id)}#M#{_escape(memory_id)}"


def user_pk(tenant_id: str, user_id: str) -> str:
    return f"T#{_escape(tenant_id)}#U#{_escape(user_id)}"


def _occurred_key(occurred_us: int, memory_id: str = "") -> str:
    key = f"{occurred_us + _OCCURRED_OFFSET:020d}"
    return f"{key}#{memory_id}" if memory_id else key


def _activity_shard(tenant_id: str, user_id: str) -> str:
    return f"A#{zlib.crc32(f'{tenant_id}#{user_id}'.encode()) % ACTIVITY_SHARDS}"


def _marker_sk(dedup_key: str) -> str:
    return "D#" + hashlib.sha256(dedup_key.encode()).hexdigest()


def _ceil_seconds(moment: datetime) -> int:
    return math.ceil(epoch_us(moment) / 1_000_000)


def _from_us(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


# --- item <-> memory mapping (shared with the stream indexer) -----------------------------
def memory_item(memory: Memory, vector: StoredVector | None = None) -> dict[str, Any]:
    """The DynamoDB item of a memory, as plain Python values (None values left out)."""
    values: dict[str, Any] = {
        "pk": memory_pk(memory.tenant_id, memory.memory_id),
        "sk": MEMORY_SK,
        "item_type": "memory",
        "tenant_id": memory.tenant_id,
        "user_id": memory.user_id,
        "memory_id": memory.memory_id,
        "kind": memory.kind.value,
        "scope": memory.scope,
        "status": memory.status.value if isinstance(memory, SemanticMemory) else None,
        "category": memory.category,
        "session_id": memory.session_id if isinstance(memory, EpisodicMemory) else None,
        "occurred_us": epoch_us(memory.occurred_at),
        "created_us": epoch_us(memory.created_at),
        "expires_us": None if memory.expires_at is None else epoch_us(memory.expires_at),
        "expires_at": None if memory.expires_at is None else _ceil_seconds(memory.expires_at),
        "body": memory.model_dump_json(),
        "gsi1pk": user_pk(memory.tenant_id, memory.user_id),
        "gsi1sk": _occurred_key(epoch_us(memory.occurred_at), memory.memory_id),
    }
    if vector is not None:
        values.update(vector_attributes(vector))
    return {name: value for name, value in values.items() if value is not None}


def vector_attributes(vector: StoredVector) -> dict[str, Any]:
    return {
        "vec": np.asarray(vector.values, dtype="<f4").tobytes(),
        "vec_model": vector.model,
        "vec_dim": vector.dim,
    }


def is_memory_item(item: Mapping[str, Any]) -> bool:
    return item.get("item_type") == "memory" and "body" in item


def memory_from_item(item: Mapping[str, Any]) -> Memory:
    """The memory held by an item (plain values, e.g. from TypeDeserializer)."""
    return _MEMORY.validate_json(item["body"])


def vector_from_item(item: Mapping[str, Any]) -> StoredVector | None:
    """The stored vector of an item, or None; ``vec`` may be bytes or boto3 Binary."""
    data = item.get("vec")
    if data is None:
        return None
    if isinstance(data, Binary):
        data = data.value
    return StoredVector(
        model=str(item["vec_model"]), values=np.frombuffer(bytes(data), dtype="<f4").copy()
    )


def to_attribute_values(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _SERIALIZER.serialize(value) for name, value in values.items()}


def from_attribute_values(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _DESERIALIZER.deserialize(value) for name, value in item.items()}


# --- expressions ---------------------------------------------------------------------------
class _Expression:
    """Placeholders for attribute names and values of one request."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def name(self, attribute: str) -> str:
        """The ``#name`` token standing for an attribute name in an expression."""
        token = f"#{attribute}"
        self.names[token] = attribute
        return token

    def value(self, value: Any) -> str:
        """The ``:vN`` token standing for a value in an expression."""
        token = f":v{len(self.values)}"
        self.values[token] = _SERIALIZER.serialize(value)
        return token

    def one_of(self, attribute: str, values: frozenset[Any]) -> str:
        options = ", ".join(self.value(str(v)) for v in sorted(values))
        return f"{self.name(attribute)} IN ({options})"

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.names:
            params["ExpressionAttributeNames"] = self.names
        if self.values:
            params["ExpressionAttributeValues"] = self.values
        return params


def _list_filter(query: ListQuery, expr: _Expression) -> list[str]:
    clauses: list[str] = []
    for attribute, values in (
        ("kind", query.kinds),
        ("status", query.statuses),
        ("category", query.categories),
        ("scope", query.scopes),
    ):
        if values is not None:
            clauses.append(expr.one_of(attribute, values))
    if query.session_id is not None:
        clauses.append(f"{expr.name('session_id')} = {expr.value(query.session_id)}")
    if query.created_after is not None:
        clauses.append(f"{expr.name('created_us')} > {expr.value(epoch_us(query.created_after))}")
    if query.now is not None and not query.include_expired:
        expires = expr.name("expires_us")
        clauses.append(
            f"(attribute_not_exists({expires}) OR {expires} > {expr.value(epoch_us(query.now))})"
        )
    return clauses


# --- table creation --------------------------------------------------------------------------
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
    return boto3.client("dynamodb", region_name=region, config=config)


class DynamoDBRecordStore:
    """RecordStore in one DynamoDB table; thread-safe (boto3 clients are)."""

    def __init__(self, table_name: str, client: Any = None) -> None:
        self.table_name = table_name
        self.client = client if client is not None else default_client()
        self._counts_lock = threading.Lock()
        self.request_counts: Counter[str] = Counter()

    # --- plumbing ------------------------------------------------------------------------
    def _call(self, operation: str, **params: Any) -> dict[str, Any]:
        with self._counts_lock:
            self.request_counts[operation] += 1
        method = getattr(self.client, _snake(operation))
        with self._translate(operation):
            return method(**params)  # type: ignore[no-any-return]

    @contextmanager
    def _translate(self, operation: str) -> Iterator[None]:
        try:
            yield
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = error.get("Code", "")
            if code in {"ConditionalCheckFailedException", "TransactionCanceledException"}:
                raise
            raise UnavailableError(self._advice(operation, code, error.get("Message", ""))) from exc
        except BotoCoreError as exc:
            raise UnavailableError(
                f"cannot reach DynamoDB for table {self.table_name} ({exc}); check the region, "
                "the network, credentials and AWS_ENDPOINT_URL_DYNAMODB, then retry"
            ) from exc

    def _advice(self, operation: str, code: str, message: str) -> str:
        if code == "ResourceNotFoundException":
            return (
                f"DynamoDB table {self.table_name} does not exist; create it with "
                "`HINDSIGHT_BACKEND=aws hindsight serve` (creates missing resources), deploy "
                "template.yaml, or set HINDSIGHT_TABLE to an existing table"
            )
        if code in {
            "ProvisionedThroughputExceededException",
            "ThrottlingException",
            "RequestLimitExceeded",
        }:
            return f"DynamoDB is throttling requests to {self.table_name}; retry in a moment"
        if code in {
            "AccessDeniedException",
            "UnrecognizedClientException",
            "ExpiredTokenException",
        }:
            return (
                f"DynamoDB refused {operation} on {self.table_name} ({code}); check the "
                "credentials and that the role may use the table"
            )
        return f"DynamoDB {operation} on {self.table_name} failed ({code}: {message}); retry later"

    def _key(self, pk: str, sk: str) -> dict[str, Any]:
        return {"pk": {"S": pk}, "sk": {"S": sk}}

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
                self._call(
                    "PutItem",
                    TableName=self.table_name,
                    Item=to_attribute_values(values),
                    ConditionExpression="attribute_not_exists(pk)",
                )
            except ClientError as exc:
                raise self._conflict(memory) from exc
        else:
            values["marker_sk"] = _marker_sk(dedup_key)
            self._put_deduplicated(memory, values, dedup_window_seconds)
        if isinstance(memory, EpisodicMemory):
            self._touch_activity(memory)

    def _conflict(self, memory: Memory) -> ConflictError:
        return ConflictError(f"memory {memory.memory_id} already exists; store it under a new id")

    def _put_deduplicated(
        self, memory: Memory, values: dict[str, Any], window_seconds: float
    ) -> None:
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
            expr = _Expression()
            condition = (
                f"attribute_not_exists(pk) OR {expr.name('occurred_us')} <= "
                f"{expr.value(occurred - window_us)} OR {expr.name('occurred_us')} >= "
                f"{expr.value(occurred + window_us)} OR {expr.name('expires_us')} <= "
                f"{expr.value(values['created_us'])}"
            )
            if stale is not None:
                condition += f" OR {expr.name('memory_id')} = {expr.value(stale)}"
            try:
                self._call(
                    "TransactWriteItems",
                    TransactItems=[
                        {
                            "Put": {
                                "TableName": self.table_name,
                                "Item": to_attribute_values(values),
                                "ConditionExpression": "attribute_not_exists(pk)",
                            }
                        },
                        {
                            "Put": {
                                "TableName": self.table_name,
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
                    raise self._conflict(memory) from exc
                if codes[1] == "ConditionalCheckFailed":
                    existing = self._marker_owner(marker_values, reasons[1].get("Item"))
                    if existing is not None and self._exists(memory.tenant_id, existing):
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
        self, marker_values: Mapping[str, Any], old_item: Mapping[str, Any] | None
    ) -> str | None:
        if old_item:
            return str(from_attribute_values(old_item)["memory_id"])
        found = self._call(
            "GetItem",
            TableName=self.table_name,
            Key=self._key(marker_values["pk"], marker_values["sk"]),
            ConsistentRead=True,
        ).get("Item")
        return None if found is None else str(found["memory_id"]["S"])

    def _exists(self, tenant_id: str, memory_id: str) -> bool:
        found = self._call(
            "GetItem",
            TableName=self.table_name,
            Key=self._key(memory_pk(tenant_id, memory_id), MEMORY_SK),
            ConsistentRead=True,
            ProjectionExpression="pk",
        )
        return "Item" in found

    def _touch_activity(self, memory: EpisodicMemory) -> None:
        """Move the user's activity item forward to this episode's ``created_at``."""
        created = epoch_us(memory.created_at)
        expr = _Expression()
        last = expr.name("last_episode_us")
        new = expr.value(created)
        try:
            self._call(
                "UpdateItem",
                TableName=self.table_name,
                Key=self._key(user_pk(memory.tenant_id, memory.user_id), ACTIVITY_SK),
                UpdateExpression=(
                    f"SET {last} = {new}, {expr.name('gsi2sk')} = {new}, "
                    f"{expr.name('gsi2pk')} = "
                    f"{expr.value(_activity_shard(memory.tenant_id, memory.user_id))}, "
                    f"{expr.name('tenant_id')} = {expr.value(memory.tenant_id)}, "
                    f"{expr.name('user_id')} = {expr.value(memory.user_id)}, "
                    f"{expr.name('item_type')} = {expr.value('activity')}"
                ),
                ConditionExpression=f"attribute_not_exists({last}) OR {last} < {new}",
                **expr.params(),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    def update(self, memory: Memory, vector: StoredVector | None = None) -> None:
        values = memory_item(memory, vector)
        expr = _Expression()
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
            self._call(
                "UpdateItem",
                TableName=self.table_name,
                Key=self._key(values["pk"], MEMORY_SK),
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
        old = self._call(
            "DeleteItem",
            TableName=self.table_name,
            Key=self._key(memory_pk(tenant_id, memory_id), MEMORY_SK),
            ReturnValues="ALL_OLD",
        ).get("Attributes")
        if not old:
            return False
        item = from_attribute_values(old)
        if "marker_sk" in item:
            self._delete_marker(tenant_id, str(item["user_id"]), str(item["marker_sk"]), memory_id)
        return True

    def _delete_marker(self, tenant_id: str, user_id: str, marker_sk: str, memory_id: str) -> None:
        """Free the memory's dedup marker unless a newer memory has claimed it since."""
        try:
            self._call(
                "DeleteItem",
                TableName=self.table_name,
                Key=self._key(user_pk(tenant_id, user_id), marker_sk),
                ConditionExpression="memory_id = :m",
                ExpressionAttributeValues={":m": {"S": memory_id}},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    def erase_user(self, tenant_id: str, user_id: str) -> int:
        partition = user_pk(tenant_id, user_id)
        erased: set[tuple[str, str]] = set()
        while True:  # the by_user index may lag behind: repeat until it shows nothing new
            keys = [
                (item["pk"]["S"], item["sk"]["S"])
                for item in self._query_all(
                    IndexName=BY_USER_INDEX,
                    KeyConditionExpression="gsi1pk = :p",
                    ExpressionAttributeValues={":p": {"S": partition}},
                    ProjectionExpression="pk, sk",
                )
            ]
            fresh = [key for key in keys if key not in erased]
            if not fresh:
                break
            self._delete_keys(fresh)
            erased.update(fresh)
        own = [
            (item["pk"]["S"], item["sk"]["S"])
            for item in self._query_all(
                KeyConditionExpression="pk = :p",
                ExpressionAttributeValues={":p": {"S": partition}},
                ProjectionExpression="pk, sk",
                ConsistentRead=True,
            )
        ]
        self._delete_keys(own)
        return len(erased)

    def _delete_keys(self, keys: Sequence[tuple[str, str]]) -> None:
        for start in range(0, len(keys), _BATCH_WRITE):
            requests = [
                {"DeleteRequest": {"Key": self._key(pk, sk)}}
                for pk, sk in keys[start : start + _BATCH_WRITE]
            ]
            pending: dict[str, Any] = {self.table_name: requests}
            attempt = 0
            while pending:
                response = self._call("BatchWriteItem", RequestItems=pending)
                pending = response.get("UnprocessedItems") or {}
                attempt += 1
                if pending:
                    time.sleep(min(1.0, 0.05 * 2**attempt))

    def set_cursor(self, tenant_id: str, user_id: str, name: str, value: datetime) -> None:
        self._call(
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
        found = self._call(
            "GetItem",
            TableName=self.table_name,
            Key=self._key(memory_pk(tenant_id, memory_id), MEMORY_SK),
            ConsistentRead=True,
            ProjectionExpression="#body",
            ExpressionAttributeNames={"#body": "body"},
        ).get("Item")
        return None if found is None else _MEMORY.validate_json(found["body"]["S"])

    def _batch_get(
        self, tenant_id: str, memory_ids: Sequence[str], attributes: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        """Items by memory id (strongly consistent), with the attributes named."""
        found: dict[str, dict[str, Any]] = {}
        unique = list(dict.fromkeys(memory_ids))
        for start in range(0, len(unique), _BATCH_GET):
            keys = [
                self._key(memory_pk(tenant_id, mid), MEMORY_SK)
                for mid in unique[start : start + _BATCH_GET]
            ]
            pending: dict[str, Any] = {
                self.table_name: {
                    "Keys": keys,
                    "ConsistentRead": True,
                    "ProjectionExpression": ", ".join(f"#{a}" for a in attributes),
                    "ExpressionAttributeNames": {f"#{a}": a for a in attributes},
                }
            }
            attempt = 0
            while pending:
                response = self._call("BatchGetItem", RequestItems=pending)
                for raw in response.get("Responses", {}).get(self.table_name, []):
                    item = from_attribute_values(raw)
                    found[str(item["memory_id"])] = item
                pending = response.get("UnprocessedKeys") or {}
                attempt += 1
                if pending:
                    time.sleep(min(1.0, 0.05 * 2**attempt))
        return found

    def get_many(self, tenant_id: str, memory_ids: Sequence[str]) -> builtins.list[Memory]:
        found = self._batch_get(tenant_id, memory_ids, ("memory_id", "body"))
        return [memory_from_item(found[mid]) for mid in memory_ids if mid in found]

    def get_vectors(self, tenant_id: str, memory_ids: Sequence[str]) -> dict[str, StoredVector]:
        found = self._batch_get(tenant_id, memory_ids, ("memory_id", "vec", "vec_model"))
        vectors = {mid: vector_from_item(item) for mid, item in found.items()}
        return {mid: vector for mid, vector in vectors.items() if vector is not None}

    def _query_all(self, **params: Any) -> Iterator[dict[str, Any]]:
        start: dict[str, Any] | None = None
        while True:
            extra = {"ExclusiveStartKey": start} if start else {}
            response = self._call("Query", TableName=self.table_name, **params, **extra)
            yield from response.get("Items", [])
            start = response.get("LastEvaluatedKey")
            if not start:
                return

    def list(
        self,
        tenant_id: str,
        user_id: str,
        query: ListQuery,
        limit: int,
        cursor: str | None = None,
    ) -> Page:
        limit = max(1, limit)
        partition = user_pk(tenant_id, user_id)
        start_key: dict[str, Any] | None = None
        if cursor is not None:
            occurred_us, memory_id = decode_page_cursor(cursor, query.oldest_first)
            start_key = {
                "gsi1pk": {"S": partition},
                "gsi1sk": {"S": _occurred_key(occurred_us, memory_id)},
                "pk": {"S": memory_pk(tenant_id, memory_id)},
                "sk": {"S": MEMORY_SK},
            }
        if query.scopes is not None and not query.scopes:
            return Page(items=[])
        expr = _Expression()
        key_condition = f"{expr.name('gsi1pk')} = {expr.value(partition)}"
        low = None if query.since is None else _occurred_key(epoch_us(query.since))
        high = None if query.until is None else _occurred_key(epoch_us(query.until))
        sort_key = "gsi1sk"
        if low is not None and high is not None:
            key_condition += f" AND {sort_key} BETWEEN {expr.value(low)} AND {expr.value(high)}"
        elif low is not None:
            key_condition += f" AND {sort_key} >= {expr.value(low)}"
        elif high is not None:
            key_condition += f" AND {sort_key} < {expr.value(high)}"
        filters = _list_filter(query, expr)
        params: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": BY_USER_INDEX,
            "KeyConditionExpression": key_condition,
            "ScanIndexForward": query.oldest_first,
            "ProjectionExpression": expr.name("body"),
            # a filter drops items after they are read: read bigger pages then
            "Limit": limit + 1 if not filters else min(1_000, max(50, 4 * (limit + 1))),
        }
        if filters:
            params["FilterExpression"] = " AND ".join(filters)
        params.update(expr.params())
        if low is not None and high is not None and low >= high:
            return Page(items=[])
        chosen: builtins.list[Memory] = []
        more = False
        while True:
            if start_key is not None:
                params["ExclusiveStartKey"] = start_key
            response = self._call("Query", **params)
            for raw in response.get("Items", []):
                if len(chosen) == limit:
                    more = True
                    break
                chosen.append(_MEMORY.validate_json(raw["body"]["S"]))
            start_key = response.get("LastEvaluatedKey")
            if more or not start_key:
                break
        next_cursor = None
        if more:
            last = chosen[-1]
            next_cursor = encode_page_cursor(
                epoch_us(last.occurred_at), last.memory_id, query.oldest_first
            )
        return Page(items=chosen, next_cursor=next_cursor)

    def get_cursor(self, tenant_id: str, user_id: str, name: str) -> datetime | None:
        found = self._call(
            "GetItem",
            TableName=self.table_name,
            Key=self._key(user_pk(tenant_id, user_id), f"C#{name}"),
            ConsistentRead=True,
        ).get("Item")
        return None if found is None else _from_us(int(found["value_us"]["N"]))

    def iter_all(
        self, tenant_id: str | None = None
    ) -> Sequence[tuple[Memory, StoredVector | None]]:
        expr = _Expression()
        prefix = "T#" if tenant_id is None else f"T#{_escape(tenant_id)}#M#"
        params: dict[str, Any] = {
            "TableName": self.table_name,
            "FilterExpression": (
                f"{expr.name('item_type')} = {expr.value('memory')} AND "
                f"begins_with({expr.name('pk')}, {expr.value(prefix)})"
            ),
            **expr.params(),
        }
        found: builtins.list[tuple[Memory, StoredVector | None]] = []
        start: dict[str, Any] | None = None
        while True:
            extra = {"ExclusiveStartKey": start} if start else {}
            response = self._call("Scan", **params, **extra)
            for raw in response.get("Items", []):
                item = from_attribute_values(raw)
                found.append((memory_from_item(item), vector_from_item(item)))
            start = response.get("LastEvaluatedKey")
            if not start:
                break
        found.sort(key=lambda pair: (pair[0].tenant_id, pair[0].memory_id))
        return found

    def users_with_episodes_since(self, since: datetime) -> builtins.list[tuple[str, str]]:
        users: set[tuple[str, str]] = set()
        for shard in range(ACTIVITY_SHARDS):
            for raw in self._query_all(
                IndexName=BY_ACTIVITY_INDEX,
                KeyConditionExpression="gsi2pk = :s AND gsi2sk > :t",
                ExpressionAttributeValues={
                    ":s": {"S": f"A#{shard}"},
                    ":t": {"N": str(epoch_us(since))},
                },
                ProjectionExpression="#t, #u",
                ExpressionAttributeNames={"#t": "tenant_id", "#u": "user_id"},
            ):
                users.add((raw["tenant_id"]["S"], raw["user_id"]["S"]))
        return sorted(users)


def _snake(operation: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in operation).lstrip("_")
