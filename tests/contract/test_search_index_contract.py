"""The SearchIndex contract: every implementation behaves exactly like this."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from hindsight.core.errors import EmbeddingModelMismatchError
from hindsight.core.models import (
    FactStatus,
    IndexDocument,
    MemoryKind,
    SearchFilter,
    SearchHit,
    StoredVector,
)
from hindsight.core.ports import SearchIndex
from tests.contract.builders import at, document, random_vectors, text_vector, unit_vector

MODES = ["vector", "keyword"]
QUERY_TEXT = "peanuts"


def search(index: SearchIndex, mode: str, search_filter: SearchFilter, k: int = 50) -> list[str]:
    """Ids found by either search for a query every test document matches."""
    if mode == "vector":
        hits = index.vector_search(search_filter, text_vector(QUERY_TEXT), k)
    else:
        hits = index.keyword_search(search_filter, QUERY_TEXT, k)
    return sorted(hit.memory_id for hit in hits)


def everyone(tenant_id: str = "t1", user_id: str = "u1", **options: object) -> SearchFilter:
    return SearchFilter(tenant_id=tenant_id, user_id=user_id, **options)  # type: ignore[arg-type]


def peanut_doc(memory_id: str, **fields: object) -> IndexDocument:
    return document(memory_id, f"peanuts note {memory_id}", **fields)  # type: ignore[arg-type]


# --- filters ------------------------------------------------------------------------------
@pytest.fixture
def filled(search_index: SearchIndex) -> SearchIndex:
    search_index.upsert(
        [
            peanut_doc(
                "e1",
                scope="work",
                category="food",
                emotion="happy",
                session_id="s1",
                occurred_at=at(0),
            ),
            peanut_doc(
                "e2",
                category="health",
                emotion="worried",
                session_id="s2",
                occurred_at=at(10),
                expires_at=at(60),
            ),
            peanut_doc(
                "f1",
                kind=MemoryKind.SEMANTIC,
                status=FactStatus.APPROVED,
                category="food",
                occurred_at=at(20),
            ),
            peanut_doc(
                "f2",
                kind=MemoryKind.SEMANTIC,
                status=FactStatus.PENDING,
                scope="work",
                occurred_at=at(30),
            ),
        ]
    )
    return search_index


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, ["e1", "e2", "f1", "f2"]),
        ({"scopes": frozenset({"work"})}, ["e1", "f2"]),
        ({"scopes": frozenset({"work", "global"})}, ["e1", "e2", "f1", "f2"]),
        ({"scopes": frozenset({"nowhere"})}, []),
        ({"kinds": frozenset({MemoryKind.SEMANTIC})}, ["f1", "f2"]),
        ({"kinds": frozenset({MemoryKind.EPISODIC})}, ["e1", "e2"]),
        ({"categories": frozenset({"food"})}, ["e1", "f1"]),
        ({"emotions": frozenset({"worried", "sad"})}, ["e2"]),
        # statuses narrow semantic memories only; episodes have none and pass
        ({"statuses": frozenset({FactStatus.APPROVED})}, ["e1", "e2", "f1"]),
        ({"statuses": frozenset()}, ["e1", "e2"]),
        ({"since": at(10)}, ["e2", "f1", "f2"]),
        ({"until": at(10)}, ["e1"]),
        ({"since": at(10), "until": at(30)}, ["e2", "f1"]),
        ({"now": at(59)}, ["e1", "e2", "f1", "f2"]),
        ({"now": at(60)}, ["e1", "f1", "f2"]),
        ({"session_id": "s1"}, ["e1"]),
        ({"session_id": "unknown"}, []),
    ],
)
def test_each_filter_field(
    filled: SearchIndex, mode: str, options: dict[str, object], expected: list[str]
) -> None:
    assert search(filled, mode, everyone(**options)) == expected


@pytest.mark.parametrize("mode", MODES)
def test_tenants_and_users_are_isolated(search_index: SearchIndex, mode: str) -> None:
    search_index.upsert(
        [
            peanut_doc("mine"),
            peanut_doc("same-tenant-other-user", user_id="u2"),
            peanut_doc("other-tenant", tenant_id="t2"),
            peanut_doc("mine", tenant_id="t2", user_id="u9"),
        ]
    )
    assert search(search_index, mode, everyone()) == ["mine"]
    assert search(search_index, mode, everyone(user_id="u2")) == ["same-tenant-other-user"]
    assert search(search_index, mode, everyone("t2", "u1")) == ["other-tenant"]
    assert search(search_index, mode, everyone("t2", "u9")) == ["mine"]
    assert search(search_index, mode, everyone("t3")) == []
    assert search_index.count() == 4
    assert search_index.count("t1") == 2
    assert search_index.count("t2") == 2
    assert search_index.count("t3") == 0


# --- keyword search -------------------------------------------------------------------------
def test_chinese_keywords_match_inside_unspaced_text(search_index: SearchIndex) -> None:
    search_index.upsert(
        [
            document("allergy", "用户对花生过敏"),
            document("travel", "下周三去北京出差"),
            document("coffee", "用户每天早上喝咖啡"),
        ]
    )
    assert [h.memory_id for h in search_index.keyword_search(everyone(), "花生", 5)] == ["allergy"]
    assert [h.memory_id for h in search_index.keyword_search(everyone(), "去北京", 5)] == ["travel"]
    assert search_index.keyword_search(everyone(), "茶叶", 5) == []


def test_english_keywords_match_and_rank_by_relevance(search_index: SearchIndex) -> None:
    search_index.upsert(
        [
            document("peanut", "The user is allergic to peanuts"),
            document("both", "Peanut butter and peanuts: the user avoids every peanut dish"),
            document("weather", "Nice weather today in Berlin"),
            document("none", "It was a long day"),
        ]
    )
    hits = search_index.keyword_search(everyone(), "PEANUT", 10)
    assert [h.memory_id for h in hits] == ["both", "peanut"]
    assert hits[0].score > hits[1].score > 0
    assert [h.memory_id for h in search_index.keyword_search(everyone(), "berlin", 10)] == [
        "weather"
    ]
    assert search_index.keyword_search(everyone(), "the is a", 10) == []  # stopwords only


def test_keyword_search_honours_k(search_index: SearchIndex) -> None:
    search_index.upsert([peanut_doc(f"m{n}") for n in range(7)])
    assert len(search_index.keyword_search(everyone(), "peanuts", 3)) == 3
    assert search_index.keyword_search(everyone(), "peanuts", 0) == []


@pytest.mark.parametrize(
    "text",
    ['peanuts"', "peanuts AND OR NOT", "NEAR(peanuts", "peanuts*", "col:peanuts", "^peanuts -x"],
)
def test_any_user_input_is_a_safe_keyword_query(search_index: SearchIndex, text: str) -> None:
    search_index.upsert([peanut_doc("m1"), document("m2", "and or not near col")])
    hits = search_index.keyword_search(everyone(), text, 5)
    assert "m1" in [h.memory_id for h in hits]


# --- writes -------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_delete_and_delete_user(search_index: SearchIndex, mode: str) -> None:
    search_index.upsert(
        [
            peanut_doc("a"),
            peanut_doc("b"),
            peanut_doc("c", user_id="u2"),
            peanut_doc("d", tenant_id="t2"),
        ]
    )
    search_index.delete("t1", ["a", "unknown"])
    search_index.delete("t2", ["b"])  # another tenant's id: nothing happens
    assert search(search_index, mode, everyone()) == ["b"]

    search_index.delete_user("t1", "u2")
    assert search(search_index, mode, everyone(user_id="u2")) == []
    assert search(search_index, mode, everyone()) == ["b"]
    assert search(search_index, mode, everyone("t2")) == ["d"]
    assert search_index.count() == 2


def test_upsert_replaces_text_vector_and_fields(search_index: SearchIndex) -> None:
    search_index.upsert([document("m1", "the user likes tea", scope="work")])
    search_index.upsert([document("m1", "the user likes coffee", scope="home")])

    assert search_index.count() == 1
    assert search_index.keyword_search(everyone(), "tea", 5) == []
    assert [h.memory_id for h in search_index.keyword_search(everyone(), "coffee", 5)] == ["m1"]
    assert (
        search_index.vector_search(everyone(scopes=frozenset({"work"})), text_vector("coffee"), 5)
        == []
    )
    hits = search_index.vector_search(everyone(), text_vector("the user likes coffee"), 5)
    assert [h.memory_id for h in hits] == ["m1"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_upsert_can_move_a_document_to_another_user(search_index: SearchIndex) -> None:
    search_index.upsert([peanut_doc("m1", user_id="u1")])
    search_index.upsert([peanut_doc("m1", user_id="u2")])
    assert search(search_index, "vector", everyone()) == []
    assert search(search_index, "keyword", everyone()) == []
    assert search(search_index, "vector", everyone(user_id="u2")) == ["m1"]
    assert search(search_index, "keyword", everyone(user_id="u2")) == ["m1"]


# --- embedding model ------------------------------------------------------------------------
def test_one_embedding_model_per_index(search_index: SearchIndex) -> None:
    search_index.upsert([document("m1", "peanuts")])
    other = StoredVector(model="other-model-384", values=np.ones(384, np.float32) / 384**0.5)

    with pytest.raises(EmbeddingModelMismatchError) as on_upsert:
        search_index.upsert([document("m2", "tea", vector=other)])
    message = on_upsert.value.message
    assert "test-hashing-64" in message and "other-model-384" in message
    assert "hindsight reindex" in message
    with pytest.raises(EmbeddingModelMismatchError):
        search_index.vector_search(everyone(), other, 5)
    assert search_index.count() == 1

    # a batch mixing models is refused whole
    with pytest.raises(EmbeddingModelMismatchError):
        search_index.upsert([document("m3", "x"), document("m4", "y", vector=other)])
    assert search_index.count() == 1


def test_an_emptied_index_accepts_a_new_model(search_index: SearchIndex) -> None:
    search_index.upsert([document("m1", "peanuts")])
    search_index.delete("t1", ["m1"])
    other = unit_vector(np.arange(1, 9, dtype=np.float32), model="other-8")
    search_index.upsert([document("m2", "tea", vector=other)])
    assert [h.memory_id for h in search_index.vector_search(everyone(), other, 5)] == ["m2"]


# --- vector search --------------------------------------------------------------------------
def test_vector_search_ranks_the_nearest_first(search_index: SearchIndex) -> None:
    data = random_vectors(40, seed=5)
    search_index.upsert(
        [document(f"m{n}", f"text {n}", vector=unit_vector(v)) for n, v in enumerate(data)]
    )
    rng = np.random.default_rng(9)
    query = unit_vector(data[17] + 0.05 * rng.standard_normal(data.shape[1]))
    hits = search_index.vector_search(everyone(), query, 5)

    exact = data @ query.values
    expected = [f"m{i}" for i in np.argsort(-exact)[:5]]
    assert [h.memory_id for h in hits] == expected
    assert hits[0].memory_id == "m17"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].score == pytest.approx(float(exact[17]), abs=1e-5)
    assert search_index.vector_search(everyone(), query, 0) == []
    assert len(search_index.vector_search(everyone(), query, 100)) == 40


def test_a_mixed_vector_scores_its_inner_product(search_index: SearchIndex) -> None:
    """A session turn's vector mixes two unit vectors (core/embedding.py), so it is shorter
    than 1: its score is the inner product (the mix of the two cosines), not its cosine,
    which would rank it first here."""
    rng = np.random.default_rng(21)
    query = unit_vector(rng.standard_normal(64))
    q = query.values

    def towards(cosine: float) -> np.ndarray:  # a unit vector at this cosine to the query
        other = rng.standard_normal(64)
        other -= (other @ q) * q
        other /= np.linalg.norm(other)
        return (cosine * q + np.sqrt(1.0 - cosine**2) * other).astype(np.float32)

    a, b = towards(0.9), towards(-0.3)  # b points away: the mix is much shorter than 1
    mixed = (0.5 * a + 0.5 * b).astype(np.float32)  # inner product 0.30, cosine ~0.45
    plain = towards(0.4)
    search_index.upsert(
        [
            document("mixed", "a", vector=StoredVector(model=query.model, values=mixed)),
            document("plain", "b", vector=StoredVector(model=query.model, values=plain)),
        ]
    )
    hits = search_index.vector_search(everyone(), query, 5)
    assert [h.memory_id for h in hits] == ["plain", "mixed"]
    assert hits[0].score == pytest.approx(0.4, abs=1e-4)
    assert hits[1].score == pytest.approx(float(mixed @ q), abs=1e-4)
    assert float(mixed @ q) / float(np.linalg.norm(mixed)) > 0.4  # its cosine would win


def test_vector_search_on_an_empty_index_finds_nothing(search_index: SearchIndex) -> None:
    assert search_index.vector_search(everyone(), text_vector("x"), 5) == []
    assert search_index.keyword_search(everyone(), "x", 5) == []
    assert search_index.count() == 0


def test_ann_path_finds_true_neighbours_and_keeps_filters(
    search_index_factory: Callable[..., SearchIndex],
) -> None:
    index = search_index_factory(ann_threshold=50)
    data = random_vectors(400, seed=11)
    documents = [
        document(
            f"m{n:03d}",
            f"note {n}",
            vector=unit_vector(v),
            scope="work" if n % 2 else "home",
            expires_at=at(10) if n % 5 == 0 else None,
            category="rare" if n % 40 == 7 else None,
        )
        for n, v in enumerate(data)
    ]
    documents += [
        document(f"o{n}", "x", user_id="u2", vector=unit_vector(v)) for n, v in enumerate(data[:60])
    ]
    index.upsert(documents)

    def hits_for(query: StoredVector, search_filter: SearchFilter, k: int) -> list[SearchHit]:
        return index.vector_search(search_filter, query, k)

    for target in (3, 150, 399):
        query = unit_vector(data[target])
        top = hits_for(query, everyone(), 10)
        assert top[0].memory_id == f"m{target:03d}"
        assert len(top) == 10

    # filters hold on the ANN path: only odd ("work") rows, no expired ones
    query = unit_vector(data[10])  # an even, "home" row
    work = hits_for(query, everyone(scopes=frozenset({"work"}), now=at(20)), 10)
    assert len(work) == 10
    assert all(int(h.memory_id[1:]) % 2 == 1 for h in work)
    assert all(int(h.memory_id[1:]) % 5 != 0 for h in work)
    exact = {f"m{i:03d}": s for i, s in enumerate(data @ query.values)}
    allowed = sorted(
        (mid for mid in exact if int(mid[1:]) % 2 == 1 and int(mid[1:]) % 5 != 0),
        key=lambda mid: -exact[mid],
    )
    assert work[0].memory_id == allowed[0]

    # a very selective filter still finds every row that passes, best first
    rare = hits_for(query, everyone(categories=frozenset({"rare"})), 20)
    rare_ids = sorted((f"m{n:03d}" for n in range(7, 400, 40)), key=lambda mid: -exact[mid])
    assert [h.memory_id for h in rare] == rare_ids

    # deletions are honoured by the graph
    index.delete("t1", ["m150"])
    assert hits_for(unit_vector(data[150]), everyone(), 1)[0].memory_id != "m150"
    if hasattr(index, "vectors"):  # the embedded index really took the ANN path
        assert index.vectors.has_graph("t1", "u1")
