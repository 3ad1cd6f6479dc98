"""Memories larger than a DynamoDB item holds: their content and vectors go to S3.

A DynamoDB item holds at most 400 KB; a 100,000-character Chinese memory is ~300 KB of
UTF-8 and its chunk vectors as much again. Each of the item's two large payloads is kept
inline up to ``inline_bytes`` (128 KiB) and otherwise written to S3 (``payloads``) BEFORE
the item, which then holds its reference instead:

- ``body`` (the memory as JSON) becomes the string ``s3://bucket/key`` of an object holding
  that JSON. The reference stays in ``body`` so the ``by_user`` index, which projects
  ``body``, lists such memories unchanged; a reader tells the two apart by the ``s3://``.
- ``vec`` and ``vec_spans`` give way to ``vec_ref``, an object holding the spans as one JSON
  line (``null`` for a memory embedded whole), then the float32 rows.

Reads hydrate references back into the inline form (``hydrate``), so the item <-> memory
mapping of ``items`` never sees them. A write that fails deletes the objects it wrote; a
successful update or delete deletes the objects the item no longer names, after the item
changed (so no item ever names a missing object, except to a reader that read the item
before: it retries, see ``PayloadMissingError``). Erasing a user deletes the user's prefix.
Without a bucket nothing spills, and an item DynamoDB could not hold is refused (413).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any

from boto3.dynamodb.types import Binary

from hindsight.adapters.aws.dynamodb_record_store.payloads import S3PayloadStore, is_reference
from hindsight.core.errors import ConfigurationError, PayloadTooLargeError
from hindsight.core.models import Memory

ITEM_LIMIT_BYTES = 400 * 1024  # DynamoDB's item size limit, attribute names included
DEFAULT_INLINE_BYTES = 128 * 1024
VECTOR_ATTRIBUTES = ("vec", "vec_spans", "vec_ref")


def vector_payload(values: Mapping[str, Any]) -> bytes:
    """The object of an item's vector: the spans line, then the float32 bytes."""
    spans = values.get("vec_spans")
    return (spans if spans else "null").encode() + b"\n" + _bytes(values["vec"])


def _bytes(data: Any) -> bytes:
    return bytes(data.value if isinstance(data, Binary) else data)


def item_size(values: Mapping[str, Any]) -> int:
    """An upper estimate of an item's size as DynamoDB counts it."""
    total = 0
    for name, value in values.items():
        total += len(name.encode())
        if isinstance(value, str):
            total += len(value.encode())
        elif isinstance(value, bytes | bytearray | Binary):
            total += len(_bytes(value))
        else:
            total += 24  # numbers are at most 21 bytes; the rest are small
    return total


class LargeItems:
    """Moves large payloads of memory items to S3 and back."""

    def __init__(
        self, payloads: S3PayloadStore | None, inline_bytes: int = DEFAULT_INLINE_BYTES
    ) -> None:
        self.payloads = payloads if payloads is not None and payloads.bucket else None
        self.reader = payloads  # reads follow references even without a bucket to write
        self.inline_bytes = inline_bytes

    # --- writes ----------------------------------------------------------------------------
    def spill(self, memory: Memory, values: MutableMapping[str, Any]) -> list[str]:
        """Move the payloads of ``values`` (an item about to be written) that are too large
        to S3, replacing them by references; the references written."""
        if self.payloads is None:
            self._check_fits(memory, values)
            return []
        written: list[str] = []
        owner = (memory.tenant_id, memory.user_id, memory.memory_id)
        try:
            body = values["body"].encode()
            if len(body) > self.inline_bytes:
                values["body"] = self.payloads.put(*owner, "body", body)
                written.append(values["body"])
            if "vec" in values:
                vector = vector_payload(values)
                if len(vector) > self.inline_bytes:
                    values["vec_ref"] = self.payloads.put(*owner, "vec", vector)
                    written.append(values["vec_ref"])
                    del values["vec"]
                    values.pop("vec_spans", None)
        except BaseException:
            self.discard(written)
            raise
        return written

    def _check_fits(self, memory: Memory, values: Mapping[str, Any]) -> None:
        size = item_size(values)
        if size > ITEM_LIMIT_BYTES:
            raise PayloadTooLargeError(
                f"memory {memory.memory_id} takes {size:,} bytes stored, more than one "
                f"DynamoDB item holds ({ITEM_LIMIT_BYTES:,}); store shorter content, or have "
                "the operator set HINDSIGHT_BLOB_BUCKET (an S3 bucket for large memories)"
            )

    def discard(self, references: Iterable[str]) -> None:
        """Delete objects no item names (any more)."""
        references = [r for r in references if is_reference(r)]
        if references and self.reader is not None:
            self.reader.delete(references)

    # --- reads -----------------------------------------------------------------------------
    def hydrate(self, items: Sequence[MutableMapping[str, Any]]) -> None:
        """Replace the references of items (plain values) by what they point at."""
        wanted = [ref for item in items for ref in references_of(item)]
        if not wanted:
            return
        fetched = self._reader().get_many(wanted)
        for item in items:
            if is_reference(item.get("body")):
                item["body"] = fetched[item["body"]].decode()
            reference = item.pop("vec_ref", None)
            if reference is not None:
                spans, _, data = fetched[reference].partition(b"\n")
                item["vec"] = data
                parsed = json.loads(spans)
                if parsed is not None:
                    item["vec_spans"] = json.dumps(parsed, separators=(",", ":"))

    def bodies(self, texts: Sequence[str]) -> list[str]:
        """The memory JSON of each ``body`` value (references fetched)."""
        wanted = [text for text in texts if is_reference(text)]
        if not wanted:
            return list(texts)
        fetched = self._reader().get_many(wanted)
        return [fetched[text].decode() if is_reference(text) else text for text in texts]

    def _reader(self) -> S3PayloadStore:
        if self.reader is None:
            raise ConfigurationError(
                "this memory is kept in S3 but no S3 client is configured; build the "
                "DynamoDB record store with an S3PayloadStore (HINDSIGHT_BLOB_BUCKET)"
            )
        return self.reader


def references_of(item: Mapping[str, Any]) -> list[str]:
    """The S3 references an item (plain values) holds."""
    found = (item.get("body"), item.get("vec_ref"))
    return [str(value) for value in found if is_reference(value)]
