"""The requests to one table: counted per operation, errors translated, pages and
unprocessed batch items followed."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hindsight.adapters.aws.dynamodb_record_store.errors import translated_errors
from hindsight.adapters.aws.dynamodb_record_store.items import (
    MEMORY_SK,
    from_attribute_values,
    memory_pk,
)

_BATCH_GET = 100
_BATCH_READERS = 8  # BatchGetItem requests of one read at once
_BATCH_WRITE = 25


class TableRequests:
    """One table's requests through one (thread-safe) boto3 client."""

    def __init__(self, table_name: str, client: Any) -> None:
        self.table_name = table_name
        self.client = client
        self._counts_lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def call(self, operation: str, **params: Any) -> dict[str, Any]:
        with self._counts_lock:
            self.counts[operation] += 1
        method = getattr(self.client, _snake(operation))
        with translated_errors(self.table_name, operation):
            return method(**params)  # type: ignore[no-any-return]

    @staticmethod
    def key(pk: str, sk: str) -> dict[str, Any]:
        return {"pk": {"S": pk}, "sk": {"S": sk}}

    def query_all(self, **params: Any) -> Iterator[dict[str, Any]]:
        """Every item of a query, page after page."""
        start: dict[str, Any] | None = None
        while True:
            extra = {"ExclusiveStartKey": start} if start else {}
            response = self.call("Query", TableName=self.table_name, **params, **extra)
            yield from response.get("Items", [])
            start = response.get("LastEvaluatedKey")
            if not start:
                return

    def batch_get(
        self, tenant_id: str, memory_ids: Sequence[str], attributes: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        """Items by memory id (strongly consistent), with the attributes named. Each
        ``BatchGetItem`` reads at most 100 items; more are read by concurrent requests
        (a page of 500 memories, a user's 200-vector mean: one round trip, not one per
        100)."""
        unique = list(dict.fromkeys(memory_ids))
        read = {
            "ConsistentRead": True,
            "ProjectionExpression": ", ".join(f"#{a}" for a in attributes),
            "ExpressionAttributeNames": {f"#{a}": a for a in attributes},
        }
        chunks = [
            [self.key(memory_pk(tenant_id, mid), MEMORY_SK) for mid in unique[s : s + _BATCH_GET]]
            for s in range(0, len(unique), _BATCH_GET)
        ]
        found: dict[str, dict[str, Any]] = {}
        if len(chunks) <= 1:
            parts = [self._batch_get_keys(keys, read) for keys in chunks]
        else:
            with ThreadPoolExecutor(max_workers=min(_BATCH_READERS, len(chunks))) as pool:
                parts = list(pool.map(lambda keys: self._batch_get_keys(keys, read), chunks))
        for part in parts:
            found.update(part)
        return found

    def _batch_get_keys(
        self, keys: list[dict[str, Any]], read: dict[str, Any]
    ) -> dict[str, dict[str, Any]]:
        """One ``BatchGetItem`` of up to 100 keys, again for what it left unprocessed."""
        found: dict[str, dict[str, Any]] = {}
        pending: dict[str, Any] = {self.table_name: {"Keys": keys, **read}}
        attempt = 0
        while pending:
            response = self.call("BatchGetItem", RequestItems=pending)
            for raw in response.get("Responses", {}).get(self.table_name, []):
                item = from_attribute_values(raw)
                found[str(item["memory_id"])] = item
            pending = response.get("UnprocessedKeys") or {}
            attempt += 1
            if pending:
                time.sleep(min(1.0, 0.05 * 2**attempt))
        return found

    def delete_keys(self, keys: Sequence[tuple[str, str]]) -> None:
        """Delete items by (pk, sk), in batches, until none is left unprocessed."""
        for start in range(0, len(keys), _BATCH_WRITE):
            requests = [
                {"DeleteRequest": {"Key": self.key(pk, sk)}}
                for pk, sk in keys[start : start + _BATCH_WRITE]
            ]
            pending: dict[str, Any] = {self.table_name: requests}
            attempt = 0
            while pending:
                response = self.call("BatchWriteItem", RequestItems=pending)
                pending = response.get("UnprocessedItems") or {}
                attempt += 1
                if pending:
                    time.sleep(min(1.0, 0.05 * 2**attempt))


def _snake(operation: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in operation).lstrip("_")
