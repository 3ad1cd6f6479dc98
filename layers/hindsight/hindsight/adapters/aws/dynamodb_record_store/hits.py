"""Access tracking on DynamoDB: ``hit_count`` and ``last_hit_us`` on each memory item.

``record_hits`` sends one ``UpdateItem`` per memory: ``ADD hit_count :n`` (DynamoDB adds
atomically, so flushes from many Lambda containers never lose a count) and ``SET
last_hit_us``, on condition that the item exists (a memory deleted meanwhile is not
recreated as a stub). Updates of a memory (``SET`` of its other attributes) leave both
alone. The ``by_user`` index does not project them, so a list page reads them from the
table afterwards (``with_hits``: one BatchGetItem per 100 memories of the page).
The stream indexer ignores a MODIFY that changed only these (``only_hits_changed``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from hindsight.adapters.aws.dynamodb_record_store.errors import is_condition_failure
from hindsight.adapters.aws.dynamodb_record_store.items import MEMORY_SK, memory_pk
from hindsight.adapters.aws.dynamodb_record_store.requests import TableRequests
from hindsight.adapters.paging import epoch_us, from_epoch_us
from hindsight.core.models import Memory

HIT_ATTRIBUTES = ("hit_count", "last_hit_us")


def hit_values(memory: Memory) -> dict[str, Any]:
    """The hit attributes of a new item (an imported memory keeps its counts)."""
    values: dict[str, Any] = {}
    if memory.hit_count:
        values["hit_count"] = memory.hit_count
    if memory.last_hit_at is not None:
        values["last_hit_us"] = epoch_us(memory.last_hit_at)
    return values


def apply_hits(memory: Memory, item: Mapping[str, Any]) -> Memory:
    """The memory with the counts its item holds (plain values)."""
    if "hit_count" in item:
        memory.hit_count = int(item["hit_count"])
    if "last_hit_us" in item:
        memory.last_hit_at = from_epoch_us(int(item["last_hit_us"]))
    return memory


def record_hits(
    table: TableRequests, tenant_id: str, hits: Mapping[str, int], at: datetime
) -> None:
    at_us = epoch_us(at)
    for memory_id, count in hits.items():
        try:
            table.call(
                "UpdateItem",
                TableName=table.table_name,
                Key=table.key(memory_pk(tenant_id, memory_id), MEMORY_SK),
                UpdateExpression="ADD #h :n SET #l = :t",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames={"#h": "hit_count", "#l": "last_hit_us"},
                ExpressionAttributeValues={":n": {"N": str(count)}, ":t": {"N": str(at_us)}},
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            # deleted since it was returned: nothing to count


def with_hits(table: TableRequests, tenant_id: str, memories: Sequence[Memory]) -> None:
    """Fill in the counts of memories read from the ``by_user`` index (in place)."""
    if not memories:
        return
    found = table.batch_get(
        tenant_id, [m.memory_id for m in memories], ("memory_id", *HIT_ATTRIBUTES)
    )
    for memory in memories:
        apply_hits(memory, found.get(memory.memory_id, {}))


def only_hits_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether a stream MODIFY changed nothing but the hit attributes."""
    if not old:
        return False
    keys = (set(old) | set(new)) - set(HIT_ATTRIBUTES)
    return all(old.get(key) == new.get(key) for key in keys)
