"""Long memories on the AWS backend: the stream indexer (moto's real stream, S3-held payloads,
the real OpenSearch node) writes, replaces and deletes every chunk of a memory; the service
keeps a long memory stored while the index fails, finds it through the read-your-writes
buffer, lets the stream repair the index, and answers 503 while reads fail."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from hindsight.adapters.aws.dynamodb_record_store import DynamoDBRecordStore, S3PayloadStore
from hindsight.adapters.aws.opensearch_index import OpenSearchSearchIndex
from hindsight.adapters.aws.read_your_writes import ReadYourWritesIndex
from hindsight.adapters.memory import InMemorySearchIndex
from hindsight.bootstrap import build_aws_service, configure_stream_index, configure_stream_payloads
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import UnavailableError
from hindsight.core.indexing import index_document
from hindsight.core.models import Principal, SearchFilter
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.contract.builders import episode
from tests.contract.test_long_record_store_contract import _EN, _ZH, long_memory, text_of
from tests.contract.test_long_record_store_contract import vector_of as vector_384
from tests.fakes import HashingEmbedder
from tests.integration.aws_stream import LambdaContextStub, StreamReader, load_indexer
from tests.integration.dynamodb_local import (
    bucket_keys,
    drop_bucket,
    drop_table,
    fresh_store,
    moto_client,
    require_moto,
)
from tests.integration.test_aws_backend import WritesFailIndex
from tests.services.opensearch_local import drop, fresh_index

EMBEDDER = HashingEmbedder()  # 64 dimensions, as the test OpenSearch indexes
PRINCIPAL = Principal(tenant_id="t1")
NEEDLE = "另外，用户说他的储物柜密码是4471，别告诉别人。"


def vector_of(memory: Any) -> Any:
    return vector_384(memory, EMBEDDER)


@pytest.fixture(scope="module")
def indexer() -> ModuleType:
    return load_indexer()


@pytest.fixture
def store() -> Iterator[DynamoDBRecordStore]:
    made = fresh_store("hindsight-longstream", inline_bytes=64 * 1024)  # body and vectors in S3
    configure_stream_payloads(made.payloads)
    yield made
    configure_stream_payloads(None)
    drop_table(made)


@pytest.fixture
def opensearch() -> Iterator[OpenSearchSearchIndex]:
    made = fresh_index()
    configure_stream_index(made)
    yield made
    configure_stream_index(None)
    drop(made)


def run(indexer: ModuleType, reader: StreamReader) -> dict[str, Any]:
    event = reader.lambda_event(reader.read())
    return indexer.lambda_handler(event, LambdaContextStub())  # type: ignore[no-any-return]


def documents(index: OpenSearchSearchIndex) -> int:
    """Documents (chunks) in the index, not memories."""
    index.client.indices.refresh(index=index.index_name)
    return int(index.client.count(index=index.index_name)["count"])


def keyword(index: Any, text: str) -> list[tuple[str, int | None]]:
    hits = index.keyword_search(SearchFilter(tenant_id="t1", user_id="u1"), text, 10)
    return [(hit.memory_id, hit.chunk) for hit in hits]


def test_the_stream_writes_replaces_and_deletes_every_chunk(
    indexer: ModuleType, store: DynamoDBRecordStore, opensearch: OpenSearchSearchIndex
) -> None:
    reader = StreamReader(store.table_name)
    memory = long_memory("zh", "zh")
    vector = vector_of(memory)
    short = episode("short", "The user prefers aisle seats.")
    store.put(memory, vector)
    store.put(short, vector_of(short))
    assert len(bucket_keys(store.payloads)) == 2  # type: ignore[arg-type]

    assert run(indexer, reader) == {"batchItemFailures": []}
    assert documents(opensearch) == len(vector.spans) + 1
    assert opensearch.count("t1") == 2
    (found, chunk), *_ = keyword(opensearch, "钢琴老师姓欧阳")
    assert found == "zh" and chunk is not None
    start, end = vector.spans[chunk]
    assert "欧阳" in memory.content[start:end]

    shorter = memory.model_copy(update={"content": text_of(_EN, 20_000)})
    fewer = vector_of(shorter)
    store.update(shorter, fewer)
    assert run(indexer, reader) == {"batchItemFailures": []}
    assert documents(opensearch) == len(fewer.spans) + 1 < len(vector.spans)
    assert keyword(opensearch, "钢琴老师姓欧阳") == []
    assert [m for m, _ in keyword(opensearch, "piano teacher Ouyang")] == ["zh"]

    store.delete("t1", "zh")
    assert run(indexer, reader) == {"batchItemFailures": []}
    assert documents(opensearch) == 1
    assert opensearch.count("t1") == 1


def test_a_record_whose_objects_were_replaced_is_skipped_for_the_newer_one(
    indexer: ModuleType, store: DynamoDBRecordStore, opensearch: OpenSearchSearchIndex
) -> None:
    reader = StreamReader(store.table_name)
    memory = long_memory("zh", "zh")
    store.put(memory, vector_of(memory))
    newer = memory.model_copy(update={"content": text_of(_ZH, 60_000) + NEEDLE})
    store.update(newer, vector_of(newer))  # the INSERT's objects are gone now

    assert run(indexer, reader) == {"batchItemFailures": []}
    assert [m for m, _ in keyword(opensearch, "储物柜密码")] == ["zh"]
    assert opensearch.count("t1") == 1


# --- the service: read-your-writes and 503 with long memories ------------------------------
@pytest.fixture
def aws_settings() -> Iterator[Settings]:
    require_moto(moto_client())
    suffix = uuid.uuid4().hex[:10]
    settings = Settings(
        backend="aws",
        table=f"hindsight-long-{suffix}",
        blob_bucket=f"hindsight-long-{suffix}",
        region="us-east-1",
        chunk_tokens=64,
        chunk_overlap_tokens=8,
    )
    yield settings
    moto_client().delete_table(TableName=settings.table)
    payloads = S3PayloadStore(settings.blob_bucket, client=moto_client("s3"))
    if payloads.bucket_exists():
        drop_bucket(payloads)


def service_on(settings: Settings, index: Any) -> MemoryService:
    return build_aws_service(
        settings,
        embedder=EMBEDDER,
        index=index,
        dynamodb_client=moto_client(),
        s3_client=moto_client("s3"),
    )


def top(service: MemoryService, query: str) -> list[str]:
    result = service.retrieve(PRINCIPAL, RetrieveCommand(user_id="u1", query=query, top_k=3))
    return [r.memory_id for r in result.results]


def test_a_long_memory_stored_while_the_index_fails_is_kept_found_and_repaired(
    aws_settings: Settings,
) -> None:
    index = WritesFailIndex()
    service = service_on(aws_settings, index)  # creates the table and the bucket
    reader = StreamReader(aws_settings.table)
    text = text_of(_ZH, 99_000) + NEEDLE
    stored = service.store(PRINCIPAL, StoreMemoryCommand(user_id="u1", content=text))
    memory_id = stored.memory_id
    assert stored.status == "success" and memory_id is not None

    records = service.ports.records
    assert records.get("t1", memory_id).content == text  # type: ignore[union-attr]
    assert len(records.get_vectors("t1", [memory_id])[memory_id].spans) > 1_000
    assert isinstance(records, DynamoDBRecordStore) and records.payloads is not None
    assert len(bucket_keys(records.payloads)) == 2  # content and vectors in S3
    assert isinstance(service.ports.index, ReadYourWritesIndex)
    assert service.ports.index.failed_writes == 1
    assert top(service, "储物柜密码是多少")[:1] == [memory_id]  # from the buffer
    assert index.count("t1") == 0

    other = service_on(aws_settings, index)  # another container: no buffer
    assert top(other, "储物柜密码是多少") == []
    index.healthy = True
    configure_stream_index(index)
    configure_stream_payloads(records.payloads)
    try:
        assert run(load_indexer(), reader) == {"batchItemFailures": []}
    finally:
        configure_stream_index(None)
        configure_stream_payloads(None)
    assert top(other, "储物柜密码是多少")[:1] == [memory_id]
    (hit,) = [h for h in keyword(index, "储物柜密码") if h[0] == memory_id]
    assert hit[1] is not None  # found by a chunk

    index.reads_fail = True
    with pytest.raises(UnavailableError, match="stored memories are safe in DynamoDB"):
        service.retrieve(PRINCIPAL, RetrieveCommand(user_id="u1", query="储物柜密码"))


def test_the_recent_writes_buffer_is_bounded_by_chunks() -> None:
    buffer = ReadYourWritesIndex(InMemorySearchIndex(), max_recent_chunks=100)
    for n in range(3):
        memory = episode(f"m{n}", text_of(_EN, 30_000))
        vector = vector_of(memory)
        assert 50 < len(vector.spans) <= 100
        buffer.upsert([index_document(memory, vector)])
    recent = buffer._recent  # the buffer itself: only what fits the bound stays, newest
    assert recent.count("t1") == 1
    hits = recent.keyword_search(SearchFilter(tenant_id="t1", user_id="u1"), "piano", 5)
    assert [h.memory_id for h in hits] == ["m2"]
    assert buffer.inner.count("t1") == 3  # the index itself has them all
