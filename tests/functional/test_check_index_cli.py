"""``hindsight check-index`` on an embedded data directory: it agrees on a healthy store,
names the memory stored but not indexed and the document left for a memory that is gone
(exit 1), scopes itself to one user, and the next service start repairs what it found."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hindsight import bootstrap
from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore
from hindsight.bootstrap import build_embedded_service
from hindsight.cli import app
from hindsight.core.commands import BatchItem, StoreBatchCommand
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder, ScriptedReflector

OWNER = Principal(tenant_id="local")


def open_service(data_dir: Path) -> MemoryService:
    settings = Settings(backend="embedded", data_dir=data_dir)
    return build_embedded_service(
        settings, embedder=HashingEmbedder(), reflector=ScriptedReflector()
    )


def close(service: MemoryService) -> None:
    service.ports.index.close()  # type: ignore[attr-defined]
    service.ports.records.close()  # type: ignore[attr-defined]


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    service = open_service(tmp_path)
    for user, count in (("u1", 5), ("u2", 2)):
        items = [BatchItem(content=f"{user} remembers kite number {n}") for n in range(count)]
        service.store_batch(OWNER, StoreBatchCommand(user_id=user, items=items))
    close(service)
    bootstrap.configure()  # the command builds its own stores from the data directory
    yield tmp_path
    bootstrap.configure()


def check(data_dir: Path, *options: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["--data-dir", str(data_dir), "check-index", *options])
    return result.exit_code, json.loads(result.stdout)


def ids_of(data_dir: Path, user: str) -> list[str]:
    records = SqliteRecordStore(data_dir / "hindsight.db")
    try:
        return sorted(m.memory_id for m, _ in records.iter_all("local") if m.user_id == user)
    finally:
        records.close()


def test_a_healthy_store_agrees(data_dir: Path) -> None:
    code, body = check(data_dir)
    assert code == 0, body
    assert body["agrees"] is True and body["status"] == "success"
    assert (body["stored"], body["searchable"], body["indexed"]) == (7, 7, 7)
    assert body["missing"] == body["extra"] == body["orphans"] == []


def test_disagreements_are_named_and_exit_1(data_dir: Path) -> None:
    unindexed, gone = ids_of(data_dir, "u1")[:2]
    index = EmbeddedSearchIndex(data_dir / "index")
    index.delete("local", [unindexed])  # stored, never indexed (a crash between the two)
    index.close()
    records = SqliteRecordStore(data_dir / "hindsight.db")
    records.delete("local", gone)  # a document left behind for a memory that is gone
    records.close()

    code, body = check(data_dir)
    assert code == 1
    assert body["agrees"] is False and body["status"] == "disagree"
    assert (body["stored"], body["searchable"], body["indexed"]) == (6, 6, 6)
    assert body["missing"] == [{"tenant_id": "local", "memory_id": unindexed}]
    assert body["extra"] == body["orphans"] == [{"tenant_id": "local", "memory_id": gone}]

    code, body = check(data_dir, "--user", "u2")  # the damage is u1's: u2 agrees
    assert code == 0 and (body["tenant_id"], body["user_id"]) == ("local", "u2")
    assert body["indexed"] == 2
    code, body = check(data_dir, "--user", "u1")
    assert code == 1 and body["missing_count"] == body["orphan_count"] == 1

    close(open_service(data_dir))  # a start brings the index in line with the records
    bootstrap.configure()
    code, body = check(data_dir)
    assert code == 0 and body["indexed"] == 6, body


def test_a_directory_without_data_is_refused(tmp_path: Path) -> None:
    bootstrap.configure()
    result = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "nothing"), "check-index"])
    assert result.exit_code == 2
    words = " ".join(result.output.replace("│", " ").split())
    assert "holds no Hindsight data (no hindsight.db)" in words
