"""The SearchIndex contract for long memories searched by chunks, on every index.

A chunked memory is searched chunk by chunk (k-NN and BM25), comes back ONCE scored by its
best chunk with that chunk's number and span, and is replaced, deleted, erased and counted
as one memory whatever its number of chunks. Vectors come from the test HashingEmbedder.
"""

from __future__ import annotations

import numpy as np
import pytest

from hindsight.core.indexing import index_document
from hindsight.core.models import IndexDocument, SearchFilter, SearchHit, StoredVector
from hindsight.core.ports import SearchIndex
from tests.contract.builders import EMBEDDER, MODEL, document, episode, text_vector

MODES = ["vector", "keyword"]
NEEDLE = "Zephyrine gym: the locker combination at the Zephyrine climbing gym is 4471."
QUERY = "Zephyrine climbing gym locker combination"
_WORDS = [
    "report",
    "server",
    "request",
    "latency",
    "budget",
    "meeting",
    "agenda",
    "quarterly",
    "revenue",
    "customer",
    "deploy",
    "cluster",
    "module",
    "invoice",
    "schedule",
    "review",
    "draft",
    "contract",
    "clause",
    "vendor",
    "pipeline",
    "storage",
]


def filler(number: int) -> str:
    """A paragraph of office words, different for each number."""
    words = [_WORDS[(number * 7 + i * 3) % len(_WORDS)] for i in range(24)]
    return " ".join(words).capitalize() + f" (part {number})."


def chunked(
    memory_id: str, paragraphs: list[str], user_id: str = "u1", **fields: object
) -> IndexDocument:
    """The index document of a memory made of ``paragraphs``, one chunk each."""
    content = "\n\n".join(paragraphs)
    spans, start = [], 0
    for paragraph in paragraphs:
        spans.append((start, start + len(paragraph)))
        start += len(paragraph) + 2
    rows = np.asarray(EMBEDDER.embed_documents(paragraphs), dtype=np.float32)
    vector = StoredVector(model=MODEL, values=rows, spans=tuple(spans))
    memory = episode(memory_id, content, user_id=user_id, **fields)  # type: ignore[arg-type]
    return index_document(memory, vector)


def long_doc(memory_id: str = "long", chunks: int = 60, **fields: object) -> IndexDocument:
    """``chunks`` chunks of filler, the needle alone in the last one."""
    return chunked(memory_id, [filler(n) for n in range(chunks - 1)] + [NEEDLE], **fields)


def everyone(**options: object) -> SearchFilter:
    return SearchFilter(tenant_id="t1", user_id="u1", **options)  # type: ignore[arg-type]


def search(
    index: SearchIndex, mode: str, query: str = QUERY, k: int = 10, **options: object
) -> list[SearchHit]:
    search_filter = everyone(**options)
    if mode == "vector":
        return index.vector_search(search_filter, text_vector(query), k)
    return index.keyword_search(search_filter, query, k)


def short_docs() -> list[IndexDocument]:
    return [
        document("s1", "The user had pasta for lunch on Monday."),
        document("s2", "The user prefers aisle seats on long flights."),
        document("s3", "The user's sister lives in Lisbon."),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_chunked_memory_is_found_once_by_its_last_chunk_with_its_span(
    search_index: SearchIndex, mode: str
) -> None:
    long = long_doc()
    assert len(long.chunks) == 60
    search_index.upsert([long, *short_docs()])

    hits = search(search_index, mode)
    ids = [hit.memory_id for hit in hits]
    assert ids.count("long") == 1
    assert ids[0] == "long"
    top = hits[0]
    assert top.chunk == 59
    assert top.span == long.chunks[59].span
    start, end = long.chunks[59].span
    assert long.text[start:end] == NEEDLE  # the span points at the needle in the content
    for hit in hits[1:]:
        assert (hit.chunk, hit.span) == (None, None)  # short memories: searched whole


@pytest.mark.parametrize("mode", MODES)
def test_a_chunk_in_the_middle_is_found_too(search_index: SearchIndex, mode: str) -> None:
    paragraphs = [filler(n) for n in range(40)]
    paragraphs[17] = NEEDLE
    search_index.upsert([chunked("long", paragraphs), *short_docs()])
    top = search(search_index, mode)[0]
    assert (top.memory_id, top.chunk) == ("long", 17)


def test_reupserting_with_fewer_chunks_leaves_none_of_the_old(search_index: SearchIndex) -> None:
    search_index.upsert([long_doc(chunks=60), document("other", "The user likes tea.")])
    shorter = chunked(
        "long", [f"Notes on gardening: tomatoes and basil, row {n}." for n in range(5)]
    )
    search_index.upsert([shorter])

    assert search(search_index, "keyword") == []  # the needle was in old chunk 59
    assert search(search_index, "keyword", filler(30), k=50) == []  # an old chunk's words
    found = [h for h in search(search_index, "vector", k=50) if h.memory_id == "long"]
    assert len(found) == 1 and found[0].chunk is not None and found[0].chunk < 5
    assert search_index.count("t1") == 2

    search_index.upsert([document("long", "The user once climbed at a gym.")])  # now short
    hits = [h for h in search(search_index, "vector", k=50) if h.memory_id == "long"]
    assert [(h.chunk, h.span) for h in hits] == [(None, None)]
    assert search(search_index, "keyword", "gardening tomatoes basil") == []
    assert search_index.count("t1") == 2

    search_index.upsert([long_doc(chunks=8)])  # and long again
    top = search(search_index, "keyword")[0]
    assert (top.memory_id, top.chunk) == ("long", 7)
    assert search_index.count("t1") == 2


@pytest.mark.parametrize("mode", MODES)
def test_delete_removes_every_chunk(search_index: SearchIndex, mode: str) -> None:
    search_index.upsert([long_doc(), document("other", "Zephyrine is the user's cat.")])
    search_index.delete("t1", ["long"])
    assert [hit.memory_id for hit in search(search_index, mode, k=100)] == ["other"]
    assert search(search_index, "keyword", filler(3)) == []
    assert search_index.count("t1") == 1


@pytest.mark.parametrize("mode", MODES)
def test_delete_user_removes_every_chunk(search_index: SearchIndex, mode: str) -> None:
    search_index.upsert([long_doc(), long_doc("bobs", user_id="bob")])
    search_index.delete_user("t1", "u1")
    assert search(search_index, mode, k=100) == []
    bob = SearchFilter(tenant_id="t1", user_id="bob")
    assert [h.memory_id for h in search_index.keyword_search(bob, QUERY, 10)] == ["bobs"]
    assert search_index.count("t1") == 1


def test_count_counts_memories_not_chunks(search_index: SearchIndex) -> None:
    search_index.upsert(
        [
            long_doc("a", chunks=60),
            long_doc("b", chunks=12),
            document("c", "a short one"),
            long_doc("x", chunks=30, tenant_id="t2"),
        ]
    )
    assert search_index.count("t1") == 3
    assert search_index.count("t2") == 1
    assert search_index.count() == 4


@pytest.mark.parametrize("mode", MODES)
def test_many_near_chunks_of_one_memory_do_not_crowd_out_others(
    search_index: SearchIndex, mode: str
) -> None:
    """150 chunks nearer to the query than five short memories: still six memories."""
    paragraphs = [f"peanuts peanuts {_WORDS[n % len(_WORDS)]} {n}" for n in range(150)]
    shorts = [
        document(f"p{n}", f"peanuts were mentioned at the office lunch {n} with colleagues")
        for n in range(5)
    ]
    search_index.upsert([chunked("long", paragraphs), *shorts])
    hits = search(search_index, mode, "peanuts", k=6)
    assert sorted(hit.memory_id for hit in hits) == ["long", "p0", "p1", "p2", "p3", "p4"]


@pytest.mark.parametrize("mode", MODES)
def test_filters_apply_to_every_chunk(search_index: SearchIndex, mode: str) -> None:
    search_index.upsert([long_doc(scope="work", category="gym")])
    assert [h.memory_id for h in search(search_index, mode, scopes=frozenset({"work"}))] == ["long"]
    assert search(search_index, mode, scopes=frozenset({"global"})) == []
    assert search(search_index, mode, categories=frozenset({"food"})) == []
    other = SearchFilter(tenant_id="t1", user_id="someone-else")
    assert search_index.keyword_search(other, QUERY, 10) == []
