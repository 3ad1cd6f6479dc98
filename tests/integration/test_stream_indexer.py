"""The stream indexer, fed with the table's real DynamoDB stream read from moto."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

import pytest

from hindsight.adapters.aws.dynamodb_record_store import DynamoDBRecordStore
from hindsight.adapters.memory import InMemorySearchIndex
from hindsight.bootstrap import configure_stream_index
from hindsight.core.errors import UnavailableError
from hindsight.core.models import FactStatus, IndexDocument, SearchFilter
from tests.contract.builders import at, episode, fact, text_vector
from tests.integration.aws_stream import LambdaContextStub, StreamReader, load_indexer
from tests.integration.dynamodb_local import drop_table, fresh_store

WINDOW = 3_600.0


@pytest.fixture(scope="module")
def indexer() -> ModuleType:
    return load_indexer()


@pytest.fixture
def store() -> Iterator[DynamoDBRecordStore]:
    made = fresh_store("hindsight-stream")
    yield made
    drop_table(made)


@pytest.fixture
def index() -> Iterator[InMemorySearchIndex]:
    made = InMemorySearchIndex()
    configure_stream_index(made)
    yield made
    configure_stream_index(None)


def found(index: InMemorySearchIndex, text: str, user: str = "u1") -> list[str]:
    hits = index.keyword_search(SearchFilter(tenant_id="t1", user_id=user), text, 10)
    return [h.memory_id for h in hits]


def run(indexer: ModuleType, reader: StreamReader) -> tuple[dict[str, Any], int]:
    records = reader.read()
    return indexer.lambda_handler(reader.lambda_event(records), LambdaContextStub()), len(records)


def test_inserts_updates_and_deletes_reach_the_index(
    indexer: ModuleType, store: DynamoDBRecordStore, index: InMemorySearchIndex
) -> None:
    reader = StreamReader(store.table_name)
    store.put(episode("m1", "peanut allergy noted"), text_vector("peanut"), "k1", WINDOW)
    store.put(episode("m2", "running every morning"), text_vector("running"))
    pending = fact("f1", "the user is allergic to peanuts", status=FactStatus.PENDING)
    store.put(pending, text_vector("allergic"))
    store.set_cursor("t1", "u1", "reflection", at(1))

    response, count = run(indexer, reader)
    assert response == {"batchItemFailures": []}
    assert count >= 5  # memories, marker, activity and cursor items all flow by
    assert index.count("t1") == 3  # only memories are indexed
    assert found(index, "noted") == ["m1"]

    store.update(pending.model_copy(update={"status": FactStatus.APPROVED}))
    store.delete("t1", "m1")
    response, _ = run(indexer, reader)
    assert response == {"batchItemFailures": []}
    assert found(index, "noted") == []
    approved = SearchFilter(tenant_id="t1", user_id="u1", statuses=frozenset({FactStatus.APPROVED}))
    assert [h.memory_id for h in index.keyword_search(approved, "allergic", 5)] == ["f1"]
    assert index.count("t1") == 2


def test_erase_user_empties_the_users_documents(
    indexer: ModuleType, store: DynamoDBRecordStore, index: InMemorySearchIndex
) -> None:
    reader = StreamReader(store.table_name)
    for n in range(3):
        store.put(episode(f"a{n}", f"note {n}", user_id="alice"), text_vector(f"a{n}"))
    store.put(episode("b0", "note b", user_id="bob"), text_vector("b0"))
    run(indexer, reader)
    assert index.count("t1") == 4
    store.erase_user("t1", "alice")
    run(indexer, reader)
    assert index.count("t1") == 1


def test_a_ttl_expiry_deletes_the_document(
    indexer: ModuleType, store: DynamoDBRecordStore, index: InMemorySearchIndex
) -> None:
    """moto does not run the TTL sweeper; the REMOVE record of a real delete is given the
    userIdentity DynamoDB puts on TTL deletions."""
    reader = StreamReader(store.table_name)
    store.put(episode("m1", "short lived", expires_at=at(5)), text_vector("short"))
    run(indexer, reader)
    store.client.delete_item(
        TableName=store.table_name,
        Key={"pk": {"S": "T#t1#M#m1"}, "sk": {"S": "M"}},
    )
    records = reader.read()
    assert [r["eventName"] for r in records] == ["REMOVE"]
    event = reader.lambda_event(records)
    event["Records"][0]["userIdentity"] = {
        "type": "Service",
        "principalId": "dynamodb.amazonaws.com",
    }
    assert indexer.lambda_handler(event, LambdaContextStub()) == {"batchItemFailures": []}
    assert index.count("t1") == 0


class FlakyIndex(InMemorySearchIndex):
    """Fails to index the memories named, like an OpenSearch that refuses some requests."""

    def __init__(self, failing: set[str]) -> None:
        super().__init__()
        self.failing = failing

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        if any(d.memory_id in self.failing for d in documents):
            raise UnavailableError("the search index refused the document")
        super().upsert(documents)


def test_failed_records_are_reported_and_succeed_on_retry(
    indexer: ModuleType, store: DynamoDBRecordStore
) -> None:
    flaky = FlakyIndex({"m2"})
    configure_stream_index(flaky)
    try:
        reader = StreamReader(store.table_name)
        for n in range(3):
            store.put(episode(f"m{n}", f"note {n}"), text_vector(f"m{n}"))
        records = reader.read()
        event = reader.lambda_event(records)
        response = indexer.lambda_handler(event, LambdaContextStub())

        failed_sequence = next(
            r["dynamodb"]["SequenceNumber"]
            for r in records
            if r["dynamodb"].get("NewImage", {}).get("memory_id", {}).get("S") == "m2"
        )
        assert response == {"batchItemFailures": [{"itemIdentifier": failed_sequence}]}
        assert flaky.count("t1") == 2
        flaky.failing.clear()  # Lambda retries from the failed record
        assert indexer.lambda_handler(event, LambdaContextStub()) == {"batchItemFailures": []}
        assert flaky.count("t1") == 3
    finally:
        configure_stream_index(None)
