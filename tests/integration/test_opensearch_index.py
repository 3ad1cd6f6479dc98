"""OpenSearchSearchIndex against the local OpenSearch node (k-NN plugin): what the contract
suite does not see — routing, the mapping and template, refresh policy, the model recorded in
the index, Chinese and English segmentation, errors. Needs ``make services``."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hindsight.adapters.aws.opensearch_index import (
    OpenSearchSearchIndex,
    build_opensearch_client,
    create_index_body,
    index_template_body,
)
from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.core.errors import EmbeddingModelMismatchError, UnavailableError
from hindsight.core.models import SearchFilter, StoredVector
from hindsight.core.text import tokenize
from tests.contract.builders import document, text_vector, unit_vector
from tests.services.opensearch_local import drop, fresh_index, local_client

TEMPLATE = Path(__file__).resolve().parents[2] / "infrastructure/opensearch/index-template.json"


@pytest.fixture
def index() -> Iterator[OpenSearchSearchIndex]:
    made = fresh_index()
    yield made
    drop(made)


def everyone(user_id: str = "u1") -> SearchFilter:
    return SearchFilter(tenant_id="t1", user_id=user_id)


def test_documents_are_routed_by_user_and_keyed_by_tenant(index: OpenSearchSearchIndex) -> None:
    index.upsert([document("m1", "peanuts", user_id="u7")])
    stored = index.client.get(index=index.index_name, id="t1:m1", routing="t1:u7")
    assert stored["_routing"] == "t1:u7"
    assert stored["_source"]["user_id"] == "u7"
    assert "vector" not in stored["_source"]  # kept out of _source: DynamoDB holds vectors
    assert stored["_source"]["text_tokens"] == " ".join(tokenize("peanuts"))


def test_the_mapping_is_knn_lucene_hnsw_inner_product(index: OpenSearchSearchIndex) -> None:
    assert index.ensure_index() is False  # already there: nothing to do
    body = index.client.indices.get(index=index.index_name)[index.index_name]
    assert body["settings"]["index"]["knn"] == "true"
    vector = body["mappings"]["properties"]["vector"]
    assert vector["type"] == "knn_vector"
    assert vector["dimension"] == 64
    assert vector["method"]["engine"] == "lucene"
    assert vector["method"]["space_type"] == "innerproduct"
    assert vector["method"]["name"] == "hnsw"
    assert body["mappings"]["properties"]["tenant_id"]["type"] == "keyword"
    assert body["mappings"]["properties"]["text_tokens"]["analyzer"] == "whitespace"


def test_an_index_made_with_cosine_still_reads_cosines() -> None:
    """An index created before the inner product (schema 2, ``cosinesimil``) keeps its
    space type (fixed at creation): its scores are read with the cosine formula."""
    client = local_client()
    name = f"hindsight-test-{uuid.uuid4().hex[:12]}"
    body = create_index_body(64, model="test-hashing-64")
    body["mappings"]["properties"]["vector"]["method"]["space_type"] = "cosinesimil"
    body["mappings"]["_meta"]["hindsight"]["schema"] = 2
    client.indices.create(index=name, body=body)  # type: ignore[attr-defined]
    index = OpenSearchSearchIndex(client, name, 64, refresh="wait_for")
    try:
        rng = np.random.default_rng(4)
        vectors = [unit_vector(rng.standard_normal(64)) for _ in range(3)]
        index.upsert([document(f"m{n}", "note", vector=v) for n, v in enumerate(vectors)])
        query = unit_vector(rng.standard_normal(64))
        hits = index.vector_search(everyone(), query, 3)
        exact = {f"m{n}": float(v.values @ query.values) for n, v in enumerate(vectors)}
        assert [h.memory_id for h in hits] == sorted(exact, key=lambda m: -exact[m])
        for hit in hits:
            assert hit.score == pytest.approx(exact[hit.memory_id], abs=1e-4)
        # a centred query (core/retrieval/centering.py) is not of unit length: cosinesimil divides
        # by its length, which the adapter scales back, so scores stay inner products
        mean = np.mean([v.values for v in vectors], axis=0)
        centred = StoredVector(query.model, (query.values - 0.5 * mean).astype(np.float32))
        assert abs(float(np.linalg.norm(centred.values)) - 1.0) > 0.05
        hits = index.vector_search(everyone(), centred, 3)
        for hit in hits:
            inner = float(vectors[int(hit.memory_id[1:])].values @ centred.values)
            assert hit.score == pytest.approx(inner, abs=1e-4)
    finally:
        drop(index)


def test_the_template_file_is_generated_and_accepted_by_opensearch() -> None:
    on_disk = json.loads(TEMPLATE.read_text())
    assert on_disk == index_template_body(1024)

    client = local_client()
    name = f"hindsight-tpl-{uuid.uuid4().hex[:8]}"
    body = {**on_disk, "index_patterns": [f"{name}-*"], "priority": 500}
    body["template"]["settings"]["index"]["number_of_replicas"] = 0  # one node here
    client.indices.put_index_template(name=name, body=body)
    try:
        client.indices.create(index=f"{name}-a")
        mapping = client.indices.get_mapping(index=f"{name}-a")[f"{name}-a"]["mappings"]
        assert mapping["properties"]["vector"]["dimension"] == 1024
        assert mapping["_meta"]["hindsight"]["dimension"] == 1024
    finally:
        client.indices.delete(index=f"{name}-a", ignore_unavailable=True)
        client.indices.delete_index_template(name=name)
        client.close()


def test_without_refresh_writes_wait_for_the_next_refresh() -> None:
    index = fresh_index(refresh=False)
    try:
        index.client.indices.put_settings(
            index=index.index_name, body={"index": {"refresh_interval": "-1"}}
        )
        index.upsert([document("m1", "peanuts")])
        assert index.count() == 0  # not yet searchable: production relies on refresh_interval
        index.client.indices.refresh(index=index.index_name)
        assert index.count() == 1
        assert [h.memory_id for h in index.keyword_search(everyone(), "peanuts", 5)] == ["m1"]
    finally:
        drop(index)


def test_the_model_is_recorded_in_the_index_for_every_process(
    index: OpenSearchSearchIndex,
) -> None:
    index.upsert([document("m1", "peanuts")])
    meta = index.client.indices.get_mapping(index=index.index_name)[index.index_name]
    assert meta["mappings"]["_meta"]["hindsight"]["model"] == "test-hashing-64"

    # another process, configured with another model of the same dimension
    other = OpenSearchSearchIndex(index.client, index.index_name, 64, refresh="wait_for")
    foreign = unit_vector(np.arange(1, 65, dtype=np.float32), model="other-64")
    with pytest.raises(EmbeddingModelMismatchError, match="hindsight reindex"):
        other.vector_search(everyone(), foreign, 5)
    with pytest.raises(EmbeddingModelMismatchError):
        other.upsert([document("m2", "tea", vector=foreign)])
    assert other.count() == 1
    assert [h.memory_id for h in other.vector_search(everyone(), text_vector("peanuts"), 5)] == [
        "m1"
    ]


def test_chinese_and_english_in_one_text(index: OpenSearchSearchIndex) -> None:
    index.upsert(
        [
            document("trip", "下周三去北京出差 — meeting with Zoë at 3pm"),
            document("food", "用户对花生过敏, allergic to peanuts"),
            document("other", "上海的天气很好"),
        ]
    )

    def found(text: str) -> list[str]:
        return [h.memory_id for h in index.keyword_search(everyone(), text, 5)]

    assert found("北京") == ["trip"]
    assert found("出差") == ["trip"]
    assert found("meetings") == ["trip"]  # stemmed like the embedded index
    assert found("zoë") == ["trip"]
    assert found("花生") == ["food"]
    assert found("peanut") == ["food"]
    assert found("天气") == ["other"]
    assert found("深圳") == []


def test_same_top_results_as_the_embedded_index(
    index: OpenSearchSearchIndex, tmp_path: Path
) -> None:
    texts = [
        "用户对花生过敏",
        "下周三去北京出差",
        "用户每天早上喝咖啡",
        "The user is allergic to peanuts",
        "Peanut butter and peanuts: the user avoids every peanut dish",
        "The user hikes in the Alps every summer",
        "Coffee with oat milk, no sugar",
        "去北京看长城",
    ]
    documents = [document(f"m{n}", text) for n, text in enumerate(texts)]
    embedded = EmbeddedSearchIndex(tmp_path / "embedded")
    try:
        embedded.upsert(documents)
        index.upsert(documents)
        for query in ["花生", "北京", "peanuts", "coffee", "hiking alps", "咖啡"]:
            expected = embedded.keyword_search(everyone(), query, 3)
            got = index.keyword_search(everyone(), query, 3)
            assert [h.memory_id for h in got] == [h.memory_id for h in expected], query
            vector = text_vector(query)
            expected = embedded.vector_search(everyone(), vector, 3)
            got = index.vector_search(everyone(), vector, 3)
            assert [h.score for h in got] == pytest.approx([h.score for h in expected], abs=1e-5)
            # unrelated texts tie at cosine 0 and may come in any order
            assert [h.memory_id for h in got if h.score > 1e-5] == [
                h.memory_id for h in expected if h.score > 1e-5
            ], query
    finally:
        embedded.close()


def test_an_unreachable_node_is_unavailable_not_a_stack_trace() -> None:
    client = build_opensearch_client("http://127.0.0.1:9", "none", timeout=2)
    index = OpenSearchSearchIndex(client, "hindsight-nowhere", 64)
    for call in (
        lambda: index.upsert([document("m1", "peanuts")]),
        lambda: index.vector_search(everyone(), text_vector("peanuts"), 5),
        lambda: index.keyword_search(everyone(), "peanuts", 5),
        lambda: index.count(),
        lambda: index.delete("t1", ["m1"]),
    ):
        with pytest.raises(UnavailableError, match="retry later") as raised:
            call()
        assert raised.value.__cause__ is not None


def test_a_missing_index_says_how_to_create_it() -> None:
    index = OpenSearchSearchIndex(local_client(), f"hindsight-missing-{uuid.uuid4().hex}", 64)
    with pytest.raises(UnavailableError, match="does not exist"):
        index.keyword_search(everyone(), "peanuts", 5)
    with pytest.raises(UnavailableError, match="does not exist"):
        index.vector_search(everyone(), text_vector("peanuts"), 5)


def test_client_auth_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    from opensearchpy import RequestsAWSV4SignerAuth

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    for mode, service in (("sigv4-es", "es"), ("sigv4-aoss", "aoss")):
        client = build_opensearch_client("https://example.invalid", mode, region="eu-west-1")
        auth = client.transport.connection_pool.connection.session.auth
        assert isinstance(auth, RequestsAWSV4SignerAuth)
        assert auth.service == service
    basic = build_opensearch_client("http://127.0.0.1:9200", "basic", username="u", password="p")
    assert basic.ping()  # the local node has no security plugin and ignores the credentials
    with pytest.raises(ValueError, match="username"):
        build_opensearch_client("http://127.0.0.1:9200", "basic")
    with pytest.raises(ValueError, match="auth mode"):
        build_opensearch_client("http://127.0.0.1:9200", "kerberos")  # type: ignore[arg-type]


def test_serverless_bodies_leave_shards_and_replicas_to_the_service() -> None:
    settings = create_index_body(1024, shards=None, replicas=None)["settings"]["index"]
    assert settings == {"knn": True}
    assert create_index_body(8)["settings"]["index"]["number_of_shards"] == 1


def test_keyword_scores_ignore_length_and_an_older_index_drops_its_norms(tmp_path: Path) -> None:
    """BM25 without length normalisation (backend_rules.BM25_B = 0): a word every turn of a
    speaker holds scores a short turn and a long one alike. An index made while the field
    kept norms has them turned off on first use."""
    client = local_client()
    name = f"hindsight-test-{uuid.uuid4().hex[:12]}"
    body = create_index_body(64, model="test-hashing-64")
    del body["mappings"]["properties"]["text_tokens"]["norms"]  # as made before
    client.indices.create(index=name, body=body)  # type: ignore[attr-defined]
    index = OpenSearchSearchIndex(client, name, 64, refresh="wait_for")
    try:
        index.upsert([document("seed", "a memory written on the first use")])
        index.upsert(
            [
                document("short", "Morgan: hi!"),
                document("long", "Morgan: my day job is wrestling, and at night I fix up cars"),
            ]
        )
        mapping = client.indices.get_mapping(index=name)[name]["mappings"]  # type: ignore[attr-defined]
        assert mapping["properties"]["text_tokens"]["norms"] is False
        hits = {hit.memory_id: hit.score for hit in index.keyword_search(everyone(), "Morgan", 5)}
        assert set(hits) == {"short", "long"}
        assert hits["short"] == pytest.approx(hits["long"], rel=1e-6)
        embedded = EmbeddedSearchIndex(tmp_path / "embedded")
        embedded.upsert(
            [
                document("short", "Morgan: hi!"),
                document("long", "Morgan: my day job is wrestling, and at night I fix up cars"),
            ]
        )
        alike = {
            hit.memory_id: hit.score for hit in embedded.keyword_search(everyone(), "Morgan", 5)
        }
        assert alike["short"] == pytest.approx(alike["long"], rel=1e-6)
    finally:
        drop(index)
