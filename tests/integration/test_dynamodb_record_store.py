"""DynamoDB record store specifics on moto (the shared contract runs in tests/contract)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
from botocore.config import Config

from hindsight.adapters.aws.dynamodb_record_store import (
    DynamoDBRecordStore,
    memory_pk,
    user_pk,
)
from hindsight.adapters.paging import epoch_us
from hindsight.core.errors import DuplicateMemoryError, UnavailableError
from hindsight.core.models import ListQuery, MemoryKind
from tests.contract.builders import at, episode, fact, text_vector
from tests.integration.dynamodb_local import drop_table, fresh_store, moto_client

WINDOW = 3_600.0


@pytest.fixture
def store() -> Iterator[DynamoDBRecordStore]:
    made = fresh_store("hindsight-ddb")
    yield made
    drop_table(made)


def raw_item(store: DynamoDBRecordStore, pk: str, sk: str) -> dict:
    return store.client.get_item(
        TableName=store.table_name, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
    ).get("Item", {})


def test_table_has_ttl_on_expires_at_stream_and_indexes(store: DynamoDBRecordStore) -> None:
    client = store.client
    ttl = client.describe_time_to_live(TableName=store.table_name)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expires_at"
    assert ttl["TimeToLiveStatus"] in {"ENABLED", "ENABLING"}
    table = client.describe_table(TableName=store.table_name)["Table"]
    assert table["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    indexes = {i["IndexName"] for i in table["GlobalSecondaryIndexes"]}
    assert indexes == {"by_user", "by_activity", "by_user_facts"}


def test_memory_item_layout(store: DynamoDBRecordStore) -> None:
    memory = episode("m1", expires_at=at(10, seconds=0.5))
    vector = text_vector("peanuts")
    store.put(memory, vector, "k", WINDOW)

    item = raw_item(store, memory_pk("t1", "m1"), "M")
    assert item["gsi1pk"]["S"] == user_pk("t1", "u1")
    # the TTL attribute is epoch seconds rounded up: DynamoDB never deletes early
    assert int(item["expires_at"]["N"]) == math.ceil(epoch_us(at(10, seconds=0.5)) / 1e6)
    assert int(item["expires_us"]["N"]) == epoch_us(at(10, seconds=0.5))
    assert item["vec_model"]["S"] == vector.model
    assert int(item["vec_dim"]["N"]) == vector.dim
    np.testing.assert_array_equal(
        np.frombuffer(item["vec"]["B"], dtype="<f4"), vector.values.astype("<f4")
    )
    marker = raw_item(store, user_pk("t1", "u1"), item["marker_sk"]["S"])
    assert marker["memory_id"]["S"] == "m1"
    assert marker["expires_at"] == item["expires_at"]  # the marker expires with its memory


def test_ids_with_separators_cannot_reach_other_keys(store: DynamoDBRecordStore) -> None:
    store.put(episode("x#M#y", tenant_id="a#b", user_id="u#1"))
    store.put(episode("y", tenant_id="a#b#M#x"))
    assert store.get("a#b", "x#M#y") is not None
    assert store.get("a", "b#M#x#M#y") is None
    assert [m.memory_id for m in store.list("a#b", "u#1", ListQuery(), 10).items] == ["x#M#y"]


def test_a_marker_whose_memory_vanished_is_reclaimed(store: DynamoDBRecordStore) -> None:
    """TTL deletes the memory item but not (at the same moment) its marker."""
    store.put(episode("m1"), None, "k", WINDOW)
    store.client.delete_item(
        TableName=store.table_name, Key={"pk": {"S": memory_pk("t1", "m1")}, "sk": {"S": "M"}}
    )
    store.put(episode("m2", occurred_at=at(1)), None, "k", WINDOW)
    with pytest.raises(DuplicateMemoryError) as caught:
        store.put(episode("m3", occurred_at=at(2)), None, "k", WINDOW)
    assert caught.value.existing_memory_id == "m2"


def test_a_filtered_list_reads_on_until_the_page_is_full(store: DynamoDBRecordStore) -> None:
    for n in range(60):
        store.put(episode(f"e{n:02d}", occurred_at=at(n)))
    store.put(fact("f-old", occurred_at=at(-10)))
    store.put(fact("f-new", occurred_at=at(100)))
    query = ListQuery(kinds=frozenset({MemoryKind.SEMANTIC}))
    first = store.list("t1", "u1", query, limit=1)
    assert [m.memory_id for m in first.items] == ["f-new"]
    second = store.list("t1", "u1", query, limit=1, cursor=first.next_cursor)
    assert [m.memory_id for m in second.items] == ["f-old"]
    assert second.next_cursor is None


def test_request_counts_per_operation(store: DynamoDBRecordStore) -> None:
    store.request_counts.clear()
    store.put(episode("m1"), text_vector("x"), "k", WINDOW)
    assert dict(store.request_counts) == {"TransactWriteItems": 1, "UpdateItem": 1}
    store.request_counts.clear()
    with pytest.raises(DuplicateMemoryError):
        store.put(episode("m2"), text_vector("x"), "k", WINDOW)
    # the refused transaction returns the marker; one consistent read checks its memory
    assert dict(store.request_counts) == {"TransactWriteItems": 1, "GetItem": 1}
    store.request_counts.clear()
    store.get_many("t1", ["m1"])
    store.get_vectors("t1", ["m1"])
    assert dict(store.request_counts) == {"BatchGetItem": 2}


def test_a_missing_table_says_how_to_create_it() -> None:
    store = DynamoDBRecordStore("no-such-table", client=moto_client())
    with pytest.raises(UnavailableError, match="does not exist; create it") as caught:
        store.get("t1", "m1")
    assert "HINDSIGHT_TABLE" in caught.value.message


def test_an_unreachable_endpoint_is_unavailable() -> None:
    import boto3

    client = boto3.client(
        "dynamodb",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1),
    )
    store = DynamoDBRecordStore("t", client=client)
    with pytest.raises(UnavailableError, match="cannot reach DynamoDB"):
        store.put(episode("m1"))


def test_the_client_honours_aws_endpoint_url_dynamodb(monkeypatch: pytest.MonkeyPatch) -> None:
    from hindsight.adapters.aws.dynamodb_record_store import default_client

    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:5055")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    client = default_client("us-east-1")
    assert client.meta.endpoint_url == "http://127.0.0.1:5055"
    client.list_tables(Limit=1)  # answers: the same code runs against moto


# --- by_user_facts: a user's facts listed without reading every episode ----------------------

FACTS = ListQuery(kinds=frozenset({MemoryKind.SEMANTIC}))


def _history(store: DynamoDBRecordStore, episodes: int, facts: int) -> list[str]:
    """``facts`` facts and then ``episodes`` episodes of u1, one a minute (a list newest
    first meets every episode before a fact); the facts' ids newest first."""
    for n in range(facts):
        store.put(fact(f"f{n}", occurred_at=at(n), source_memory_ids=["e0000"]))
    for n in range(episodes):
        store.put(episode(f"e{n:04d}", occurred_at=at(facts + n)))
    return [f"f{n}" for n in reversed(range(facts))]


def _listed(store: DynamoDBRecordStore, query: ListQuery, limit: int) -> list[str]:
    ids, cursor = [], None
    while True:
        page = store.list("t1", "u1", query, limit, cursor)
        ids += [m.memory_id for m in page.items]
        if (cursor := page.next_cursor) is None:
            return ids


def test_facts_are_listed_from_the_facts_index_alone(store: DynamoDBRecordStore) -> None:
    expected = _history(store, episodes=120, facts=3)
    assert "gsi3pk" in raw_item(store, memory_pk("t1", "f0"), "M")
    assert "gsi3pk" not in raw_item(store, memory_pk("t1", "e0000"), "M")
    store.request_counts.clear()
    assert _listed(store, FACTS, 2) == expected  # paged: the cursor resumes in the index
    assert store.request_counts["Query"] == 2  # a page each; by_user read 120 episodes first
    assert store.list_ids("t1", "u1", FACTS, 10) == expected
    approved = ListQuery(kinds=frozenset({MemoryKind.SEMANTIC}), oldest_first=True)
    assert _listed(store, approved, 10) == expected[::-1]
    everything = _listed(store, ListQuery(), 50)
    assert everything[-3:] == expected and len(everything) == 123


def _as_made_before_the_facts_index(store: DynamoDBRecordStore) -> None:
    """The table as an older version left it: no by_user_facts, no mark, facts without
    the index's keys."""
    client, name = store.client, store.table_name
    client.update_table(
        TableName=name, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "by_user_facts"}}]
    )
    client.delete_item(TableName=name, Key={"pk": {"S": "S#schema"}, "sk": {"S": "facts_index"}})
    for page in client.get_paginator("scan").paginate(TableName=name):
        for item in page["Items"]:
            if "gsi3pk" in item:
                client.update_item(
                    TableName=name,
                    Key={"pk": item["pk"], "sk": item["sk"]},
                    UpdateExpression="REMOVE gsi3pk, gsi3sk",
                )


def test_a_table_made_before_the_facts_index_is_brought_in_step(
    store: DynamoDBRecordStore,
) -> None:
    expected = _history(store, episodes=60, facts=2)
    _as_made_before_the_facts_index(store)
    older = DynamoDBRecordStore(store.table_name, client=store.client)
    assert _listed(older, FACTS, 10) == expected  # through by_user meanwhile
    # maintenance's share: the stack adds the index; without it nothing changes
    assert older.upgrade() == {"facts_indexed": 0}
    assert _listed(older, FACTS, 10) == expected
    local = DynamoDBRecordStore(store.table_name, client=store.client, create_indexes=True)
    assert local.upgrade() == {"facts_indexed": 2}  # HINDSIGHT_CREATE_RESOURCES: adds it
    older._facts_checked = float("-inf")  # a process that looked before: looks again
    assert "gsi3pk" in raw_item(store, memory_pk("t1", "f1"), "M")
    older.put(fact("f9", occurred_at=at(2, seconds=30)))
    older.request_counts.clear()
    assert _listed(older, FACTS, 10) == ["f9", *expected]
    assert older.request_counts["Query"] == 1
    assert older.index_facts(create_index=True) == 0  # marked: nothing more to do
