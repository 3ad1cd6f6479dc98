"""``hindsight document add`` end to end, in process, on the in-memory backend."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hindsight.bootstrap import build_memory_service, configure
from hindsight.cli import app
from hindsight.core.commands import ListMemoriesCommand
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder
from tests.functional.document_files import docx_bytes, pdf_bytes

LOCAL = Principal(tenant_id="local")


@pytest.fixture
def service() -> Iterator[MemoryService]:
    settings = Settings(backend="memory", max_document_bytes=50_000)
    built = build_memory_service(settings, embedder=HashingEmbedder())
    configure(settings, built)
    yield built
    configure()


def add(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["document", "add", *args])
    return result.exit_code, result.stdout, result.stderr


def documents(service: MemoryService, user_id: str = "u1") -> list[dict]:
    return service.list_memories(LOCAL, ListMemoriesCommand(user_id=user_id)).results


def test_a_pdf_is_added_then_updated_then_unchanged(service: MemoryService, tmp_path: Path) -> None:
    path = tmp_path / "contract.pdf"
    path.write_bytes(pdf_bytes([["Termination needs ninety days notice."]]))
    code, out, err = add(str(path), "--user-id", "u1")
    assert code == 0, err
    assert out.startswith("stored mem_doc_")
    assert "contract.pdf, application/pdf" in out

    path.write_bytes(pdf_bytes([["Termination needs thirty days notice."]]))
    code, out, _ = add(str(path), "--user-id", "u1", "--json")
    assert code == 0
    assert json.loads(out)["status"] == "updated"
    code, out, _ = add(str(path), "--user-id", "u1", "--json")
    assert json.loads(out)["status"] == "unchanged"
    (stored,) = documents(service)
    assert "thirty days" in stored["content"]


def test_document_id_and_metadata_options(service: MemoryService, tmp_path: Path) -> None:
    path = tmp_path / "notes-v2.docx"
    path.write_bytes(docx_bytes("Notes", ["Ship on Friday."]))
    code, out, err = add(
        str(path),
        "--user-id",
        "u1",
        "--document-id",
        "weekly-notes",
        "--metadata",
        '{"team": "platform"}',
        "--category",
        "meeting",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["document_id"] == "weekly-notes"
    (stored,) = documents(service)
    assert stored["category"] == "meeting"
    assert stored["metadata"]["team"] == "platform"
    assert stored["metadata"]["document"]["file_name"] == "notes-v2.docx"


def test_refusals_are_one_line_with_what_to_do(service: MemoryService, tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"word " * 20_000)
    code, _, err = add(str(big), "--user-id", "u1")
    assert code == 1
    assert "the limit is 50,000 bytes (HINDSIGHT_MAX_DOCUMENT_BYTES)" in err
    sheet = tmp_path / "budget.xlsx"
    sheet.write_bytes(b"PK\x03\x04")
    code, _, err = add(str(sheet), "--user-id", "u1")
    assert code == 1 and "the supported types are Markdown (.md)" in err
    code, _, err = add(str(tmp_path / "missing.pdf"), "--user-id", "u1")
    assert code == 2 and "does not exist" in err
    code, _, err = add(str(sheet), "--user-id", "u1", "--metadata", "[1]")
    assert code == 2 and "must be a JSON object" in err
    code, _, err = add(str(sheet))
    assert code == 2 and "--user-id" in err
    assert documents(service) == []


def test_import_file_adds_a_document_and_needs_exactly_one_source(
    service: MemoryService, tmp_path: Path
) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# Meeting notes\n\nThe launch moves to March.\n", encoding="utf-8")
    imported = CliRunner().invoke(app, ["import", "--file", str(path), "--user-id", "u1"])
    assert imported.exit_code == 0, imported.stderr
    assert imported.stdout.startswith("stored mem_doc_")
    again = CliRunner().invoke(app, ["import", "--file", str(path), "--user-id", "u1", "--json"])
    assert json.loads(again.stdout)["status"] == "unchanged"
    (stored,) = documents(service)
    assert "launch moves to March" in stored["content"]
    neither = CliRunner().invoke(app, ["import", "--user-id", "u1"])
    both = CliRunner().invoke(app, ["import", str(path), "--file", str(path), "--user-id", "u1"])
    for refused in (neither, both):
        assert refused.exit_code == 2 and "not both" in refused.stderr


def test_a_long_document_shows_its_chunks_embedded_on_a_terminal_only(
    service: MemoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "long.md"
    path.write_text(" ".join(f"word{i % 89} note{i}." for i in range(2500)), encoding="utf-8")
    monkeypatch.setenv("FORCE_COLOR", "1")  # stderr taken for a terminal
    code, out, err = add(str(path), "--user-id", "u1")
    assert code == 0, err
    assert "storing long.md" in err and "chunks embedded" in err
    assert len(documents(service)) == 1
    chunks = out.split(" chunks;")[0].rsplit(", ", 1)[-1]
    assert f"{chunks}/{chunks}" in err  # the bar reached every chunk
    code, out, err = add(str(path), "--user-id", "u2", "--json")
    assert code == 0 and "chunks embedded" not in err
