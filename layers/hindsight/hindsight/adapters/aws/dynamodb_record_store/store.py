"""DynamoDBRecordStore: the RecordStore port on one table (see the package for its layout)."""

from __future__ import annotations

import builtins
import functools
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from hindsight.adapters.aws.dynamodb_record_store.cursors import (
    acquire_lease,
    get_cursor,
    release_lease,
    set_cursor,
)
from hindsight.adapters.aws.dynamodb_record_store.dedup import delete_marker, put_deduplicated
from hindsight.adapters.aws.dynamodb_record_store.errors import (
    is_condition_failure,
)
from hindsight.adapters.aws.dynamodb_record_store.expressions import Expression
from hindsight.adapters.aws.dynamodb_record_store.hits import (
    HIT_ATTRIBUTES,
    apply_hits,
    hit_values,
    record_hits,
    with_hits,
)
from hindsight.adapters.aws.dynamodb_record_store.items import (
    ACTIVITY_SK,
    MEMORY,
    MEMORY_SK,
    activity_shard,
    from_attribute_values,
    marker_sk,
    memory_from_item,
    memory_item,
    memory_pk,
    to_attribute_values,
    user_pk,
    vector_from_item,
)
from hindsight.adapters.aws.dynamodb_record_store.large_items import (
    DEFAULT_INLINE_BYTES,
    VECTOR_ATTRIBUTES,
    LargeItems,
    references_of,
)
from hindsight.adapters.aws.dynamodb_record_store.listing import (
    active_users_since,
    created_page,
    list_ids,
    list_page,
    scan_memories,
)
from hindsight.adapters.aws.dynamodb_record_store.payloads import (
    PayloadMissingError,
    S3PayloadStore,
)
from hindsight.adapters.aws.dynamodb_record_store.requests import TableRequests
from hindsight.adapters.aws.dynamodb_record_store.table import (
    BY_USER_CREATED_INDEX,
    BY_USER_INDEX,
    add_created_index,
    add_facts_index,
    default_client,
    facts_indexed,
    index_status,
)
from hindsight.adapters.backend_rules import already_exists
from hindsight.adapters.paging import epoch_us
from hindsight.core.errors import HindsightError, NotFoundError
from hindsight.core.models import EpisodicMemory, ListQuery, Memory, Page, StoredVector

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
INDEX_RECHECK = 300.0  # seconds between looks while an index cannot be read yet
CREATED_OVERFLOW_KEPT = 1_000  # lists remembered as too big for by_user_created
UPGRADE_SECONDS = 300.0  # a maintenance run's share for ``upgrade``; the next does the rest


def _always() -> bool:
    return True


class _Ready:
    """Whether the table can serve a read through an index: ``look`` is asked at most
    every ``INDEX_RECHECK`` seconds until it says yes (a table made before the index),
    then never again."""

    def __init__(self, look: Callable[[], bool]) -> None:
        self._look = look
        self.ready = False
        self.looked = float("-inf")  # monotonic time of the last look

    def __call__(self) -> bool:
        if not self.ready and time.monotonic() - self.looked > INDEX_RECHECK:
            self.looked = time.monotonic()
            self.ready = self._look()
        return self.ready

    def again(self) -> None:
        """Look at the next call (the table was just changed)."""
        self.looked = float("-inf")


_READ_ATTEMPTS = 3
_VECTOR_READ = ("memory_id", "vec", "vec_model", "vec_spans", "vec_ref")


class DynamoDBRecordStore:
    """RecordStore in one DynamoDB table; thread-safe (boto3 clients are).

    ``payloads`` (an ``S3PayloadStore`` on the bucket of ``HINDSIGHT_BLOB_BUCKET``) keeps
    what one item cannot hold (see ``large_items``); without it such memories are refused.
    """

    def __init__(
        self,
        table_name: str,
        client: Any = None,
        payloads: S3PayloadStore | None = None,
        inline_bytes: int = DEFAULT_INLINE_BYTES,
        create_indexes: bool = False,
    ) -> None:
        self._table = TableRequests(table_name, client if client is not None else default_client())
        self._create_indexes = create_indexes  # ``upgrade`` may add an index the table lacks
        self._large = LargeItems(payloads, inline_bytes)
        # lists of facts read ``by_user_facts`` once every fact is in it (``facts_indexed``)
        self._facts_indexed = _Ready(lambda: facts_indexed(self.client, self.table_name))
        # lists of what was stored since read ``by_user_created`` once it is active
        self._created_indexed = _Ready(self._created_index_active)
        # (tenant, user, created_after) whose list had more stored since than one read
        self._created_overflow: set[tuple[str, str, int]] = set()

    @property
    def table_name(self) -> str:
        return self._table.table_name

    @property
    def client(self) -> Any:
        return self._table.client

    @property
    def payloads(self) -> S3PayloadStore | None:
        return self._large.reader

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
        values = {**memory_item(memory, vector), **hit_values(memory)}
        written = self._large.spill(memory, values)
        try:
            self._put_item(memory, values, dedup_key, dedup_window_seconds)
        except BaseException:
            self._discard_unless_named(memory, written)
            raise
        if isinstance(memory, EpisodicMemory):
            self._touch_activity(memory)

    def _put_item(
        self,
        memory: Memory,
        values: dict[str, Any],
        dedup_key: str | None,
        dedup_window_seconds: float,
    ) -> None:
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

    def _discard_unless_named(self, memory: Memory, written: Sequence[str]) -> None:
        """After a failed write: delete the objects it wrote, unless the item names them
        after all (a write whose answer was lost); if that cannot be told, keep them (an
        unnamed object costs storage until the user is erased; a missing one, a memory)."""
        if not written:
            return
        try:
            found = self._table.call(
                "GetItem",
                TableName=self.table_name,
                Key=self._table.key(memory_pk(memory.tenant_id, memory.memory_id), MEMORY_SK),
                ConsistentRead=True,
                ProjectionExpression="#b, #r",
                ExpressionAttributeNames={"#b": "body", "#r": "vec_ref"},
            ).get("Item")
            named = set(references_of(from_attribute_values(found or {})))
            self._large.discard([ref for ref in written if ref not in named])
        except HindsightError:
            logger.warning(
                "objects of a failed write kept memory_id=%s objects=%d",
                memory.memory_id,
                len(written),
            )

    def _discard_quietly(self, references: Sequence[str]) -> None:
        """Delete objects the item no longer names; a failure leaves them (logged)."""
        try:
            self._large.discard(references)
        except HindsightError:
            logger.warning("unreferenced objects kept objects=%d", len(references))

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
        written = self._large.spill(memory, values)
        expr = Expression()
        keep = {"pk", "sk"}
        assignments = [
            f"{expr.name(name)} = {expr.value(value)}"
            for name, value in values.items()
            if name not in keep
        ]
        removable = {"status", "category", "session_id", "expires_us", "expires_at"}
        if vector is not None:  # the new vector replaces the old, inline or in S3
            removable.update(VECTOR_ATTRIBUTES)
        removals = [expr.name(name) for name in sorted(removable - set(values))]
        update = "SET " + ", ".join(assignments)
        if removals:
            update += " REMOVE " + ", ".join(removals)
        try:
            response = self._table.call(
                "UpdateItem",
                TableName=self.table_name,
                Key=self._table.key(values["pk"], MEMORY_SK),
                UpdateExpression=update,
                ConditionExpression=(
                    f"attribute_exists(pk) AND {expr.name('user_id')} = "
                    f"{expr.value(memory.user_id)}"
                ),
                ReturnValues="UPDATED_OLD",
                **expr.params(),
            )
        except ClientError as exc:
            self._large.discard(written)
            raise NotFoundError(f"memory {memory.memory_id} does not exist") from exc
        except BaseException:
            self._discard_unless_named(memory, written)
            raise
        old = references_of(from_attribute_values(response.get("Attributes") or {}))
        self._discard_quietly([ref for ref in old if ref not in written])

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
        self._large.discard(references_of(item))
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
        if self._large.payloads is not None:
            self._large.payloads.delete_user(tenant_id, user_id)
        return len(erased)

    def set_cursor(self, tenant_id: str, user_id: str, name: str, value: datetime) -> None:
        set_cursor(self._table, tenant_id, user_id, name, value)

    def acquire_lease(
        self, tenant_id: str, user_id: str, name: str, holder: str, until: datetime, now: datetime
    ) -> bool:
        return acquire_lease(self._table, tenant_id, user_id, name, holder, until, now)

    def release_lease(self, tenant_id: str, user_id: str, name: str, holder: str) -> None:
        release_lease(self._table, tenant_id, user_id, name, holder)

    # --- reads -----------------------------------------------------------------------------
    def _reading(self, read: Callable[[], _T]) -> _T:
        """Run a read again when an object an item named was replaced meanwhile."""
        for attempt in range(_READ_ATTEMPTS):
            try:
                return read()
            except PayloadMissingError:
                if attempt == _READ_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def get(self, tenant_id: str, memory_id: str) -> Memory | None:
        return self._reading(lambda: self._get(tenant_id, memory_id))

    def _get(self, tenant_id: str, memory_id: str) -> Memory | None:
        found = self._table.call(
            "GetItem",
            TableName=self.table_name,
            Key=self._table.key(memory_pk(tenant_id, memory_id), MEMORY_SK),
            ConsistentRead=True,
            ProjectionExpression="#body, #h, #l",
            ExpressionAttributeNames={"#body": "body", "#h": "hit_count", "#l": "last_hit_us"},
        ).get("Item")
        if found is None:
            return None
        memory = MEMORY.validate_json(self._large.bodies([found["body"]["S"]])[0])
        return apply_hits(memory, from_attribute_values(found))

    def get_many(self, tenant_id: str, memory_ids: Sequence[str]) -> builtins.list[Memory]:
        def read() -> builtins.list[Memory]:
            found = self._table.batch_get(
                tenant_id, memory_ids, ("memory_id", "body", *HIT_ATTRIBUTES)
            )
            self._large.hydrate(list(found.values()))
            return [memory_from_item(found[mid]) for mid in memory_ids if mid in found]

        return self._reading(read)

    def get_vectors(self, tenant_id: str, memory_ids: Sequence[str]) -> dict[str, StoredVector]:
        def read() -> dict[str, StoredVector]:
            found = self._table.batch_get(tenant_id, memory_ids, _VECTOR_READ)
            self._large.hydrate(list(found.values()))
            vectors = {mid: vector_from_item(item) for mid, item in found.items()}
            return {mid: vector for mid, vector in vectors.items() if vector is not None}

        return self._reading(read)

    def list(
        self,
        tenant_id: str,
        user_id: str,
        query: ListQuery,
        limit: int,
        cursor: str | None = None,
    ) -> Page:
        if query.created_after is not None and self._created_indexed():
            overflow = (tenant_id, user_id, epoch_us(query.created_after))
            if overflow not in self._created_overflow:
                fetch = functools.partial(self.get_many, tenant_id)
                since = created_page(self._table, tenant_id, user_id, query, limit, cursor, fetch)
                if since is not None:
                    return since
                # too many stored since: the next pages of this list read by_user at once
                if len(self._created_overflow) >= CREATED_OVERFLOW_KEPT:
                    self._created_overflow.clear()
                self._created_overflow.add(overflow)
        facts = self._facts_indexed()
        page = self._reading(
            lambda: list_page(
                self._table, tenant_id, user_id, query, limit, cursor, self._large.bodies, facts
            )
        )
        with_hits(self._table, tenant_id, page.items)
        return page

    def list_ids(
        self, tenant_id: str, user_id: str, query: ListQuery, limit: int
    ) -> builtins.list[str]:
        facts = self._facts_indexed()
        return list_ids(self._table, tenant_id, user_id, query, limit, facts)  # reads no S3

    def _created_index_active(self) -> bool:
        try:
            status = index_status(self.client, self.table_name, BY_USER_CREATED_INDEX)
        except ClientError as exc:  # no DescribeTable permission: list as before
            logger.warning("cannot tell whether %s is there (%s)", BY_USER_CREATED_INDEX, exc)
            return False
        return status == "ACTIVE"

    def upgrade(self) -> dict[str, int]:
        """The maintenance run's share of bringing a table made before ``by_user_facts``
        and ``by_user_created`` in step (``core/usecases/archive.py``: ``Upgradable``);
        0 once it is. DynamoDB adds one index at a time: the second waits for a run after
        the first is being filled."""
        until = time.monotonic() + UPGRADE_SECONDS
        indexed = self.index_facts(self._create_indexes, lambda: time.monotonic() < until)
        added = not self._created_indexed() and add_created_index(
            self.client, self.table_name, self._create_indexes
        )
        self._created_indexed.again()
        return {"facts_indexed": indexed, "indexes_added": int(added)}

    def index_facts(
        self, create_index: bool = False, time_left: Callable[[], bool] = _always
    ) -> int:
        """Put a table made before ``by_user_facts`` in step with it: the index is added
        when missing (``create_index``; a deployed stack's template has it), every fact
        item without its keys gets them, then the table is marked. Returns the facts
        updated; nothing is marked if the index is missing or time ran out (run again)."""
        if self._facts_indexed():
            return 0
        updated = add_facts_index(self.client, self.table_name, create_index, time_left)
        self._facts_indexed.again()
        return updated

    def get_cursor(self, tenant_id: str, user_id: str, name: str) -> datetime | None:
        return get_cursor(self._table, tenant_id, user_id, name)

    def iter_all(
        self, tenant_id: str | None = None
    ) -> Sequence[tuple[Memory, StoredVector | None]]:
        return self._reading(lambda: scan_memories(self._table, tenant_id, self._large.hydrate))

    def users_with_episodes_since(self, since: datetime) -> builtins.list[tuple[str, str]]:
        return active_users_since(self._table, since)

    def record_hits(self, tenant_id: str, hits: Mapping[str, int], at: datetime) -> None:
        record_hits(self._table, tenant_id, hits, at)
