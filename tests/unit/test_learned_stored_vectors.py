"""The learned reflector reuses the episodes' stored vectors: a statement that is its
episode's whole search text is not embedded again (an embedder that records its calls
shows it), through the reflect use case and the offline-first LLM reflector too; a
reflection without stored vectors still finds the same facts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.adapters.reflectors.learned import LearnedReflector
from hindsight.adapters.reflectors.learned.model import CATEGORIES, StatementModel
from hindsight.adapters.reflectors.learned.segments import FEATURE_NAMES
from hindsight.adapters.reflectors.llm import LlmReflector
from hindsight.adapters.reflectors.offline_first import OfflineFirstReflector
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.commands import ReflectCommand, StoreMemoryCommand
from hindsight.core.errors import UnavailableError
from hindsight.core.models import EpisodicMemory, Principal, StoredVector
from hindsight.core.policy import Policy
from hindsight.core.ports import VectorReusingReflector
from hindsight.core.service import MemoryService
from tests.fakes import FixedClock, HashingEmbedder, SequentialIds, numbered_episode

T0 = datetime(2026, 6, 3, 9, 0, tzinfo=UTC)
DIM = 64


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, recording every passage it embeds."""

    def __init__(self) -> None:
        super().__init__(dimension=DIM)
        self.embedded: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        return super().embed_documents(texts)


def first_person_model(embedder: CountingEmbedder) -> StatementModel:
    """Accepts statements that start with "I" / 我 and are not questions, whatever the vector."""
    w = np.zeros(DIM + len(FEATURE_NAMES), dtype=np.float32)
    w[DIM + FEATURE_NAMES.index("starts_first_person")] = 6.0
    w[DIM + FEATURE_NAMES.index("question")] = -6.0
    return StatementModel(
        w=w,
        b=-3.0,
        platt=(1.0, 0.0),
        threshold=0.5,
        category_w=np.zeros((DIM + len(FEATURE_NAMES), len(CATEGORIES)), dtype=np.float32),
        category_b=np.zeros(len(CATEGORIES), dtype=np.float32),
        embedding_model=embedder.model_name,
        dimension=DIM,
    )


def learned(embedder: CountingEmbedder) -> LearnedReflector:
    return LearnedReflector(embedder, model=first_person_model(embedder))


def episode(number: int, content: str, context: str | None = None) -> EpisodicMemory:
    return numbered_episode(
        number, content, step=timedelta(minutes=1), id_digits=3, speaker=None, context=context
    )


def stored(embedder: HashingEmbedder, text: str) -> StoredVector:
    return StoredVector(model=embedder.model_name, values=embedder.embed_documents([text])[0])


def contents(output: object) -> list[str]:
    return sorted(f.content for f in output.facts)  # type: ignore[attr-defined]


def test_one_statement_episodes_are_not_embedded_again() -> None:
    embedder = CountingEmbedder()
    episodes = [episode(1, "I love hiking in the Alps."), episode(2, "I am a night nurse.")]
    vectors = {e.memory_id: stored(HashingEmbedder(DIM), e.content) for e in episodes}
    output = learned(embedder).reflect_with_vectors("u1", episodes, [], vectors)
    assert embedder.embedded == []
    assert contents(output) == contents(learned(CountingEmbedder()).reflect("u1", episodes, []))
    assert len(output.facts) == 2
    assert isinstance(learned(embedder), VectorReusingReflector)


def test_what_the_stored_vector_is_not_the_embedding_of_is_embedded() -> None:
    embedder = CountingEmbedder()
    two = episode(1, "I love hiking. I am a night nurse.")
    replied = episode(2, "I grow tomatoes.", context="Do you garden?")
    plain = episode(3, "I play the cello.")
    chunked = episode(4, "I speak Welsh.")
    foreign = episode(5, "I collect stamps.")
    vectors = {e.memory_id: stored(embedder, e.content) for e in (two, replied, plain)} | {
        chunked.memory_id: StoredVector(
            model=embedder.model_name,
            values=np.stack([embedder._one(chunked.content)] * 2),
            spans=((0, 5), (5, 14)),
        ),
        foreign.memory_id: StoredVector(model="another-model", values=embedder._one("x")),
    }
    embedder.embedded.clear()
    episodes = [two, replied, plain, chunked, foreign]
    output = learned(embedder).reflect_with_vectors("u1", episodes, [], vectors)
    assert sorted(embedder.embedded) == sorted(
        [
            "I love hiking.",
            "I am a night nurse.",
            "I grow tomatoes.",  # its stored vector holds the question before it too
            "I speak Welsh.",
            "I collect stamps.",
        ]
    )
    assert len(output.facts) == 6


def test_a_stored_vector_is_read_as_given() -> None:
    """The reused vector is the one the classifier scores: a model that reads only the
    vector's first value accepts the statement only when the stored vector says so."""
    embedder = CountingEmbedder()
    model = first_person_model(embedder)
    w = np.zeros_like(model.w)
    w[0] = 10.0
    reading_vector = StatementModel(**{**model.__dict__, "w": w, "b": -5.0})
    reflector = LearnedReflector(embedder, model=reading_vector)
    one = episode(1, "I love hiking in the Alps.")
    high = np.zeros(DIM, dtype=np.float32)
    high[0] = 1.0
    low = np.zeros(DIM, dtype=np.float32)
    low[1] = 1.0
    for values, expected in ((high, 1), (low, 0)):
        vectors = {one.memory_id: StoredVector(model=embedder.model_name, values=values)}
        assert len(reflector.reflect_with_vectors("u1", [one], [], vectors).facts) == expected
    assert embedder.embedded == []


class NoVectorsRecordStore(InMemoryRecordStore):
    """A record store that has lost its vectors (an older item, a restore without them)."""

    def get_vectors(self, tenant_id: str, memory_ids: Sequence[str]) -> dict[str, StoredVector]:
        return {}


def service_with(records: InMemoryRecordStore, reflector: object, embedder: CountingEmbedder):
    ports = local_ports(
        records,
        InMemorySearchIndex(),
        embedder,
        reflector,  # type: ignore[arg-type]
        clock=FixedClock(T0),
        ids=SequentialIds(),
    )
    return assemble(ports, Policy())


TURNS = ["I love hiking in the Alps.", "I am a night nurse, but I sleep well.", "Nice weather."]


def store_and_reflect(service: MemoryService, embedder: CountingEmbedder) -> list[str]:
    principal = Principal(tenant_id="acme")
    for text in TURNS:
        service.store(principal, StoreMemoryCommand(user_id="u1", content=text))
    embedder.embedded.clear()
    result = service.reflect(principal, ReflectCommand(user_id="u1"))
    return sorted(f["content"] for f in result.created)


def test_the_reflect_use_case_hands_over_the_stored_vectors() -> None:
    embedder = CountingEmbedder()
    facts = store_and_reflect(
        service_with(InMemoryRecordStore(), learned(embedder), embedder), embedder
    )
    statements_embedded = [t for t in embedder.embedded if t not in facts]
    # the two-statement turn is embedded statement by statement; the others not again
    assert sorted(statements_embedded) == ["I am a night nurse", "I sleep well."]
    assert len(facts) == 3

    without = CountingEmbedder()
    service = service_with(NoVectorsRecordStore(), learned(without), without)
    assert store_and_reflect(service, without) == facts
    assert "I love hiking in the Alps." in without.embedded


class AskedRecordStore(InMemoryRecordStore):
    """A record store that notes which memories' vectors were asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def get_vectors(self, tenant_id: str, memory_ids: Sequence[str]) -> dict[str, StoredVector]:
        self.asked.extend(memory_ids)
        return super().get_vectors(tenant_id, memory_ids)


def test_episodes_stored_with_the_turn_before_are_not_read_for_vectors() -> None:
    embedder = CountingEmbedder()
    records = AskedRecordStore()
    service = service_with(records, learned(embedder), embedder)
    principal = Principal(tenant_id="acme")
    ids = [  # two speakers taking turns: every turn after the first is a reply
        service.store(
            principal,
            StoreMemoryCommand(
                user_id="u1", content=text, session_id="s1", speaker=("Ann", "Bo")[i % 2]
            ),
        ).memory_id
        for i, text in enumerate(TURNS)
    ]
    records.asked.clear()
    service.reflect(principal, ReflectCommand(user_id="u1"))
    # the first turn of the session has no turn before it: its vector is its own
    assert records.asked == ids[:1]


def test_a_long_episode_reflected_in_pieces_gets_no_stored_vector() -> None:
    from hindsight.core.usecases import reflect as use_case

    embedder = CountingEmbedder()
    service = service_with(InMemoryRecordStore(), learned(embedder), embedder)
    principal = Principal(tenant_id="acme")
    sentence = "I love hiking in the Alps."
    long_text = " ".join([sentence] * (use_case.PIECE_CHARS // len(sentence) + 5))
    service.store(principal, StoreMemoryCommand(user_id="u1", content=long_text))
    embedder.embedded.clear()
    service.reflect(principal, ReflectCommand(user_id="u1"))
    assert sentence in embedder.embedded


class FailingModel:
    def __call__(self, system: str, user: str) -> object:
        raise UnavailableError("the model is down")


@pytest.mark.parametrize("with_vectors", [True, False])
def test_the_offline_first_reflector_passes_the_vectors_on(with_vectors: bool) -> None:
    embedder = CountingEmbedder()
    reflector = OfflineFirstReflector(learned(embedder), LlmReflector(FailingModel(), "fake:llm"))
    one = episode(1, "I love hiking in the Alps.")
    vectors = {one.memory_id: stored(embedder, one.content)} if with_vectors else {}
    embedder.embedded.clear()
    output = reflector.reflect_with_vectors("u1", [one], [], vectors)
    assert len(output.facts) == 1  # the LLM failed: the offline fact is kept
    assert embedder.embedded == ([] if with_vectors else [one.content])
