"""Export a user from the embedded store, import into the AWS backend (moto + the real
OpenSearch node) and back: every memory, link, status and count equal, retrieval equal."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.bootstrap import assemble, build_aws_service, local_ports
from hindsight.core.commands import ReflectCommand, RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import InvalidRequestError, NotFoundError
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder, ScriptedReflector
from tests.integration.dynamodb_local import moto_client, require_moto
from tests.services.opensearch_local import drop, fresh_index

OWNER = Principal(tenant_id="acme")
EMBEDDER = HashingEmbedder()


def embedded(path: Path, reflector: ScriptedReflector | None = None) -> MemoryService:
    ports = local_ports(
        SqliteRecordStore(path / "hindsight.db"),
        EmbeddedSearchIndex(path / "index"),
        EMBEDDER,
        reflector or ScriptedReflector(),
    )
    return assemble(ports, Policy())


@pytest.fixture
def aws() -> Iterator[MemoryService]:
    client = moto_client()
    require_moto(client)
    settings = Settings(
        backend="aws", table=f"hs-export-{uuid.uuid4().hex[:10]}", region="us-east-1"
    )
    index = fresh_index(dimension=EMBEDDER.dimension)
    yield build_aws_service(settings, embedder=EMBEDDER, index=index, dynamodb_client=client)
    drop(index)
    client.delete_table(TableName=settings.table)


def seeded(path: Path) -> MemoryService:
    reflector = ScriptedReflector()
    reflector.when("peanuts", "The user is allergic to peanuts", "constraint", "high")
    reflector.when("Lisbon", "The user lives in Lisbon", "fact", "medium")
    service = embedded(path, reflector)

    def store(content: str, **fields: Any) -> str:
        command = StoreMemoryCommand(user_id="u1", content=content, **fields)
        return str(service.store(OWNER, command).memory_id)

    store("I am allergic to peanuts", session_id="s1")
    store("I moved to Lisbon last year", session_id="s1")
    store("my passport number is in the drawer", pinned=True)
    old = store("the hike on the ridge was windy")
    store("我喜欢靠窗的座位")
    facts = service.reflect(OWNER, ReflectCommand(user_id="u1")).created
    service.approve(OWNER, facts[0]["memory_id"])
    service.retrieve(OWNER, RetrieveCommand(user_id="u1", query="peanuts"))
    service.flush_hits()
    records = service.ports.records
    memory = records.get("acme", old)
    assert memory is not None
    records.update(memory.model_copy(update={"archived_at": memory.created_at}))
    service.ports.index.delete("acme", [old])
    return service


def dump(service: MemoryService) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in service.export_user(OWNER, "u1")]
    assert lines[0]["format"] == "hindsight-export" and lines[-1]["end"] is True
    return sorted((line["memory"] for line in lines[1:-1]), key=lambda m: m["memory_id"])


def ranked(service: MemoryService, query: str) -> list[str]:
    result = service.retrieve(OWNER, RetrieveCommand(user_id="u1", query=query, top_k=5))
    return [r.memory_id for r in result.results]


def test_embedded_to_aws_and_back_keeps_everything(aws: MemoryService, tmp_path: Path) -> None:
    source = seeded(tmp_path / "source")
    original = dump(source)
    assert {m["kind"] for m in original} == {"episodic", "semantic"}
    assert any(m["archived_at"] for m in original) and any(m["pinned"] for m in original)
    assert any(m["hit_count"] for m in original)
    assert any(m.get("status") == "approved" for m in original)

    assert aws.import_export(OWNER, source.export_user(OWNER, "u1"))["imported"] == 7
    assert dump(aws) == original
    back = embedded(tmp_path / "back")
    assert back.import_export(OWNER, aws.export_user(OWNER, "u1"))["imported"] == 7
    assert dump(back) == original
    for query in ("peanuts", "Lisbon", "windy ridge", "靠窗"):
        assert ranked(aws, query) == ranked(source, query) == ranked(back, query), query
    # the archived one stayed out of search everywhere; the reflection cursor came along
    archived = next(m["memory_id"] for m in original if m["archived_at"])
    assert archived not in ranked(aws, "windy ridge") + ranked(back, "windy ridge")
    assert back.reflect(OWNER, ReflectCommand(user_id="u1")).episodes_considered == 0


def test_an_import_resumes_and_refuses_what_is_not_an_export(tmp_path: Path) -> None:
    source = seeded(tmp_path / "source")
    lines = list(source.export_user(OWNER, "u1"))
    target = embedded(tmp_path / "target")
    with pytest.raises(InvalidRequestError, match="ends before its end line"):
        target.import_export(OWNER, lines[:4])
    resumed = target.import_export(OWNER, lines)
    assert (resumed["imported"], resumed["skipped_existing"]) == (7 - 3, 3)
    with pytest.raises(InvalidRequestError, match="hindsight-export"):
        target.import_export(OWNER, ['{"format": "other"}\n'])
    with pytest.raises(InvalidRequestError, match="line 2 is not JSON"):
        target.import_export(OWNER, [lines[0], "{oops\n"])


def test_an_erased_user_is_not_exportable(tmp_path: Path) -> None:
    source = seeded(tmp_path / "source")
    source.erase_user(OWNER, "u1")
    with pytest.raises(NotFoundError, match="erased"):
        source.export_user(OWNER, "u1")
