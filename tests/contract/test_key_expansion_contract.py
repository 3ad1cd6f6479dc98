"""Store-time search keys on every backend: a memory is found by a key it does not contain
("饮食偏好" for "我不吃辣"), the record store keeps the keys (so a rebuilt index holds them),
and with expansion off nothing of the kind happens.

Index level: every SearchIndex (in-memory, embedded SQLite, OpenSearch on :9200).
Service level: every backend pair of ``SERVICE_BACKENDS`` (the AWS one on DynamoDB and
OpenSearch on the local engines), HashingEmbedder, the offline reflector.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hindsight.adapters.keys import LexiconKeyExpander
from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import rewire
from hindsight.core.commands import BatchItem, RetrieveCommand, StoreBatchCommand
from hindsight.core.indexing import index_document
from hindsight.core.models import EpisodicMemory, Principal, SearchFilter, StoredVector
from hindsight.core.policy import Policy
from hindsight.core.ports import SearchIndex
from hindsight.core.service import MemoryService
from tests.contract.builders import text_vector
from tests.contract.conftest import SERVICE_BACKENDS, service_on
from tests.fakes import HashingEmbedder

PRINCIPAL = Principal(tenant_id="t1")
NOW = datetime(2026, 3, 2, 9, tzinfo=UTC)
SPICY = "我不吃辣"
PEANUTS = "I'm allergic to peanuts"
CHATTER = [
    "The printer on the third floor is jammed again.",
    "今天的天气一直阴沉沉的。",
    "The museum has a new exhibit about maps.",
    "楼下的快递柜满了。",
]
EVERYONE = SearchFilter(tenant_id="t1", user_id="u1")


def _episode(memory_id: str, content: str, keys: list[str]) -> EpisodicMemory:
    return EpisodicMemory(
        memory_id=memory_id,
        tenant_id="t1",
        user_id="u1",
        content=content,
        occurred_at=NOW,
        created_at=NOW,
        updated_at=NOW,
        search_keys=keys,
    )


def _indexed(index: SearchIndex, memory: EpisodicMemory) -> None:
    values = text_vector(memory.content).values
    index.upsert([index_document(memory, StoredVector(model="test-text", values=values))])


# --- index level ---------------------------------------------------------------------------
def test_a_key_alone_finds_the_memory(search_index: SearchIndex) -> None:
    _indexed(search_index, _episode("m-keys", SPICY, ["diet", "饮食偏好", "food"]))
    _indexed(search_index, _episode("m-bare", SPICY, []))
    for query in ("饮食偏好", "dietary food"):
        hits = search_index.keyword_search(EVERYONE, query, 10)
        assert [h.memory_id for h in hits] == ["m-keys"], query
    # the text itself is found as before, with or without keys
    both = search_index.keyword_search(EVERYONE, "辣", 10)
    assert {h.memory_id for h in both} == {"m-keys", "m-bare"}


def test_rewritten_keys_replace_the_old_ones(search_index: SearchIndex) -> None:
    _indexed(search_index, _episode("m1", SPICY, ["饮食偏好"]))
    _indexed(search_index, _episode("m1", SPICY, ["travel"]))
    assert search_index.keyword_search(EVERYONE, "饮食偏好", 10) == []
    assert [h.memory_id for h in search_index.keyword_search(EVERYONE, "travel", 10)] == ["m1"]


# --- service level -------------------------------------------------------------------------
@pytest.fixture(params=SERVICE_BACKENDS)
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    with service_on(
        request.param, tmp_path, HashingEmbedder(), RuleBasedReflector(), Policy()
    ) as built:
        yield built


def _store(service: MemoryService) -> dict[str, str]:
    items = [BatchItem(content=text, occurred_at=NOW) for text in [SPICY, PEANUTS, *CHATTER]]
    outcomes = service.store_batch(PRINCIPAL, StoreBatchCommand(user_id="u1", items=items))
    return {item.content: outcome.memory_id for item, outcome in zip(items, outcomes, strict=True)}


def _top(service: MemoryService, query: str, k: int = 5) -> list[str]:
    command = RetrieveCommand(user_id="u1", query=query, top_k=k, min_score=0.0)
    return [result.memory_id for result in service.retrieve(PRINCIPAL, command).results]


def _first(service: MemoryService, query: str) -> str | None:
    return next(iter(_top(service, query)), None)


def test_with_expansion_a_topic_query_finds_the_memory(service: MemoryService) -> None:
    expanded = rewire(service, keys=LexiconKeyExpander())
    ids = _store(expanded)
    assert _first(expanded, "饮食偏好") == ids[SPICY]
    # the HashingEmbedder's character n-grams favour English chatter; the keys still lift
    # both Chinese and English memories about diet into the top three
    assert {ids[SPICY], ids[PEANUTS]} <= set(_top(expanded, "dietary restrictions", 3))
    assert ids[PEANUTS] in _top(expanded, "过敏", 2)
    stored = expanded.ports.records.get("t1", ids[SPICY])
    assert isinstance(stored, EpisodicMemory)
    assert "饮食偏好" in stored.search_keys  # kept by the record store: rebuilds keep them
    hits = expanded.ports.index.keyword_search(EVERYONE, "饮食偏好", 10)
    assert hits[0].memory_id == ids[SPICY]  # the peanut allergy's 饮食禁忌 shares 饮食


def test_without_expansion_no_keys_are_stored_or_indexed(service: MemoryService) -> None:
    ids = _store(service)  # the fixture's service has no expander: expansion off
    stored = service.ports.records.get("t1", ids[SPICY])
    assert isinstance(stored, EpisodicMemory)
    assert stored.search_keys == []
    assert service.ports.index.keyword_search(EVERYONE, "饮食偏好", 10) == []


def test_a_rebuilt_embedded_index_keeps_the_keys(tmp_path: Path) -> None:
    """The keys live on the record: an index rebuilt from the record store (a new data
    directory's first start, ``hindsight reindex``) finds the memory by them again."""
    from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex

    with service_on("sqlite", tmp_path, HashingEmbedder(), RuleBasedReflector(), Policy()) as built:
        expanded = rewire(built, keys=LexiconKeyExpander())
        ids = _store(expanded)
        fresh = EmbeddedSearchIndex(tmp_path / "rebuilt")
        try:
            assert fresh.rebuild_from(expanded.ports.records) == len(ids)
            hits = fresh.keyword_search(EVERYONE, "饮食偏好", 10)
            assert hits[0].memory_id == ids[SPICY]
        finally:
            fresh.close()


def test_reindex_gives_earlier_memories_their_keys_and_takes_them_away(
    service: MemoryService,
) -> None:
    """Switching expansion on does not touch what is stored; ``hindsight reindex`` derives
    the keys of the memories stored before, and with expansion off again removes them."""
    ids = _store(service)  # expansion off: no keys
    expanded = rewire(service, keys=LexiconKeyExpander())
    assert expanded.ports.index.keyword_search(EVERYONE, "饮食偏好", 10) == []

    counts = expanded.reindex()

    assert counts["search_keys_updated"] >= 2  # the diet memories; chatter may get none
    stored = expanded.ports.records.get("t1", ids[SPICY])
    assert isinstance(stored, EpisodicMemory)
    assert "饮食偏好" in stored.search_keys
    assert _first(expanded, "饮食偏好") == ids[SPICY]
    assert expanded.reindex()["search_keys_updated"] == 0  # already in line: nothing written

    plain = rewire(expanded, keys=None)
    assert plain.reindex()["search_keys_updated"] == counts["search_keys_updated"]
    stored = plain.ports.records.get("t1", ids[SPICY])
    assert isinstance(stored, EpisodicMemory)
    assert stored.search_keys == []
    assert plain.ports.index.keyword_search(EVERYONE, "饮食偏好", 10) == []
    assert plain.ports.records.get("t1", ids[PEANUTS]) is not None  # nothing else lost
