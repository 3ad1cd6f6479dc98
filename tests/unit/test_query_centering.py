"""Query centering (core/retrieval/centering.py): the query less a share of the user's mean memory
vector ranks the dense evidence; the cosines the calibration and ``why`` read stay the
query's own."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.bootstrap import assemble, local_ports, rewire
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.models import Principal, StoredVector
from hindsight.core.policy import Policy
from hindsight.core.retrieval.centering import UserMeans, centred, mean_of
from hindsight.core.service import MemoryService
from tests.fakes import FixedClock, HashingEmbedder, ScriptedReflector

# the user's everyday chatter, all alike, and one memory unlike it
CHATTER = [
    "hello friend how are you",
    "hello friend nice day",
    "hello friend good morning",
    "hello friend see you soon",
    "hello friend talk later",
]
HUB = "hello friend piano"
ANSWER = "piano recital"
QUERY = "hello friend piano recital"


def _vector(*values: float, model: str = "m") -> StoredVector:
    return StoredVector(model=model, values=np.asarray(values, dtype=np.float32))


def test_the_mean_is_of_each_memorys_first_piece_in_the_querys_model() -> None:
    chunked = StoredVector(
        model="m",
        values=np.asarray([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32),
        spans=((0, 5), (5, 9)),
    )
    vectors = [_vector(0.0, 1.0), chunked, _vector(9.0, 9.0, model="other")]
    mean = mean_of(vectors, "m", 2)
    assert mean is not None
    assert np.allclose(mean, [0.5, 0.5])  # the chunked one counts its first piece, once
    assert mean_of(vectors, "absent", 2) is None
    assert mean_of([_vector(1.0, 0.0, 0.0)], "m", 2) is None  # another dimension


def test_the_centred_query_is_the_query_less_the_weighed_mean() -> None:
    query = _vector(1.0, 0.0)
    mean = np.asarray([0.5, 0.5], dtype=np.float32)
    assert np.allclose(centred(query, mean, 0.5).values, [0.75, -0.25])
    assert centred(query, None, 0.5) is query
    assert centred(query, mean, 0.0) is query


class _CountingRecords(InMemoryRecordStore):
    """Counts the reads of the newest ids (``lists``) and of memories' content."""

    def __init__(self) -> None:
        super().__init__()
        self.lists = 0
        self.contents = 0

    def list_ids(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.lists += 1
        return super().list_ids(*args, **kwargs)

    def list(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.contents += 1
        return super().list(*args, **kwargs)

    def get_many(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.contents += 1
        return super().get_many(*args, **kwargs)


def _records_holding(texts: list[str]) -> _CountingRecords:
    """A record store whose user u1 holds ``texts``, stored by the store use case."""
    records = _CountingRecords()
    ports = local_ports(
        records, InMemorySearchIndex(), HashingEmbedder(), ScriptedReflector(), clock=FixedClock()
    )
    service = assemble(ports, Policy())
    for text in texts:
        service.store(Principal(tenant_id="acme"), StoreMemoryCommand(user_id="u1", content=text))
    records.lists = records.contents = 0
    return records


def test_a_users_mean_is_kept_for_its_time_then_read_again() -> None:
    records = _records_holding(CHATTER)
    now = [0.0]
    means = UserMeans(records, lambda: now[0], ttl_seconds=60.0)
    query = StoredVector(model="test-hashing-64", values=np.ones(64, dtype=np.float32) / 8)
    first = means.mean("acme", "u1", query, None)
    assert first is not None and records.lists == 1
    expected = np.mean(HashingEmbedder().embed_documents(CHATTER), axis=0)
    assert np.allclose(first, expected, atol=1e-6)
    now[0] = 59.0
    assert means.mean("acme", "u1", query, None) is first and records.lists == 1
    now[0] = 61.0
    means.mean("acme", "u1", query, None)
    assert records.lists == 2
    means.forget("acme", "u1")
    means.mean("acme", "u1", query, None)
    assert records.lists == 3
    # another user (and a user without memories) is read for itself
    assert means.mean("acme", "nobody", query, None) is None and records.lists == 4
    assert records.contents == 0  # ids and vectors only: no memory's content is read


def test_the_least_recently_used_mean_goes_first() -> None:
    records = _records_holding(CHATTER)
    means = UserMeans(records, lambda: 0.0, capacity=1)
    query = StoredVector(model="test-hashing-64", values=np.ones(64, dtype=np.float32) / 8)
    means.mean("acme", "u1", query, None)
    means.mean("acme", "u2", query, None)
    means.mean("acme", "u1", query, None)
    assert records.lists == 3  # u1 was dropped when u2 came


def _ranked(service: MemoryService, principal, **policy) -> list:  # type: ignore[no-untyped-def]
    tuned = rewire(service, policy=dataclasses.replace(service.policy, **policy))
    command = RetrieveCommand(user_id="u1", query=QUERY, top_k=10, min_score=0)
    return tuned.retrieve(principal, command).results


@pytest.fixture
def chatty(service: MemoryService, principal) -> MemoryService:  # type: ignore[no-untyped-def]
    for text in [*CHATTER, HUB, ANSWER]:
        service.store(principal, StoreMemoryCommand(user_id="u1", content=text))
    return service


def test_centering_lifts_the_memory_unlike_the_users_chatter(chatty, principal) -> None:  # type: ignore[no-untyped-def]
    dense = {"vector_weight": 1.0}  # the dense evidence alone decides
    before = [r.content for r in _ranked(chatty, principal, centering=0.0, **dense)]
    after = [r.content for r in _ranked(chatty, principal, centering=1.0, **dense)]
    assert before.index(HUB) < before.index(ANSWER)  # the hub is closer to the query
    assert after.index(ANSWER) < after.index(HUB)  # but it looks like all the chatter


def test_why_and_the_calibration_keep_the_querys_own_cosine(chatty, principal) -> None:  # type: ignore[no-untyped-def]
    embedder = HashingEmbedder()
    query = embedder.embed_query(QUERY)
    plain = {r.content: r for r in _ranked(chatty, principal, centering=0.0)}
    for result in _ranked(chatty, principal, centering=1.0):
        cosine = float(embedder.embed_documents([result.content])[0] @ query)
        assert result.why["similarity"] == pytest.approx(cosine, abs=1e-4)
        assert result.why["calibration"]["similarity_margin"] == pytest.approx(
            plain[result.content].why["calibration"]["similarity_margin"], abs=1e-4
        )


def test_min_similarity_still_reads_the_cosine(chatty, principal) -> None:  # type: ignore[no-untyped-def]
    embedder = HashingEmbedder()
    query = embedder.embed_query(QUERY)
    cosines = {t: float(embedder.embed_documents([t])[0] @ query) for t in [*CHATTER, HUB, ANSWER]}
    least = sorted(cosines.values())[-3]
    tuned = rewire(chatty, policy=dataclasses.replace(chatty.policy, centering=1.0))
    command = RetrieveCommand(user_id="u1", query=QUERY, min_similarity=least, min_score=0)
    kept = {r.content for r in tuned.retrieve(principal, command).results}
    assert kept == {t for t, c in cosines.items() if c >= least}


def test_erasing_a_user_drops_their_kept_mean(chatty, principal) -> None:  # type: ignore[no-untyped-def]
    means = chatty.use_cases.retrieve.means
    chatty.retrieve(principal, RetrieveCommand(user_id="u1", query=QUERY))
    assert any(key[:2] == (principal.tenant_id, "u1") for key in means._kept)
    chatty.erase_user(principal, "u1")
    assert not any(key[:2] == (principal.tenant_id, "u1") for key in means._kept)
