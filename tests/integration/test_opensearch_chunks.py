"""OpenSearch chunk documents, what the contract suite does not see: ids and routing of the
pieces, the surplus pieces of a re-upsert found without a refresh, and an index made before
chunks (schema 1) extended on first use. Needs ``make services``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from hindsight.adapters.aws.opensearch_index import OpenSearchSearchIndex, create_index_body
from hindsight.core.models import SearchFilter
from tests.contract.builders import MODEL, document, text_vector
from tests.contract.test_chunked_search_index_contract import QUERY, long_doc
from tests.services.opensearch_local import drop, fresh_index, local_client


@pytest.fixture
def index() -> Iterator[OpenSearchSearchIndex]:
    made = fresh_index()
    yield made
    drop(made)


def documents(index: OpenSearchSearchIndex) -> int:
    index.client.indices.refresh(index=index.index_name)
    return int(index.client.count(index=index.index_name)["count"])


def test_pieces_are_documents_of_their_own_routed_by_user(index: OpenSearchSearchIndex) -> None:
    long = long_doc("m1", chunks=12, user_id="u7")
    index.upsert([long])
    assert documents(index) == 12
    first = index.client.get(index=index.index_name, id="t1:m1", routing="t1:u7")["_source"]
    last = index.client.get(index=index.index_name, id="t1:m1#11", routing="t1:u7")["_source"]
    assert (first["chunk"], first["chunks"], first["memory_id"]) == (0, 12, "m1")
    assert (last["chunk"], last["span_start"], last["span_end"]) == (11, *long.chunks[11].span)
    assert "vector" not in last


def test_a_reupsert_finds_the_surplus_pieces_without_a_refresh() -> None:
    index = fresh_index(refresh=False)  # production's setting: writes become visible later
    try:
        index.upsert([long_doc("m1", chunks=60)])
        index.upsert([long_doc("m1", chunks=5)])  # at once: the 60 are not searchable yet
        assert documents(index) == 5
        assert index.count("t1") == 1
    finally:
        drop(index)


def test_an_index_made_before_chunks_is_extended_on_first_use() -> None:
    client = local_client()
    name = f"hindsight-test-{uuid.uuid4().hex[:12]}"
    body = create_index_body(64, model=MODEL)
    for field in ("chunk", "chunks", "span_start", "span_end"):
        del body["mappings"]["properties"][field]
    body["mappings"]["_meta"]["hindsight"]["schema"] = 1
    client.indices.create(index=name, body=body)  # type: ignore[attr-defined]
    old = {  # a schema-1 document: no chunk fields
        "memory_id": "old",
        "tenant_id": "t1",
        "user_id": "u1",
        "kind": "episodic",
        "scope": "global",
        "model": MODEL,
        "occurred_at": 0,
        "created_at": 0,
        "text": "Zephyrine climbing gym, the old note",
        "text_tokens": "zephyrine climbing gym old note",
        "vector": text_vector("Zephyrine climbing gym").values.tolist(),
    }
    client.index(index=name, id="t1:old", routing="t1:u1", body=old, refresh=True)  # type: ignore[attr-defined]
    index = OpenSearchSearchIndex(client, name, 64, refresh="wait_for")
    try:
        index.upsert([long_doc("new", chunks=10), document("short", "a short note")])
        properties = client.indices.get_mapping(index=name)[name]["mappings"]["properties"]  # type: ignore[attr-defined]
        assert {"chunk", "chunks", "span_start", "span_end"} <= set(properties)
        assert index.count("t1") == 3  # the old document counts as one memory
        everyone = SearchFilter(tenant_id="t1", user_id="u1")
        found = index.keyword_search(everyone, QUERY, 10)
        assert {(h.memory_id, h.chunk) for h in found} == {("new", 9), ("old", None)}
        index.delete("t1", ["old", "new"])
        assert index.count("t1") == 1 and documents(index) == 1
    finally:
        drop(index)
