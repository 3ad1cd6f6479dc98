"""The RecordStore contract for long memories, on every record store.

A 100,000-character memory (Chinese, English) with one vector row per chunk and the chunks'
spans (384 dimensions, as multilingual-e5-small's: ~440 and ~190 rows) is stored whole and
comes back equal from every read: get, get_many, get_vectors, list, iter_all; updates keep
or replace its vector; delete, erase and dedup act on it as on any memory. On DynamoDB both
take the large-item path (S3; ``tests/integration/test_dynamodb_large_items.py`` shows what
is written where).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hindsight.core.embedding import ChunkSizes, embed_memories
from hindsight.core.errors import DuplicateMemoryError
from hindsight.core.models import EpisodicMemory, ListQuery, StoredVector
from hindsight.core.ports import RecordStore
from tests.contract.builders import episode, text_vector
from tests.fakes import HashingEmbedder

LENGTH = 100_000
SIZES = ChunkSizes(tokens=256, overlap=32)
EMBEDDER = HashingEmbedder(dimension=384, model_name="test-hashing-384")
_ZH = [
    "今天下午项目组讨论了新版本的发布计划，大家一致认为需要先完成性能测试。",
    "用户提到他下个月要去杭州出差，希望提前订好西湖附近的酒店。",
    "会议记录显示预算还有百分之二十的余量，可以用于购买新的服务器。",
    "她说孩子的钢琴老师姓欧阳，每周六上午上课，地点在市图书馆旁边。",
    "日志里出现了连接超时的错误，运维同事怀疑是负载均衡配置有问题。",
]
_EN = [
    "The quarterly review covered latency budgets, the storage migration and vendor costs.",
    "The user mentioned that the invoice from the cloud provider was higher than expected.",
    "Deploy logs show three retries before the health check passed on the new cluster.",
    "Her daughter's piano teacher is called Ouyang and lessons are on Saturday mornings.",
    "Draft contract clause 7 limits liability to the fees paid in the previous year.",
]


def text_of(sentences: list[str], length: int = LENGTH) -> str:
    """``length`` characters of the sentences, in paragraphs, numbered so none repeats."""
    number = "（{}）" if sentences is _ZH else " ({})"
    parts: list[str] = []
    size = 0
    for n in itertools.count():
        sentence = sentences[n % len(sentences)] + number.format(n)
        parts.append(sentence + ("\n\n" if n % 6 == 5 else " "))
        size += len(parts[-1])
        if size >= length:
            break
    return "".join(parts)[:length]


def long_memory(memory_id: str, language: str, user_id: str = "u1") -> EpisodicMemory:
    return episode(memory_id, text_of(_ZH if language == "zh" else _EN), user_id=user_id)


def vector_of(memory: EpisodicMemory, embedder: HashingEmbedder = EMBEDDER) -> StoredVector:
    return embed_memories(embedder, [memory], SIZES)[0]


def assert_same_vector(found: StoredVector | None, expected: StoredVector) -> None:
    assert found is not None
    assert found.model == expected.model
    assert found.spans == expected.spans
    assert found.values.shape == expected.values.shape
    assert np.array_equal(found.values, expected.values)


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_100k_memory_round_trips_with_every_chunk_row_and_span(
    record_store: RecordStore, language: str
) -> None:
    memory = long_memory("long", language)
    assert len(memory.content) == LENGTH
    vector = vector_of(memory)
    assert vector.chunked and len(vector.spans) > 50
    record_store.put(memory, vector, dedup_key="u1:long", dedup_window_seconds=3_600.0)
    record_store.put(episode("short", "a short one"), text_vector("a short one"))

    assert record_store.get("t1", "long") == memory
    assert record_store.get_many("t1", ["short", "long"]) == [
        record_store.get("t1", "short"),
        memory,
    ]
    vectors = record_store.get_vectors("t1", ["long", "short"])
    assert_same_vector(vectors["long"], vector)
    assert vectors["short"].spans == () and vectors["short"].values.shape == (64,)
    listed = record_store.list("t1", "u1", ListQuery(), limit=10).items
    assert [m.content for m in listed if m.memory_id == "long"] == [memory.content]
    everything = {m.memory_id: (m, v) for m, v in record_store.iter_all("t1")}
    assert everything["long"][0] == memory
    assert_same_vector(everything["long"][1], vector)


def test_updates_keep_or_replace_the_vector_of_a_long_memory(record_store: RecordStore) -> None:
    memory = long_memory("long", "zh")
    vector = vector_of(memory)
    record_store.put(memory, vector)

    recategorised = memory.model_copy(update={"category": "work"})
    record_store.update(recategorised)  # no vector: the stored one stays
    assert record_store.get("t1", "long") == recategorised
    assert_same_vector(record_store.get_vectors("t1", ["long"]).get("long"), vector)

    shorter = memory.model_copy(update={"content": text_of(_EN, 20_000)})
    fewer = vector_of(shorter)
    assert 0 < len(fewer.spans) < len(vector.spans)
    record_store.update(shorter, fewer)
    assert record_store.get("t1", "long") == shorter
    assert_same_vector(record_store.get_vectors("t1", ["long"]).get("long"), fewer)

    short = memory.model_copy(update={"content": "now a short memory"})
    record_store.update(short, text_vector(short.content))
    assert record_store.get("t1", "long") == short
    assert record_store.get_vectors("t1", ["long"])["long"].spans == ()

    record_store.update(memory, vector)  # and long again
    assert record_store.get("t1", "long") == memory
    assert_same_vector(record_store.get_vectors("t1", ["long"]).get("long"), vector)


def test_delete_and_erase_remove_long_memories(record_store: RecordStore) -> None:
    for memory_id, language in (("zh", "zh"), ("en", "en")):
        memory = long_memory(memory_id, language)
        record_store.put(memory, vector_of(memory))
    bobs = long_memory("bobs", "zh", user_id="bob")
    record_store.put(bobs, vector_of(bobs))

    assert record_store.delete("t1", "zh") is True
    assert record_store.get("t1", "zh") is None
    assert record_store.get_vectors("t1", ["zh"]) == {}
    assert record_store.erase_user("t1", "u1") == 1
    assert record_store.get("t1", "en") is None
    assert record_store.list("t1", "u1", ListQuery(), limit=10).items == []
    assert record_store.get("t1", "bobs") == bobs  # another user's stays
    assert [m.memory_id for m, _ in record_store.iter_all("t1")] == ["bobs"]


def test_the_same_long_content_is_deduplicated(record_store: RecordStore) -> None:
    first = long_memory("first", "zh")
    record_store.put(first, vector_of(first), "u1:" + first.content_hash, 3_600.0)
    again = first.model_copy(update={"memory_id": "again"})
    with pytest.raises(DuplicateMemoryError) as duplicate:
        record_store.put(again, vector_of(again), "u1:" + again.content_hash, 3_600.0)
    assert duplicate.value.existing_memory_id == "first"
    assert record_store.get("t1", "again") is None
    assert record_store.get("t1", "first") == first
