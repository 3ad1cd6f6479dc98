"""VectorIndex: exact and HNSW paths agree with brute force; graphs persist and go stale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hindsight.adapters.embedded.vector_index import VectorIndex
from hindsight.core.errors import EmbeddingModelMismatchError
from hindsight.core.models import IndexDocument, SearchFilter, StoredVector
from tests.contract.builders import document, random_vectors, unit_vector

DIM = 32


def docs(data: np.ndarray, prefix: str = "m", **fields: object) -> list[IndexDocument]:
    return [
        document(f"{prefix}{n:04d}", "x", vector=unit_vector(v), **fields)  # type: ignore[arg-type]
        for n, v in enumerate(data)
    ]


def brute_force(stored: dict[str, np.ndarray], query: np.ndarray, k: int) -> list[str]:
    ids = sorted(stored)
    scores = np.stack([stored[i] for i in ids]) @ query
    order = np.lexsort((np.arange(len(ids)), -scores))[:k]
    return [ids[i] for i in order]


def found(index: VectorIndex, query: np.ndarray, k: int, user: str = "u1") -> list[str]:
    hits = index.search(SearchFilter("t1", user), unit_vector(query), k)
    return [h.memory_id for h in hits]


def test_exact_path_survives_growth_deletes_and_replacements() -> None:
    index = VectorIndex(ann_threshold=10_000)
    data = random_vectors(100, DIM, seed=1)
    index.upsert(docs(data))
    stored = {f"m{n:04d}": data[n] for n in range(100)}
    rng = np.random.default_rng(2)
    for n in rng.choice(100, size=40, replace=False):
        index.delete("t1", [f"m{n:04d}"])
        del stored[f"m{n:04d}"]
    replacements = random_vectors(10, DIM, seed=3)
    for memory_id, vector in zip(sorted(stored)[:10], replacements, strict=True):
        index.upsert([document(memory_id, "x", vector=unit_vector(vector))])
        stored[memory_id] = vector

    assert index.count() == 60
    for query in random_vectors(5, DIM, seed=4):
        assert found(index, query, 60) == brute_force(stored, query, 60)


def test_hnsw_path_agrees_with_brute_force_after_changes() -> None:
    index = VectorIndex(ann_threshold=30)
    data = random_vectors(300, DIM, seed=5)
    index.upsert(docs(data))
    stored = {f"m{n:04d}": data[n] for n in range(300)}
    found(index, data[0], 5)  # first search past the threshold builds the graph
    assert index.has_graph("t1", "u1")

    for n in range(0, 300, 4):
        index.delete("t1", [f"m{n:04d}"])
        del stored[f"m{n:04d}"]
    fresh = random_vectors(40, DIM, seed=6)
    index.upsert(docs(fresh, prefix="new"))
    stored.update({f"new{n:04d}": v for n, v in enumerate(fresh)})
    moved = random_vectors(1, DIM, seed=7)[0]
    index.upsert([document("m0001", "x", vector=unit_vector(moved))])
    stored["m0001"] = moved

    assert index.has_graph("t1", "u1")
    for memory_id in ("m0001", "m0002", "new0007", "m0299"):
        assert found(index, stored[memory_id], 1) == [memory_id]
    assert "m0004" not in found(index, data[4], 10)
    top = found(index, data[4], 10)
    assert len(set(top) & set(brute_force(stored, data[4], 10))) >= 9


def test_mostly_deleted_graphs_are_rebuilt_compactly() -> None:
    index = VectorIndex(ann_threshold=100)
    data = random_vectors(1_300, 8, seed=8)
    index.upsert(docs(data))
    found(index, data[0], 1)
    assert index.has_graph("t1", "u1")
    index.delete("t1", [f"m{n:04d}" for n in range(1_100)])
    assert not index.has_graph("t1", "u1")
    assert found(index, data[1_200], 1) == ["m1200"]
    assert index.has_graph("t1", "u1")


def test_graphs_are_restored_after_a_restart(tmp_path: Path) -> None:
    data = random_vectors(200, DIM, seed=9)
    first = VectorIndex(ann_threshold=50, persist_dir=tmp_path)
    first.upsert(docs(data))
    found(first, data[0], 1)
    assert first.save(tmp_path) == 1

    second = VectorIndex(ann_threshold=50)
    second.upsert(list(reversed(docs(data))))  # the rows may come back in another order
    assert second.load(tmp_path) == {"restored": 1, "stale": 0}
    assert second.has_graph("t1", "u1")
    for target in (0, 57, 199):
        assert found(second, data[target], 1) == [f"m{target:04d}"]
    second.upsert(docs(random_vectors(3, DIM, seed=10), prefix="later"))
    assert found(second, data[57], 1) == ["m0057"]


@pytest.mark.parametrize("change", ["removed", "added", "replaced", "model"])
def test_stale_graphs_are_detected_and_rebuilt(tmp_path: Path, change: str) -> None:
    data = random_vectors(120, DIM, seed=11)
    first = VectorIndex(ann_threshold=50)
    first.upsert(docs(data))
    found(first, data[0], 1)
    first.save(tmp_path)

    current = docs(data)
    if change == "removed":
        current = current[1:]
    elif change == "added":
        current += docs(random_vectors(1, DIM, seed=12), prefix="extra")
    elif change == "replaced":
        current[5] = document("m0005", "x", vector=unit_vector(data[6]))
    else:
        current = [
            document(d.memory_id, "x", vector=StoredVector("other", d.vector.values))
            for d in current
        ]
    second = VectorIndex(ann_threshold=50)
    second.upsert(current)
    assert second.load(tmp_path) == {"restored": 0, "stale": 1}
    assert not second.has_graph("t1", "u1")
    query = StoredVector(current[10].vector.model, current[10].vector.values)
    top = second.search(SearchFilter("t1", "u1"), query, 1)
    assert top[0].memory_id == current[10].memory_id
    assert second.has_graph("t1", "u1")


def test_missing_or_damaged_graph_files_mean_stale(tmp_path: Path) -> None:
    data = random_vectors(80, DIM, seed=13)
    first = VectorIndex(ann_threshold=50)
    first.upsert(docs(data))
    found(first, data[0], 1)
    first.save(tmp_path)
    for graph_file in tmp_path.glob("*.hnsw"):
        graph_file.write_bytes(b"not a graph")
    (tmp_path / "p_garbage.json").write_text("{not json")

    second = VectorIndex(ann_threshold=50)
    second.upsert(docs(data))
    assert second.load(tmp_path)["restored"] == 0
    assert found(second, data[3], 1) == ["m0003"]
    assert VectorIndex().load(tmp_path / "absent") == {"restored": 0, "stale": 0}


def test_one_model_per_index_until_it_is_empty() -> None:
    index = VectorIndex()
    index.upsert(docs(random_vectors(3, DIM)))
    assert index.model == ("test-hashing-64", DIM)
    other = StoredVector("e5-small", np.ones(DIM, np.float32) / DIM**0.5)
    with pytest.raises(EmbeddingModelMismatchError, match=r"e5-small.*reindex"):
        index.search(SearchFilter("t1", "u1"), other, 3)
    index.delete_user("t1", "u1")
    assert index.model is None
    index.upsert([document("m1", "x", vector=other)])
    assert index.model == ("e5-small", DIM)


def test_count_and_delete_user_are_per_tenant_and_user() -> None:
    index = VectorIndex()
    index.upsert(docs(random_vectors(3, DIM), prefix="a", user_id="u1"))
    index.upsert(docs(random_vectors(2, DIM), prefix="b", user_id="u2"))
    index.upsert(docs(random_vectors(4, DIM), prefix="c", tenant_id="t2"))
    assert (index.count(), index.count("t1"), index.count("t2")) == (9, 5, 4)
    index.delete_user("t1", "u1")
    assert (index.count(), index.count("t1")) == (6, 2)
    index.delete("t2", ["a0000", "c0001"])
    assert index.count("t2") == 3
