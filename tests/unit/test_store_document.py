"""StoreDocument with fakes: the converter is a fake, the stores are the in-memory ones.

What the use case decides itself: the memory it builds, new / updated / unchanged, when it
embeds (and when it does not), the limits, and what a race with another upload does.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.errors import (
    ConflictError,
    ForbiddenError,
    PayloadTooLargeError,
    UnreadableDocumentError,
    UnsupportedDocumentError,
)
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.ports import ConvertedDocument, NewRecord
from hindsight.core.service import MemoryService
from hindsight.core.usecases.documents import (
    StoreDocumentCommand,
    clean_text,
    document_memory_id,
)
from tests.fakes import FixedClock, HashingEmbedder, ScriptedReflector, SequentialIds

PRINCIPAL = Principal(tenant_id="acme")


class FakeConverter:
    """Reads every file as UTF-8 text, except the types it is told to refuse."""

    media_types = ("text/plain",)

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []

    def convert(self, data: bytes, file_name: str, media_type: str | None) -> ConvertedDocument:
        self.calls.append((file_name, media_type))
        if file_name.endswith(".xlsx"):
            raise UnsupportedDocumentError("spreadsheets are not supported; send text/plain")
        return ConvertedDocument(data.decode("utf-8"), "text/plain", "fake 1.0")


class CountingEmbedder(HashingEmbedder):
    """Counts the texts it embeds; with ``barrier``, every call waits for the others."""

    def __init__(self, barrier: threading.Barrier | None = None) -> None:
        super().__init__(window_tokens=64)
        self.texts = 0
        self.barrier = barrier

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        if self.barrier is not None:
            self.barrier.wait(timeout=10)
        return super().embed_documents(texts)


def build(
    embedder: HashingEmbedder | None = None, policy: Policy | None = None, writer=None
) -> tuple[MemoryService, FixedClock]:
    clock = FixedClock()
    records, index = InMemoryRecordStore(), InMemorySearchIndex()
    ports = local_ports(
        records,
        index,
        embedder or CountingEmbedder(),
        ScriptedReflector(),
        clock=clock,
        ids=SequentialIds(),
        writer=writer(records, index) if writer else None,
    )
    ports = type(ports)(**{**ports.__dict__, "documents": FakeConverter()})
    return assemble(ports, policy or Policy(chunk_tokens=32, chunk_overlap_tokens=4)), clock


def command(text: str, **fields: object) -> StoreDocumentCommand:
    values: dict[str, object] = {"user_id": "u1", "file_name": "notes.txt", **fields}
    return StoreDocumentCommand(data=text.encode("utf-8"), **values)  # type: ignore[arg-type]


def sentences(phrase: str, count: int = 40) -> str:
    body = [f"Line {i} of the meeting notes covers budgets and hiring." for i in range(count)]
    body[count // 2] = phrase
    return " ".join(body)


def test_a_new_document_is_one_memory_with_its_description() -> None:
    service, clock = build()
    outcome = service.store_document(PRINCIPAL, command("Ship on Friday.", metadata={"k": 1}))
    assert outcome.status == "success"
    assert outcome.memory_id == document_memory_id("acme", "u1", "global", "notes.txt")
    stored = service.ports.records.get("acme", outcome.memory_id)
    assert stored is not None
    assert stored.content == "Ship on Friday."
    assert stored.category == "document"
    assert stored.occurred_at == clock.now()
    assert stored.metadata == {
        "k": 1,
        "document": {
            "document_id": "notes.txt",
            "file_name": "notes.txt",
            "content_type": "text/plain",
            "bytes": 15,
            "converter": "fake 1.0",
        },
    }


def test_changed_text_replaces_content_and_every_chunk_vector() -> None:
    service, clock = build()
    first = service.store_document(PRINCIPAL, command(sentences("The door code is 1234.")))
    assert first.chunks and first.chunks > 1
    created = clock.now()
    clock.advance(hours=2)
    second = service.store_document(PRINCIPAL, command(sentences("The door code is 9876.", 10)))
    assert (second.status, second.memory_id) == ("updated", first.memory_id)
    stored = service.ports.records.get("acme", first.memory_id)
    assert stored is not None and "9876" in stored.content and "1234" not in stored.content
    assert stored.created_at == created and stored.updated_at == clock.now()
    assert stored.occurred_at == clock.now()  # a new version happened now
    vector = service.ports.records.get_vectors("acme", [first.memory_id])[first.memory_id]
    assert max(end for _, end in vector.spans) == len(stored.content)
    assert service.ports.index.count("acme") == 1


def test_the_same_text_again_is_unchanged_without_embedding() -> None:
    embedder = CountingEmbedder()
    service, clock = build(embedder)
    first = service.store_document(PRINCIPAL, command("Standup at 9:30."))
    embedded = embedder.texts
    clock.advance(hours=1)
    again = service.store_document(PRINCIPAL, command("Standup at 9:30."))
    assert (again.status, again.memory_id) == ("unchanged", first.memory_id)
    assert embedder.texts == embedded
    stored = service.ports.records.get("acme", first.memory_id)
    assert stored is not None and stored.updated_at == stored.created_at


def test_new_fields_with_the_same_text_update_without_embedding() -> None:
    embedder = CountingEmbedder()
    service, clock = build(embedder)
    first = service.store_document(PRINCIPAL, command("Standup at 9:30."))
    occurred = service.ports.records.get("acme", first.memory_id).occurred_at  # type: ignore[union-attr]
    embedded = embedder.texts
    clock.advance(hours=1)
    outcome = service.store_document(PRINCIPAL, command("Standup at 9:30.", category="meeting"))
    assert outcome.status == "updated"
    assert embedder.texts == embedded  # the stored vectors still fit the text
    stored = service.ports.records.get("acme", first.memory_id)
    assert stored is not None and stored.category == "meeting"
    assert stored.occurred_at == occurred and stored.updated_at == clock.now()


def test_a_lost_race_to_create_replaces_what_the_winner_stored() -> None:
    """Every upload sees no memory, embeds, and tries to add: one add wins, the others
    replace it. One memory, holding one of the texts whole."""
    uploads = 4
    embedder = CountingEmbedder(threading.Barrier(uploads))
    service, _ = build(embedder)
    outcomes: list = []
    errors: list[BaseException] = []

    def upload(n: int) -> None:
        try:
            text = sentences(f"Version {n} says the launch is on day {n}.")
            outcomes.append(service.store_document(PRINCIPAL, command(text)))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=upload, args=(n,)) for n in range(uploads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    assert sorted(o.status for o in outcomes) == ["success"] + ["updated"] * (uploads - 1)
    assert len({o.memory_id for o in outcomes}) == 1
    assert service.ports.index.count("acme") == 1
    page = service.ports.records.list("acme", "u1", _all(), limit=10)
    assert len(page.items) == 1
    assert any(
        page.items[0].content == sentences(f"Version {n} says the launch is on day {n}.")
        for n in range(uploads)
    )


def _all():  # type: ignore[no-untyped-def]
    from hindsight.core.models import ListQuery

    return ListQuery()


def test_an_add_that_meets_an_existing_memory_falls_back_to_replace() -> None:
    """The race without threads: the store says 'exists' once, as after a concurrent add."""
    from hindsight.adapters.writers import CompensatingWriter

    class RacingWriter(CompensatingWriter):
        raced = False

        def add(self, records: Sequence[NewRecord], dedup_window_seconds: float = 0.0):  # type: ignore[no-untyped-def]
            if not self.raced:
                type(self).raced = True
                super().add(
                    [
                        NewRecord(
                            records[0].memory.model_copy(update={"content": "theirs"}),
                            records[0].vector,
                        )
                    ]
                )
                raise ConflictError("memory already exists")
            return super().add(records, dedup_window_seconds)

    service, _ = build(writer=RacingWriter)
    outcome = service.store_document(PRINCIPAL, command("ours"))
    assert outcome.status == "updated"
    stored = service.ports.records.get("acme", outcome.memory_id)
    assert stored is not None and stored.content == "ours"


def test_deleted_then_stored_again_is_a_new_memory_with_the_same_id() -> None:
    service, _ = build()
    first = service.store_document(PRINCIPAL, command("v1"))
    service.delete_memory(PRINCIPAL, first.memory_id)
    again = service.store_document(PRINCIPAL, command("v1"))
    assert (again.status, again.memory_id) == ("success", first.memory_id)


def test_limits_and_refusals_write_nothing() -> None:
    service, _ = build(policy=Policy(max_document_bytes=1_024, max_content_chars=1_000))
    with pytest.raises(PayloadTooLargeError, match=r"1,024 bytes \(HINDSIGHT_MAX_DOCUMENT_BYTES\)"):
        service.store_document(PRINCIPAL, command("x" * 1_025))
    with pytest.raises(PayloadTooLargeError, match=r"1,000 \(HINDSIGHT_MAX_CONTENT_CHARS\)"):
        service.store_document(PRINCIPAL, command("word " * 201))
    with pytest.raises(UnreadableDocumentError, match="empty"):
        service.store_document(PRINCIPAL, command(""))
    with pytest.raises(UnreadableDocumentError, match="no text"):
        service.store_document(PRINCIPAL, command("\n\x0c \t\n"))
    with pytest.raises(UnsupportedDocumentError):
        service.store_document(PRINCIPAL, command("a,b", file_name="budget.xlsx"))
    reader = Principal(tenant_id="acme", write_scopes=frozenset({"calendar"}))
    with pytest.raises(ForbiddenError):
        service.store_document(reader, command("hello", scope="global"))
    assert service.ports.index.count("acme") == 0


def test_the_memory_id_depends_on_tenant_user_scope_and_document_id() -> None:
    base = document_memory_id("acme", "u1", "global", "spec.md")
    assert base == document_memory_id("acme", "u1", "global", "spec.md")
    assert base.startswith("mem_doc_") and len(base) <= 128
    others = {
        document_memory_id("globex", "u1", "global", "spec.md"),
        document_memory_id("acme", "u2", "global", "spec.md"),
        document_memory_id("acme", "u1", "work", "spec.md"),
        document_memory_id("acme", "u1", "global", "spec.md "),
        document_memory_id("acme", "u1g", "lobal", "spec.md"),
    }
    assert base not in others and len(others) == 5


def test_file_names_lose_their_folders_and_document_ids_default_to_them() -> None:
    assert command("x", file_name="C:\\Users\\ann\\spec.md").file_name == "spec.md"
    assert command("x", file_name="/tmp/a/b/notes.txt").key == "notes.txt"
    assert command("x", document_id=" contract ").key == "contract"
    with pytest.raises(ValueError, match="control characters"):
        command("x", document_id="a\nb")
    with pytest.raises(ValueError, match="reserved"):
        command("x", metadata={"document": {}})


def test_clean_text_keeps_the_text_a_reader_sees() -> None:
    raw = "Title\r\n\r\n\r\n\r\nPage one.   \x0cPage two.\x00\x07\n\n\n\n  End  "
    assert clean_text(raw) == "Title\n\nPage one.\n\nPage two.\n\n  End"
