"""DynamoDB record store specifics on moto (the shared contract runs in tests/contract)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime

import numpy as np
import pytest
from botocore.config import Config

from hindsight.adapters.aws.dynamodb_record_store import (
    DynamoDBRecordStore,
    listing,
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
    assert indexes == {"by_user", "by_activity", "by_user_facts", "by_user_created"}


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
EPISODES = frozenset({MemoryKind.EPISODIC})


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
    assert older.upgrade() == {"facts_indexed": 0, "indexes_added": 0}
    assert _listed(older, FACTS, 10) == expected
    local = DynamoDBRecordStore(store.table_name, client=store.client, create_indexes=True)
    # HINDSIGHT_CREATE_RESOURCES: adds it
    assert local.upgrade() == {"facts_indexed": 2, "indexes_added": 0}
    older._facts_indexed.again()  # a process that looked before: looks again
    assert "gsi3pk" in raw_item(store, memory_pk("t1", "f1"), "M")
    older.put(fact("f9", occurred_at=at(2, seconds=30)))
    older.request_counts.clear()
    assert _listed(older, FACTS, 10) == ["f9", *expected]
    assert older.request_counts["Query"] == 1
    assert older.index_facts(create_index=True) == 0  # marked: nothing more to do


# --- by_user_created: what was stored since a moment, without reading every memory ----------


def _stored_since(store: DynamoDBRecordStore, old: int, new: int) -> tuple[datetime, list[str]]:
    """``old`` memories of u1, then a cursor, then ``new`` more whose ``occurred_at`` runs
    backwards (an import of old conversations): returns the cursor and the new ones' ids
    in the list's order (newest ``occurred_at`` first)."""
    for n in range(old):
        store.put(episode(f"o{n:04d}", occurred_at=at(n), created_at=at(1_000 + n)))
    cursor = at(1_000 + old)
    for n in range(new):
        store.put(episode(f"n{n:04d}", occurred_at=at(-n), created_at=at(2_000 + n)))
    store.put(fact("f1", occurred_at=at(-1, seconds=30), created_at=at(3_000)))
    return cursor, [f"n{n:04d}" for n in range(new)]


def test_what_was_stored_since_is_listed_from_the_created_index(
    store: DynamoDBRecordStore,
) -> None:
    cursor, new = _stored_since(store, old=150, new=5)
    episodes = ListQuery(kinds=EPISODES, created_after=cursor)
    store.request_counts.clear()
    assert _listed(store, episodes, 2) == new  # paged in the list order, not creation's
    # a page each: 1 Query of the new keys and 1 BatchGetItem of its memories; by_user
    # read all 155 memories (with their bodies) for every page
    assert (store.request_counts["Query"], store.request_counts["BatchGetItem"]) == (3, 3)
    oldest = ListQuery(created_after=cursor, oldest_first=True)
    assert _listed(store, oldest, 4) == [*new[:0:-1], "f1", new[0]]
    window = ListQuery(created_after=cursor, since=at(-3), until=at(-1))
    assert _listed(store, window, 10) == ["n0002", "n0003"]
    assert _listed(store, ListQuery(created_after=at(2_002)), 10) == ["f1", "n0003", "n0004"]
    assert _listed(store, ListQuery(created_after=at(3_000)), 10) == []
    assert _listed(store, ListQuery(created_after=cursor, scopes=frozenset()), 10) == []


def test_the_created_index_answers_as_the_user_index_does(store: DynamoDBRecordStore) -> None:
    cursor, _ = _stored_since(store, old=20, new=12)
    store.delete("t1", "n0003")
    store.put(episode("x1", occurred_at=at(-4, seconds=1), created_at=at(2_500), scope="team"))
    store.put(episode("gone", occurred_at=at(-2), created_at=at(2_600), expires_at=at(5)))
    by_user = DynamoDBRecordStore(store.table_name, client=store.client)
    by_user._created_indexed.looked = float("inf")  # never looks: reads by_user as before
    queries = [
        ListQuery(created_after=cursor, now=at(10)),
        ListQuery(created_after=cursor, now=at(10), include_expired=True, oldest_first=True),
        ListQuery(created_after=cursor, scopes=frozenset({"team"})),
        ListQuery(created_after=cursor, kinds=frozenset({MemoryKind.SEMANTIC})),
        ListQuery(created_after=at(2_004), since=at(-9), now=at(10)),
    ]
    for query in queries:
        for limit in (1, 3, 50):
            assert _listed(store, query, limit) == _listed(by_user, query, limit), (query, limit)


def test_more_stored_since_than_one_read_lists_through_the_user_index(
    store: DynamoDBRecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    cursor, new = _stored_since(store, old=3, new=7)
    monkeypatch.setattr(listing, "CREATED_SCAN", 5)
    store.request_counts.clear()
    assert _listed(store, ListQuery(created_after=cursor, kinds=EPISODES), 3) == new
    # the first page's read of the created index stops at 5 keys and by_user answers; the
    # store remembers it, so the next 2 pages read by_user alone (3 pages: 1 + 3 Query)
    assert store.request_counts["Query"] == 4
    store.request_counts.clear()
    assert _listed(store, ListQuery(created_after=at(2_003), kinds=EPISODES), 3) == new[4:]
    assert store.request_counts["Query"] == 1  # fewer since a later cursor: the index


def test_a_table_made_before_the_created_index_gets_it_from_maintenance(
    store: DynamoDBRecordStore,
) -> None:
    cursor, new = _stored_since(store, old=60, new=3)
    store.client.update_table(
        TableName=store.table_name,
        GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "by_user_created"}}],
    )
    older = DynamoDBRecordStore(store.table_name, client=store.client)
    since = ListQuery(created_after=cursor, kinds=EPISODES)
    assert _listed(older, since, 10) == new  # through by_user meanwhile
    assert older.upgrade() == {"facts_indexed": 0, "indexes_added": 0}  # the stack adds it
    local = DynamoDBRecordStore(store.table_name, client=store.client, create_indexes=True)
    assert local.upgrade() == {"facts_indexed": 0, "indexes_added": 1}
    assert local.upgrade() == {"facts_indexed": 0, "indexes_added": 0}
    older._created_indexed.again()  # a process that looked before: looks again
    older.request_counts.clear()
    assert _listed(older, since, 10) == new  # DynamoDB filled it from the table
    assert older.request_counts["Query"] == 1  # by_user: 2 (64 memories, 50 a read)
