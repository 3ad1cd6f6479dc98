"""DynamoDB's large-item path on moto (DynamoDB and S3): what a memory larger than an item
holds writes where, and that no item ever names a missing object nor a failed or replaced
write leaves one behind. The round trips themselves are in the record store contract."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError

from hindsight.adapters.aws.dynamodb_record_store import (
    ITEM_LIMIT_BYTES,
    DynamoDBRecordStore,
    from_attribute_values,
    memory_pk,
)
from hindsight.adapters.aws.dynamodb_record_store.large_items import item_size
from hindsight.core.errors import (
    ConflictError,
    DuplicateMemoryError,
    PayloadTooLargeError,
    UnavailableError,
)
from hindsight.core.models import ListQuery
from tests.contract.builders import episode, text_vector
from tests.contract.test_long_record_store_contract import _EN, long_memory, text_of, vector_of
from tests.fakes import HashingEmbedder
from tests.integration.dynamodb_local import bucket_keys, drop_table, fresh_store

WINDOW = 3_600.0


@pytest.fixture
def store() -> Iterator[DynamoDBRecordStore]:
    made = fresh_store("hindsight-large")
    yield made
    drop_table(made)


def raw_item(store: DynamoDBRecordStore, memory_id: str, tenant_id: str = "t1") -> dict[str, Any]:
    found = store.client.get_item(
        TableName=store.table_name,
        Key={"pk": {"S": memory_pk(tenant_id, memory_id)}, "sk": {"S": "M"}},
        ConsistentRead=True,
    )
    return from_attribute_values(found.get("Item") or {})


def objects(store: DynamoDBRecordStore) -> list[str]:
    assert store.payloads is not None
    return sorted(f"s3://{store.payloads.bucket}/{key}" for key in bucket_keys(store.payloads))


def named(item: dict[str, Any]) -> list[str]:
    return sorted(v for v in (item.get("body"), item.get("vec_ref")) if str(v).startswith("s3://"))


def test_a_100k_chinese_memory_is_one_small_item_naming_two_objects(
    store: DynamoDBRecordStore,
) -> None:
    memory = long_memory("zh", "zh", user_id="alice@example.com")
    vector = vector_of(memory)
    store.request_counts.clear()
    store.put(memory, vector)

    item = raw_item(store, "zh")
    assert str(item["body"]).startswith("s3://") and str(item["vec_ref"]).startswith("s3://")
    assert "vec" not in item and "vec_spans" not in item
    assert item_size(item) < 2_000  # keys, filter attributes and two references
    assert objects(store) == named(item)
    assert len(memory.content.encode()) > 270_000  # ~2.75 bytes of UTF-8 a character
    assert all("alice" not in key for key in objects(store))  # no user id in S3 keys
    assert store.request_counts["PutItem"] == 1
    assert store.get("t1", "zh") == memory


def test_a_100k_english_memory_with_small_vectors_stays_inline(
    store: DynamoDBRecordStore,
) -> None:
    memory = long_memory("en", "en")
    store.put(memory, vector_of(memory, HashingEmbedder(dimension=64)))
    item = raw_item(store, "en")
    assert str(item["body"]).startswith("{") and "vec" in item and "vec_spans" in item
    assert item_size(item) < ITEM_LIMIT_BYTES
    assert objects(store) == []


def test_failed_writes_leave_no_object_behind(store: DynamoDBRecordStore) -> None:
    memory = long_memory("zh", "zh")
    vector = vector_of(memory)
    store.put(memory, vector, "u1:" + memory.content_hash, WINDOW)
    stored = objects(store)
    assert len(stored) == 2

    with pytest.raises(ConflictError):  # the id exists: the item write fails
        store.put(memory, vector)
    with pytest.raises(DuplicateMemoryError):  # the content exists: the transaction fails
        twin = memory.model_copy(update={"memory_id": "twin"})
        store.put(twin, vector, "u1:" + memory.content_hash, WINDOW)
    with pytest.raises(Exception, match="does not exist"):  # update of a missing memory
        store.update(memory.model_copy(update={"memory_id": "absent"}), vector)
    assert objects(store) == stored == named(raw_item(store, "zh"))


def test_a_write_whose_answer_was_lost_keeps_the_objects_its_item_names(
    store: DynamoDBRecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    put_item = store.client.put_item

    def written_then_timed_out(**params: Any) -> Any:
        put_item(**params)
        raise ReadTimeoutError(endpoint_url="http://127.0.0.1:5055")

    monkeypatch.setattr(store.client, "put_item", written_then_timed_out)
    memory = long_memory("zh", "zh")
    with pytest.raises(UnavailableError):
        store.put(memory, vector_of(memory))
    monkeypatch.undo()
    assert objects(store) == named(raw_item(store, "zh"))  # kept: the item names them
    assert store.get("t1", "zh") == memory


def test_updates_and_deletes_remove_the_objects_no_longer_named(
    store: DynamoDBRecordStore,
) -> None:
    memory = long_memory("zh", "zh")
    vector = vector_of(memory)
    store.put(memory, vector)
    before = objects(store)

    store.update(memory.model_copy(update={"category": "notes"}), vector)
    after = objects(store)
    assert len(after) == 2 and not set(after) & set(before)  # new objects, old ones gone
    assert after == named(raw_item(store, "zh"))

    store.update(memory.model_copy(update={"category": "work"}))  # body only: vec stays
    item = raw_item(store, "zh")
    assert objects(store) == named(item) and item["vec_ref"] in after

    short = memory.model_copy(update={"content": "short now"})
    store.update(short, text_vector(short.content))
    assert objects(store) == [] and named(raw_item(store, "zh")) == []

    store.update(memory, vector)
    assert len(objects(store)) == 2
    assert store.delete("t1", "zh") is True
    assert objects(store) == []


def test_erase_deletes_the_users_objects_only(store: DynamoDBRecordStore) -> None:
    for memory_id, user in (("a1", "alice"), ("a2", "alice"), ("b1", "bob")):
        memory = long_memory(memory_id, "zh", user_id=user)
        store.put(memory, vector_of(memory))
    assert len(objects(store)) == 6
    assert store.erase_user("t1", "alice") == 2
    assert objects(store) == named(raw_item(store, "b1"))


def test_a_read_racing_an_update_reads_the_new_version(
    store: DynamoDBRecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The update lands (and deletes the old object) between reading the item and reading
    its object: the read tries again and returns the new version."""
    memory = long_memory("zh", "zh")
    vector = vector_of(memory)
    store.put(memory, vector)
    newer = memory.model_copy(update={"content": memory.content[:-1] + "。"})
    assert store.payloads is not None
    get_many = store.payloads.get_many
    raced: list[bool] = []

    def update_first(references: Any) -> Any:
        if not raced:
            raced.append(True)
            store.update(newer, vector)
        return get_many(references)

    monkeypatch.setattr(store.payloads, "get_many", update_first)
    assert store.get_many("t1", ["zh"]) == [newer]
    assert raced == [True]


def test_without_a_bucket_an_item_over_the_limit_is_refused(store: DynamoDBRecordStore) -> None:
    plain = DynamoDBRecordStore(store.table_name, client=store.client)  # no S3
    memory = long_memory("zh", "zh")
    with pytest.raises(PayloadTooLargeError, match="HINDSIGHT_BLOB_BUCKET"):
        plain.put(memory, vector_of(memory))
    assert plain.get("t1", "zh") is None
    english = long_memory("en", "en")  # ~100 KB and 64-dimension vectors: one item holds it
    plain.put(english, vector_of(english, HashingEmbedder(dimension=64)))
    assert plain.get("t1", "en") == english


def test_with_a_small_inline_limit_every_read_hydrates() -> None:
    store = fresh_store("hindsight-spill", inline_bytes=200)
    try:
        memories = [episode(f"m{n}", text_of(_EN, 300 + n)) for n in range(5)]
        for memory in memories:
            store.put(memory, text_vector(memory.content))
        assert len(objects(store)) == 10  # every body and every vector went to S3
        assert store.get_many("t1", [m.memory_id for m in memories]) == memories
        page = store.list("t1", "u1", ListQuery(), 3)
        assert len(page.items) == 3 and page.next_cursor
        assert all(m == memories[int(m.memory_id[1:])] for m in page.items)
        vectors = store.get_vectors("t1", ["m0", "m4"])
        assert vectors["m4"].values.tolist() == text_vector(memories[4].content).values.tolist()
        assert [m for m, _ in store.iter_all("t1")] == memories
    finally:
        drop_table(store)
