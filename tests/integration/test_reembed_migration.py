"""Changing the embedding model on the real backends: the embedded store (index generations
and a manifest) and AWS (DynamoDB on moto, a real OpenSearch node: versioned indexes behind
an alias). Retrieval answers all along; after the switch, from the new model's vectors."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hindsight.adapters.aws.opensearch_index import OpenSearchSearchIndex
from hindsight.adapters.aws.opensearch_index.migration import OpenSearchIndexMigration
from hindsight.adapters.embedded.generations import EmbeddedIndexMigration, GenerationFiles
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.adapters.embedders.serving import ServingEmbedder
from hindsight.adapters.system import SystemClock
from hindsight.adapters.writers import StreamRepairedWriter
from hindsight.bootstrap import assemble, build_embedded_service, local_ports
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import ConfigurationError
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.ports import Ports
from hindsight.core.service import MemoryService
from hindsight.core.usecases.pin import PatchMemoryCommand
from hindsight.core.usecases.reembed import ReEmbedMemories
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder, ScriptedReflector

OWNER = Principal(tenant_id="t1")
OLD = HashingEmbedder(dimension=64, model_name="old-64")
NEW = HashingEmbedder(dimension=32, model_name="new-32")
TEXTS = [f"note {n}: the red kite flew over hill {n}" for n in range(12)] + [
    "the passport is in the blue folder"
]
PASSPORT = "the passport is in the blue folder"


def found(service: MemoryService, query: str = "passport blue folder") -> list[str]:
    result = service.retrieve(OWNER, RetrieveCommand(user_id="u1", query=query, top_k=3))
    return [r.content for r in result.results]


def fill(service: MemoryService) -> list[str]:
    return [
        str(service.store(OWNER, StoreMemoryCommand(user_id="u1", content=t)).memory_id)
        for t in TEXTS
    ]


def fill_one(service: MemoryService, text: str) -> str:
    service.store(OWNER, StoreMemoryCommand(user_id="u1", content=text))
    return text


# --- embedded --------------------------------------------------------------------------------
@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[tuple[MemoryService, Settings]]:
    settings = Settings(backend="embedded", data_dir=tmp_path, embedder="old-spec")
    service = build_embedded_service(
        settings, embedder=OLD, reflector=ScriptedReflector(), embedders=lambda spec: NEW
    )
    yield service, settings
    service.ports.index.close()  # type: ignore[attr-defined]
    service.ports.records.close()  # type: ignore[attr-defined]


def migrate_embedded(
    data_dir: Path, progress: Any = None, embedder: Any = NEW, fail: bool = False
) -> dict[str, Any]:
    records = SqliteRecordStore(data_dir / "hindsight.db")
    migration = EmbeddedIndexMigration(data_dir)
    try:
        return ReEmbedMemories(records, embedder, migration, SystemClock(), "new-spec", batch=4)(
            progress=progress
        )
    finally:
        migration.close()
        records.close()


def test_embedded_switch_serves_old_vectors_until_complete(
    embedded: tuple[MemoryService, Settings], tmp_path: Path
) -> None:
    service, _ = embedded
    ids = fill(service)
    during: list[tuple[str, list[str]]] = []

    def progress(done: int, total: int) -> None:
        # the served index is still the first generation; an update re-indexes a record
        # that may already hold the new model's vector: accepted, its old vector kept
        memory = service.ports.records.get("t1", ids[0])
        assert memory is not None
        service.ports.writer.update("t1", [memory.model_copy(update={"category": f"c{done}"})])
        hits = found(service)
        during.append((service.ports.embedder.model_name, hits))

    result = migrate_embedded(tmp_path, progress)
    assert result["generation"] == "index-2" and result["previous_embedding_model"] == "old-64"
    assert all(model == "old-64" and hits[0] == PASSPORT for model, hits in during)
    manifest = GenerationFiles(tmp_path).manifest()
    assert manifest is not None and manifest["embedding_model"] == "new-32"
    assert manifest["embedder"] == "new-spec"

    # switched on disk; this server has not looked yet: it writes with the old model
    late = fill_one(service, "a late note about the harbour ferry")
    memory = service.ports.records.get("t1", ids[1])
    assert memory is not None
    changed = memory.model_copy(update={"category": "late", "updated_at": datetime.now(UTC)})
    service.ports.writer.update("t1", [changed])
    service.ports.index.retire_after = 0.0  # type: ignore[attr-defined]
    service.ports.index.follow(wait=True)  # type: ignore[attr-defined]
    assert service.ports.index.generation == "index-2"  # type: ignore[attr-defined]
    assert found(service, "late note harbour ferry")[0] == late  # repaired with the new model
    only_late = RetrieveCommand(user_id="u1", query="red kite hill", categories=["late"])
    assert [r.memory_id for r in service.retrieve(OWNER, only_late).results] == [ids[1]]
    assert found(service)[0] == PASSPORT
    assert service.ports.embedder.model_name == "new-32"
    assert service.ports.index.vectors.model == ("new-32", 32)  # type: ignore[attr-defined]
    assert not (tmp_path / "index").exists()  # the old generation is retired


def test_embedded_migration_resumes_after_a_kill(
    embedded: tuple[MemoryService, Settings], tmp_path: Path
) -> None:
    service, _ = embedded
    fill(service)

    def killed(done: int, total: int) -> None:
        if done >= 8:
            raise KeyboardInterrupt  # the process dies between two batches

    with pytest.raises(KeyboardInterrupt):
        migrate_embedded(tmp_path, killed)
    assert (tmp_path / "index-2" / "migration.json").exists()
    assert found(service)[0] == PASSPORT  # still the old generation
    result = migrate_embedded(tmp_path)
    assert result["resumed_after"] == 8
    assert result["re_embedded"] == len(TEXTS) - 8


def test_embedded_restart_with_another_model(tmp_path: Path) -> None:
    settings = Settings(backend="embedded", data_dir=tmp_path / "a", embedder="old-spec")
    first = build_embedded_service(settings, embedder=OLD, reflector=ScriptedReflector())
    fill(first)
    first.ports.index.close()  # type: ignore[attr-defined]
    first.ports.records.close()  # type: ignore[attr-defined]
    # a manifest was written at the first start: a new model configured still serves
    again = build_embedded_service(
        settings, embedder=NEW, reflector=ScriptedReflector(), embedders=lambda spec: OLD
    )
    assert again.ports.embedder.model_name == "old-64"
    assert found(again)[0] == PASSPORT
    again.ports.index.close()  # type: ignore[attr-defined]
    again.ports.records.close()  # type: ignore[attr-defined]
    # without a manifest (an index from before generations): a clear refusal
    (tmp_path / "a" / "index.json").unlink()
    with pytest.raises(ConfigurationError) as refused:
        build_embedded_service(settings, embedder=NEW, reflector=ScriptedReflector())
    assert "hindsight reindex --re-embed" in refused.value.message


# --- AWS -------------------------------------------------------------------------------------
@pytest.fixture
def aws() -> Iterator[tuple[MemoryService, Any, str]]:
    from tests.integration.dynamodb_local import drop_table, fresh_store
    from tests.services.opensearch_local import local_client

    client: Any = local_client()
    name = f"hindsight-test-{uuid.uuid4().hex[:12]}"
    legacy = OpenSearchSearchIndex(client, name, 64, refresh="wait_for")
    legacy.ensure_index()  # a deployment from before aliases: a concrete index
    store = fresh_store()
    migration = OpenSearchIndexMigration(client, name, refresh="wait_for")

    def serving() -> tuple[str, str] | None:
        from hindsight.adapters.aws.opensearch_index.migration import hindsight_meta

        meta = hindsight_meta(client, name)
        if meta is None or not meta[1].get("model"):
            return None
        return str(meta[1]["model"]), str(meta[1].get("embedder") or "old-spec")

    embedder = ServingEmbedder(OLD, serving, lambda spec: NEW, check_every=0.0)
    base = local_ports(store, legacy, embedder, ScriptedReflector())
    ports = Ports(
        records=store,
        index=legacy,
        embedder=embedder,
        reflector=base.reflector,
        clock=base.clock,
        ids=base.ids,
        writer=StreamRepairedWriter(store, legacy),
    )
    yield assemble(ports, Policy()), migration, name
    client.indices.delete(index=f"{name}*", ignore_unavailable=True)
    drop_table(store)


def test_aws_first_migration_moves_a_concrete_index_behind_an_alias(
    aws: tuple[MemoryService, Any, str],
) -> None:
    service, migration, name = aws
    ids = fill(service)
    client = migration.client
    during: list[tuple[str, list[str]]] = []

    def progress(done: int, total: int) -> None:
        service.patch_memory(OWNER, ids[0], PatchMemoryCommand(pinned=done % 2 == 0))
        hits = found(service)
        during.append((service.ports.embedder.model_name, hits))

    records = service.ports.records
    result = ReEmbedMemories(records, NEW, migration, SystemClock(), "new-spec", batch=4)(
        progress=progress
    )
    assert all(model == "old-64" and hits[0] == PASSPORT for model, hits in during)
    assert result["generation"] == f"{name}-v2"
    assert client.indices.exists_alias(name=name)
    assert sorted(client.indices.get_alias(name=name)) == [f"{name}-v2"]
    assert found(service)[0] == PASSPORT
    assert service.ports.embedder.model_name == "new-32"
    assert migration.serving_model() == "new-32"
    assert service.ports.index.count() == len(TEXTS)


def test_aws_alias_swap_is_atomic_for_readers(aws: tuple[MemoryService, Any, str]) -> None:
    service, migration, name = aws
    fill(service)
    records = service.ports.records
    ReEmbedMemories(records, NEW, migration, SystemClock(), "new-spec", batch=8)()
    client = migration.client
    failures: list[str] = []
    answered = [0]
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                hits = found(service)
                answered[0] += 1
                if not hits or hits[0] != PASSPORT:
                    failures.append(f"answered {hits}")
            except Exception as exc:
                failures.append(repr(exc))

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        third = OpenSearchIndexMigration(client, name, refresh="wait_for", grace_seconds=1.0)
        ReEmbedMemories(records, OLD, third, SystemClock(), "old-spec", batch=4)()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert failures == [] and answered[0] > 5
    assert sorted(client.indices.get_alias(name=name)) == [f"{name}-v3"]
    assert not client.indices.exists(index=f"{name}-v2")  # retired after the grace period
    assert found(service)[0] == PASSPORT
    assert service.ports.embedder.model_name == "old-64"


def test_aws_migration_resumes_after_a_kill(aws: tuple[MemoryService, Any, str]) -> None:
    service, migration, name = aws
    fill(service)

    def killed(done: int, total: int) -> None:
        if done >= 8:
            raise KeyboardInterrupt

    records = service.ports.records
    with pytest.raises(KeyboardInterrupt):
        ReEmbedMemories(records, NEW, migration, SystemClock(), "new-spec", batch=4)(
            progress=killed
        )
    assert not migration.client.indices.exists_alias(name=name)  # still the concrete index
    assert found(service)[0] == PASSPORT
    resumed = OpenSearchIndexMigration(migration.client, name, refresh="wait_for")
    result = ReEmbedMemories(records, NEW, resumed, SystemClock(), "new-spec", batch=4)()
    assert result["resumed_after"] == 8 and result["generation"] == f"{name}-v2"
    assert found(service)[0] == PASSPORT


def test_aws_stream_indexer_through_a_migration(aws: tuple[MemoryService, Any, str]) -> None:
    """The stream of the whole migration reaches the indexer (old images of the old model,
    the migration's writes of the new one); a memory written with the old model after the
    switch is skipped, not retried forever, and the repair writes it again."""
    from hindsight.bootstrap import configure_stream_index
    from hindsight.core.embedding import DEFAULT_CHUNK_SIZES, embed_memories
    from hindsight.core.usecases.reembed import repair_after_switch
    from tests.contract.builders import episode
    from tests.integration.aws_stream import LambdaContextStub, StreamReader, load_indexer

    service, migration, name = aws
    records: Any = service.ports.records
    reader = StreamReader(records.table_name)
    fill(service)
    ReEmbedMemories(records, NEW, migration, SystemClock(), "new-spec", batch=8)()
    late = episode("late-one", "a late note about the passport office", tenant_id="t1")
    records.put(late, embed_memories(OLD, [late], DEFAULT_CHUNK_SIZES)[0])  # not yet switched
    stream_index = OpenSearchSearchIndex(migration.client, name, 32, refresh="wait_for")
    configure_stream_index(stream_index)
    try:
        indexer = load_indexer()
        event = reader.lambda_event(reader.read())
        assert indexer.lambda_handler(event, LambdaContextStub()) == {"batchItemFailures": []}
        assert stream_index.count() == len(TEXTS)  # every memory; the late one skipped
        assert repair_after_switch(records, stream_index, NEW, SystemClock()) == 1
        event = reader.lambda_event(reader.read())
        assert indexer.lambda_handler(event, LambdaContextStub()) == {"batchItemFailures": []}
    finally:
        configure_stream_index(None)
    assert stream_index.count() == len(TEXTS) + 1
    assert found(service, "late note passport office")[0] == late.content


def test_aws_keep_old_index(aws: tuple[MemoryService, Any, str]) -> None:
    service, migration, name = aws
    fill(service)
    records = service.ports.records
    ReEmbedMemories(records, NEW, migration, SystemClock(), "new-spec", batch=16)()
    kept = OpenSearchIndexMigration(migration.client, name, refresh="wait_for", keep_old=True)
    ReEmbedMemories(records, OLD, kept, SystemClock(), "old-spec", batch=16)()
    client = migration.client
    assert sorted(client.indices.get_alias(name=name)) == [f"{name}-v3"]
    assert client.indices.exists(index=f"{name}-v2")  # kept, no longer served
    assert found(service)[0] == PASSPORT
