"""Key layout and item <-> memory mapping (shared with the stream indexer).

Items travel in two shapes: plain Python values (``memory_item``, what ``TypeDeserializer``
gives back) and DynamoDB attribute values (``to_attribute_values``/``from_attribute_values``).
The mapping here sees items inline: one whose payloads live in S3 (``large_items``) is
hydrated before ``memory_from_item``/``vector_from_item`` read it.
"""

from __future__ import annotations

import hashlib
import math
import zlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from pydantic import TypeAdapter

from hindsight.adapters.paging import epoch_us, from_epoch_us
from hindsight.adapters.vector_codec import decode_vector, spans_text, vector_bytes
from hindsight.core.models import EpisodicMemory, Memory, MemoryKind, StoredVector, listed_status

MEMORY: TypeAdapter[Memory] = TypeAdapter(Memory)
SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()
MEMORY_SK = "M"
ACTIVITY_SK = "A"
ACTIVITY_SHARDS = 16
_OCCURRED_OFFSET = 10**17  # makes pre-1970 times positive so the padded key sorts


# --- keys ------------------------------------------------------------------------------
def escape(value: str) -> str:
    return value.replace("%", "%25").replace("#", "%23")


def memory_pk(tenant_id: str, memory_id: str) -> str:
    return f"T#{escape(tenant_id)}#M#{escape(memory_id)}"


def user_pk(tenant_id: str, user_id: str) -> str:
    return f"T#{escape(tenant_id)}#U#{escape(user_id)}"


def occurred_key(occurred_us: int, memory_id: str = "") -> str:
    """The ``by_user`` sort key: ``occurred_at`` padded to sort as text, then the id."""
    key = f"{occurred_us + _OCCURRED_OFFSET:020d}"
    return f"{key}#{memory_id}" if memory_id else key


def from_occurred_key(key: str) -> tuple[int, str]:
    """``occurred_key``'s ``occurred_at`` (µs) and memory id."""
    occurred, _, memory_id = key.partition("#")
    return int(occurred) - _OCCURRED_OFFSET, memory_id


def activity_shard(tenant_id: str, user_id: str) -> str:
    return f"A#{zlib.crc32(f'{tenant_id}#{user_id}'.encode()) % ACTIVITY_SHARDS}"


def marker_sk(dedup_key: str) -> str:
    return "D#" + hashlib.sha256(dedup_key.encode()).hexdigest()


def _ceil_seconds(moment: datetime) -> int:
    return math.ceil(epoch_us(moment) / 1_000_000)


from_us = from_epoch_us  # the item attributes store epoch microseconds


# --- item <-> memory mapping ---------------------------------------------------------------
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
        "status": status.value if (status := listed_status(memory)) is not None else None,
        "category": memory.category,
        "session_id": memory.session_id if isinstance(memory, EpisodicMemory) else None,
        "occurred_us": epoch_us(memory.occurred_at),
        "created_us": epoch_us(memory.created_at),
        "expires_us": None if memory.expires_at is None else epoch_us(memory.expires_at),
        "expires_at": None if memory.expires_at is None else _ceil_seconds(memory.expires_at),
        "body": memory.model_dump_json(),
        "gsi1pk": user_pk(memory.tenant_id, memory.user_id),
        "gsi1sk": occurred_key(epoch_us(memory.occurred_at), memory.memory_id),
    }
    if memory.kind == MemoryKind.SEMANTIC:  # the sparse ``by_user_facts`` index: facts only
        values.update(gsi3pk=values["gsi1pk"], gsi3sk=values["gsi1sk"])
    if vector is not None:
        values.update(vector_attributes(vector))
    return {name: value for name, value in values.items() if value is not None}


def vector_attributes(vector: StoredVector) -> dict[str, Any]:
    """``vec`` (float32 rows, one per chunk), ``vec_model``, ``vec_dim`` and, for a memory
    searched by chunks, ``vec_spans`` (their character spans, JSON)."""
    values: dict[str, Any] = {
        "vec": vector_bytes(vector),
        "vec_model": vector.model,
        "vec_dim": vector.dim,
    }
    spans = spans_text(vector)
    if spans is not None:
        values["vec_spans"] = spans
    return values


def is_memory_item(item: Mapping[str, Any]) -> bool:
    return item.get("item_type") == "memory" and "body" in item


def memory_from_item(item: Mapping[str, Any]) -> Memory:
    """The memory held by an item (plain values, e.g. from TypeDeserializer), with the
    access counts the item keeps beside the body (``hits.py``)."""
    memory = MEMORY.validate_json(item["body"])
    if "hit_count" in item:
        memory.hit_count = int(item["hit_count"])
    if "last_hit_us" in item:
        memory.last_hit_at = from_us(int(item["last_hit_us"]))
    return memory


def vector_from_item(item: Mapping[str, Any]) -> StoredVector | None:
    """The stored vector of an item, or None; ``vec`` may be bytes or boto3 Binary.

    The item must be hydrated (``LargeItems.hydrate``) if its vector is kept in S3."""
    data = item.get("vec")
    if data is None:
        return None
    if isinstance(data, Binary):
        data = data.value
    spans = item.get("vec_spans")
    return decode_vector(str(item["vec_model"]), bytes(data), str(spans) if spans else None)


def to_attribute_values(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: SERIALIZER.serialize(value) for name, value in values.items()}


def from_attribute_values(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _DESERIALIZER.deserialize(value) for name, value in item.items()}
