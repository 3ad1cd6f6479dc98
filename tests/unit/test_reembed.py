"""The re-embedding migration (core/usecases/reembed.py) on fakes: resume after a failure,
the old vectors serve until the switch, queries embedded with the served model."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
import pytest

from hindsight.adapters.embedders.serving import ServingEmbedder
from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import ConfigurationError, UnavailableError
from hindsight.core.models import Principal, SearchFilter
from hindsight.core.policy import Policy
from hindsight.core.service import MemoryService
from hindsight.core.usecases.reembed import Key, MigrationState, ReEmbedMemories
from tests.contract.builders import T0
from tests.fakes import FixedClock, HashingEmbedder, ScriptedReflector

OWNER = Principal(tenant_id="t1")
OLD = HashingEmbedder(dimension=64, model_name="old-64")
NEW = HashingEmbedder(dimension=32, model_name="new-32")
TEXTS = [f"note {n}: the red kite flew over hill {n}" for n in range(10)] + [
    "the passport is in the blue folder"
]


class FakeGenerations:
    """Two in-memory indexes: the served one and the one being built; a checkpoint."""

    def __init__(self, served: InMemorySearchIndex, model: str) -> None:
        self.served = served
        self.model = model
        self.building: InMemorySearchIndex | None = None
        self.checkpoint: MigrationState | None = None
        self.switches = 0

    def serving_model(self) -> str | None:
        return self.model

    def begin(
        self, model: str, dimension: int, embedder_spec: str, now: datetime
    ) -> MigrationState:
        if self.checkpoint is None or self.checkpoint.model != model:
            self.building = InMemorySearchIndex()
            self.checkpoint = MigrationState("gen-2", model, dimension, now)
        return self.checkpoint

    def target(self) -> InMemorySearchIndex:
        assert self.building is not None
        return self.building

    def save_progress(self, cursor: Key, done: int) -> None:
        assert self.checkpoint is not None
        c = self.checkpoint
        self.checkpoint = MigrationState(
            c.generation, c.model, c.dimension, c.started_at, cursor, done
        )

    def target_keys(self) -> set[Key]:
        assert self.building is not None
        return set(self.building._entries)

    def switch(self) -> None:
        assert self.building is not None and self.checkpoint is not None
        self.served, self.building = self.building, self.building
        self.model = self.checkpoint.model
        self.checkpoint = None
        self.switches += 1


class ServedIndex:
    """The service's view: whatever FakeGenerations serves now."""

    def __init__(self, generations: FakeGenerations) -> None:
        self.generations = generations

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.generations.served, name)


class FailingEmbedder(HashingEmbedder):
    """Fails its ``fail_on``-th call of embed_documents (a crash mid-run)."""

    def __init__(self, fail_on: int) -> None:
        super().__init__(dimension=32, model_name="new-32")
        self.calls = 0
        self.embedded = 0
        self.fail_on = fail_on

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeError("killed")
        self.embedded += len(texts)
        return super().embed_documents(texts)


def world() -> tuple[MemoryService, FakeGenerations, InMemoryRecordStore, ServingEmbedder]:
    records = InMemoryRecordStore()
    generations = FakeGenerations(InMemorySearchIndex(), OLD.model_name)
    embedder = ServingEmbedder(
        OLD,
        lambda: (generations.model, "new-spec"),
        lambda spec: NEW,
        check_every=0.0,
    )
    ports = local_ports(records, ServedIndex(generations), embedder, ScriptedReflector())  # type: ignore[arg-type]
    service = assemble(ports, Policy())
    for text in TEXTS:
        service.store(OWNER, StoreMemoryCommand(user_id="u1", content=text))
    return service, generations, records, embedder


def found(service: MemoryService, query: str) -> list[str]:
    result = service.retrieve(OWNER, RetrieveCommand(user_id="u1", query=query, top_k=3))
    return [r.content for r in result.results]


def test_a_failed_run_resumes_where_it_stopped() -> None:
    service, generations, records, _ = world()
    failing = FailingEmbedder(fail_on=3)  # batches of 4: the third batch fails
    migrate = ReEmbedMemories(records, failing, generations, FixedClock(T0), batch=4)
    with pytest.raises(UnavailableError):
        migrate()
    assert generations.switches == 0
    assert generations.checkpoint is not None and generations.checkpoint.done == 8
    assert found(service, "passport blue folder")[0] == "the passport is in the blue folder"

    again = FailingEmbedder(fail_on=0)
    result = ReEmbedMemories(records, again, generations, FixedClock(T0), batch=4)()
    assert result["resumed_after"] == 8 and result["re_embedded"] == 3
    assert again.embedded == 3  # only what the first run had not done
    assert generations.switches == 1
    vectors = records.get_vectors("t1", [m.memory_id for m, _ in records.iter_all()])
    assert {v.model for v in vectors.values()} == {"new-32"}


def test_the_old_vectors_serve_until_the_switch_then_the_new_model_answers() -> None:
    service, generations, records, embedder = world()
    seen: list[tuple[str | None, list[str]]] = []

    def during(done: int, total: int) -> None:
        hits = found(service, "passport blue folder")
        seen.append((embedder.model_name, hits))

    ReEmbedMemories(records, NEW, generations, FixedClock(T0), batch=4)(progress=during)
    assert len(seen) == 4  # before the first batch and after each of three
    for model, contents in seen:
        assert model == "old-64"  # queries embedded with the served (old) model
        assert contents[0] == "the passport is in the blue folder"
    assert found(service, "passport blue folder")[0] == "the passport is in the blue folder"
    assert embedder.model_name == "new-32"  # the served generation's model now
    assert generations.served.count() == len(TEXTS)


def test_what_changes_during_the_migration_is_caught_up() -> None:
    service, generations, records, _ = world()
    added: list[str] = []

    def during(done: int, total: int) -> None:
        if done == 4 and not added:
            outcome = service.store(
                OWNER, StoreMemoryCommand(user_id="u1", content="zebra stripes")
            )
            added.append(str(outcome.memory_id))
            first = sorted(m.memory_id for m, _ in records.iter_all())[0]
            service.delete_memory(OWNER, first)

    result = ReEmbedMemories(records, NEW, generations, FixedClock(T0), batch=4)(progress=during)
    assert result["caught_up"] >= 1
    assert generations.served.count() == len(TEXTS)  # one added, one deleted
    assert found(service, "zebra stripes")[0] == "zebra stripes"


def test_an_index_of_another_model_without_a_spec_is_a_clear_error() -> None:
    embedder = ServingEmbedder(NEW, lambda: ("old-64", ""), lambda spec: OLD, check_every=0.0)
    with pytest.raises(ConfigurationError) as error:
        embedder.embed_query("hello")
    assert "hindsight reindex --re-embed" in error.value.message


def test_a_mismatch_makes_the_embedder_look_again_at_once() -> None:
    from hindsight.core.errors import EmbeddingModelMismatchError

    served = ["old-64"]
    embedder = ServingEmbedder(
        OLD, lambda: (served[0], "spec"), lambda spec: NEW, check_every=3600.0
    )
    with embedder.pinned() as first:
        assert first is OLD
    served[0] = "new-32"  # the index switched; the embedder would look again in an hour
    with embedder.pinned() as second:
        assert second is OLD
    with pytest.raises(EmbeddingModelMismatchError), embedder.pinned():
        raise EmbeddingModelMismatchError("the index holds new-32")
    with embedder.pinned() as third:
        assert third is NEW and embedder.model_name == "new-32"


# a pasted note (long) and the reply to it; a short question and the reply to it
PASTE = "zebra crossing notes: " + " ".join(f"line {n} of the pasted minutes" for n in range(80))
QUESTION = "Where did you park the van?"


def chat_world(context_tokens: int) -> tuple[MemoryService, FakeGenerations, InMemoryRecordStore]:
    """A conversation stored when a turn before of any length was context (context_tokens 0)."""
    records = InMemoryRecordStore()
    generations = FakeGenerations(InMemorySearchIndex(), OLD.model_name)
    ports = local_ports(records, ServedIndex(generations), OLD, ScriptedReflector())  # type: ignore[arg-type]
    service = assemble(ports, Policy(context_tokens=context_tokens))
    turns = [
        ("user", PASTE),
        ("assistant", "Noted."),
        ("user", QUESTION),
        ("assistant", "By the mill."),
    ]
    for speaker, text in turns:
        command = StoreMemoryCommand(user_id="u1", content=text, session_id="s1", speaker=speaker)
        service.store(OWNER, command)
    return service, generations, records


def stored(records: InMemoryRecordStore, content: str):  # type: ignore[no-untyped-def]
    return next(m for m, _ in records.iter_all() if m.content == content)


def test_re_embedding_drops_a_turn_before_too_long_to_be_context() -> None:
    _, generations, records = chat_world(context_tokens=0)
    assert stored(records, "Noted.").context == PASTE[:600]  # cut at 600 characters
    assert stored(records, "By the mill.").context == QUESTION
    assert OLD.count_tokens(PASTE[:600]) <= 128 < OLD.count_tokens(PASTE)  # the cut fits

    result = ReEmbedMemories(records, NEW, generations, FixedClock(T0), context_tokens=128)()

    assert result["re_embedded"] == 4
    reply = stored(records, "Noted.")
    assert reply.context is None  # judged by the whole pasted turn, read from the session
    assert stored(records, "By the mill.").context == QUESTION  # a short turn before stays
    building = generations.served
    hits = building.keyword_search(SearchFilter(tenant_id="t1", user_id="u1"), "zebra", 10)
    assert [h.memory_id for h in hits] == [stored(records, PASTE).memory_id]
    vector = records.get_vectors("t1", [reply.memory_id])[reply.memory_id]
    assert np.allclose(vector.values, NEW.embed_documents(["Noted."])[0], atol=1e-5)


def test_re_embedding_keeps_every_turn_before_when_any_length_is_context() -> None:
    _, generations, records = chat_world(context_tokens=0)
    ReEmbedMemories(records, NEW, generations, FixedClock(T0), context_tokens=0)()
    assert stored(records, "Noted.").context == PASTE[:600]
