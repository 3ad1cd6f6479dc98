"""``TableRequests.batch_get``: more than 100 ids are read by concurrent ``BatchGetItem``
requests, each followed until DynamoDB has processed every key. A fake client, no
network."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from hindsight.adapters.aws.dynamodb_record_store.requests import TableRequests


class _Client:
    """``batch_get_item`` answering each key with its item, holding every request until
    ``together`` of them are in flight (so sequential requests would never return), and
    leaving the first key of a request unprocessed once."""

    def __init__(self, together: int) -> None:
        self.barrier = threading.Barrier(together, timeout=5)
        self.requests: list[int] = []
        self.deferred: set[str] = set()
        self._lock = threading.Lock()

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:  # boto3's name
        (read,) = RequestItems.values()
        assert read["ConsistentRead"] is True
        keys = read["Keys"]
        with self._lock:
            self.requests.append(len(keys))
            first = keys[0]["pk"]["S"]
            defer = first not in self.deferred
            self.deferred.add(first)
        if len(keys) == 100:  # a first request of a chunk: wait for the others
            self.barrier.wait()
        done = keys[1:] if defer else keys
        items = [{"memory_id": {"S": k["pk"]["S"].rpartition("#M#")[2]}} for k in done]
        unprocessed = {"t": {**read, "Keys": keys[:1]}} if defer else {}
        return {"Responses": {"t": items}, "UnprocessedKeys": unprocessed}


def test_more_than_a_hundred_ids_are_read_by_concurrent_requests() -> None:
    client = _Client(together=3)
    table = TableRequests("t", client)
    ids = [f"m{n:03d}" for n in range(300)]
    found = table.batch_get("t1", [*ids, "m007"], ("memory_id",))
    assert sorted(found) == ids
    # three chunks of 100 at once, then each one's unprocessed key again
    assert sorted(client.requests) == [1, 1, 1, 100, 100, 100]
    assert table.counts["BatchGetItem"] == 6


def test_one_chunk_is_read_without_threads() -> None:
    client = _Client(together=1)
    found = TableRequests("t", client).batch_get("t1", ["a", "b"], ("memory_id",))
    assert sorted(found) == ["a", "b"]


def test_an_error_in_one_chunk_is_raised() -> None:
    class _Failing(_Client):
        def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
            raise RuntimeError("throttled for good")

    with pytest.raises(RuntimeError, match="throttled"):
        TableRequests("t", _Failing(1)).batch_get("t1", [str(n) for n in range(150)], ("a",))
