"""In-process BM25 postings: scores equal a plain BM25 formula, through removals and moves."""

from __future__ import annotations

import math
import random

import numpy as np

from hindsight.adapters.embedded.keyword_postings import BM25_B, BM25_K1, Postings
from hindsight.adapters.embedded.vector_index import VectorIndex
from hindsight.core.models import SearchFilter
from tests.contract.builders import document

WORDS = [
    "peanut",
    "allergy",
    "hiking",
    "berlin",
    "coffee",
    "chess",
    "sushi",
    "piano",
    "garden",
    "tennis",
]


def reference_bm25(docs: dict[int, list[str]], query: list[str]) -> dict[int, float]:
    """Okapi BM25, written out term by term (Lucene idf), over the live documents."""
    n_docs = len(docs)
    average = sum(len(t) for t in docs.values()) / n_docs
    scores: dict[int, float] = {}
    for term in dict.fromkeys(query):
        holding = [row for row, terms in docs.items() if term in terms]
        if not holding:
            continue
        idf = math.log(1 + (n_docs - len(holding) + 0.5) / (len(holding) + 0.5))
        for row in holding:
            tf = docs[row].count(term)
            norm = BM25_K1 * (1 - BM25_B + BM25_B * len(docs[row]) / average)
            scores[row] = scores.get(row, 0.0) + idf * tf * (BM25_K1 + 1) / (tf + norm)
    return scores


def random_terms(rng: random.Random) -> list[str]:
    return [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]


def test_scores_match_the_formula_through_removals_moves_and_compaction() -> None:
    rng = random.Random(3)
    postings = Postings()
    rows: dict[int, list[str]] = {}  # row -> terms, mirroring a partition
    doc_of_row: dict[int, int] = {}
    for row in range(3_000):
        rows[row] = random_terms(rng)
        doc_of_row[row] = postings.add(row, rows[row])
    # remove 2,500 documents the way a partition does: swap the last row into the hole
    size = len(rows)
    for _ in range(2_500):
        hole = rng.randrange(size)
        postings.remove(doc_of_row[hole])
        last = size - 1
        if hole != last:
            rows[hole], doc_of_row[hole] = rows[last], doc_of_row[last]
            postings.move(doc_of_row[hole], hole)
        del rows[last], doc_of_row[last]
        size -= 1
    assert postings.live == 500
    assert postings.dead <= 1_000  # compacted on the way

    for _ in range(20):
        query = rng.sample(WORDS, rng.randint(1, 3))
        expected = reference_bm25(rows, query)
        got = postings.scores(query, size)
        assert set(np.flatnonzero(got > 0)) == set(expected)
        for row, score in expected.items():
            assert math.isclose(got[row], score, rel_tol=1e-9)


def test_unknown_terms_and_empty_postings_score_nothing() -> None:
    postings = Postings()
    assert not postings.scores(["peanut"], 0).any()
    postings.add(0, ["peanut", "peanut", "allergy"])
    assert not postings.scores(["walnut"], 1).any()
    assert postings.scores(["peanut"], 1)[0] > postings.scores(["allergy"], 1)[0]


def test_keyword_search_ranks_filters_and_forgets_replaced_text() -> None:
    index = VectorIndex()
    index.upsert(
        [
            document("a", "peanut allergy, a bad peanut allergy"),
            document("b", "peanut butter toast"),
            document("c", "hiking in the alps", scope="work"),
            document("d", "peanut sauce", user_id="u2"),
        ]
    )
    everyone = SearchFilter("t1", "u1")
    assert [h.memory_id for h in index.keyword_search(everyone, "peanut allergy", 10)] == [
        "a",
        "b",
    ]
    assert [h.memory_id for h in index.keyword_search(everyone, "hiking", 10)] == ["c"]
    work_only = SearchFilter("t1", "u1", scopes=frozenset({"global"}))
    assert index.keyword_search(work_only, "hiking", 10) == []
    # replacing a document's text replaces its terms
    index.upsert([document("a", "chess club on tuesdays")])
    assert [h.memory_id for h in index.keyword_search(everyone, "allergy", 10)] == []
    assert [h.memory_id for h in index.keyword_search(everyone, "chess", 10)] == ["a"]
    index.delete("t1", ["b"])
    assert [h.memory_id for h in index.keyword_search(everyone, "peanut", 10)] == []
    assert [h.memory_id for h in index.keyword_search(SearchFilter("t1", "u2"), "peanut", 1)] == [
        "d"
    ]
