"""Documents on every backend pair (in-memory, embedded SQLite, AWS DynamoDB + OpenSearch):
storing a document_id again replaces the memory and every chunk in the record store and
the index, and concurrent first uploads of one document make one memory.

The backends are those of ``test_long_memories_contract`` (HashingEmbedder, 64-token
chunks): a 100,000-character document is hundreds of chunks.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from hindsight.bootstrap import rewire
from hindsight.core.commands import ListMemoriesCommand, RetrieveCommand
from hindsight.core.models import SearchFilter
from hindsight.core.service import MemoryService
from hindsight.core.usecases.documents import DocumentOutcome, StoreDocumentCommand
from tests.contract import test_long_memories_contract as long_memories
from tests.contract.test_long_memories_contract import PRINCIPAL, filler
from tests.fakes import HashingEmbedder

service = long_memories.service  # the fixture: one service per backend pair

OLD = "The spare key to the Zephyrine workshop is under the blue flowerpot."
NEW = "The spare key to the Zephyrine workshop now hangs in the red cabinet."


def document(needle: str, seed: int, total: int = 100_000) -> str:
    at = total - 3_000
    return filler(at, seed) + " " + needle + " " + filler(total - at - len(needle) - 2, seed + 1)


def upload(service: MemoryService, text: str, **fields: object) -> DocumentOutcome:
    values: dict[str, object] = {"user_id": "u1", "file_name": "handbook.md", **fields}
    command = StoreDocumentCommand(data=text.encode("utf-8"), **values)  # type: ignore[arg-type]
    return service.store_document(PRINCIPAL, command)


def retrieve(service: MemoryService, query: str) -> list:
    return service.retrieve(PRINCIPAL, RetrieveCommand(user_id="u1", query=query)).results


def listed(service: MemoryService) -> list[dict]:
    return service.list_memories(PRINCIPAL, ListMemoriesCommand(user_id="u1")).results


def index_hits(service: MemoryService, words: str) -> list[str]:
    """What the index itself finds by keyword (no record store in between)."""
    search = SearchFilter(tenant_id=PRINCIPAL.tenant_id, user_id="u1")
    return [hit.memory_id for hit in service.ports.index.keyword_search(search, words, 10)]


def test_a_new_version_replaces_the_memory_and_all_its_chunks(service: MemoryService) -> None:
    first = upload(service, document(OLD, seed=1))
    upload(service, "Lunch on Monday was pasta.", file_name="lunch.md")
    assert first.status == "success" and first.chunks and first.chunks > 100
    hits = retrieve(service, "Zephyrine workshop blue flowerpot")
    assert hits[0].memory_id == first.memory_id
    assert index_hits(service, "flowerpot") == [first.memory_id]

    second = upload(service, document(NEW, seed=5))
    assert (second.status, second.memory_id) == ("updated", first.memory_id)
    assert [m["memory_id"] for m in listed(service)].count(first.memory_id) == 1
    assert len(listed(service)) == 2

    assert index_hits(service, "flowerpot") == []  # no chunk of the old text is left
    assert index_hits(service, "cabinet") == [first.memory_id]
    for result in retrieve(service, "Zephyrine workshop blue flowerpot"):
        assert "flowerpot" not in result.content
        assert all("flowerpot" not in h.excerpt for h in result.highlights)
    top = retrieve(service, "Zephyrine workshop red cabinet")[0]
    assert top.memory_id == first.memory_id
    assert "red cabinet" in top.highlights[0].excerpt
    assert top.content == document(NEW, seed=5).strip()


def test_the_same_document_again_is_unchanged(service: MemoryService) -> None:
    text = document(OLD, seed=2, total=20_000)
    first = upload(service, text)
    again = upload(service, text)
    assert (again.status, again.memory_id) == ("unchanged", first.memory_id)
    assert len(listed(service)) == 1


class BarrierEmbedder(HashingEmbedder):
    """Holds every embedding call until all uploads have reached it: each of them has
    looked for the document and found none, so all of them race to create it."""

    def __init__(self, parties: int) -> None:
        super().__init__()
        self.barrier = threading.Barrier(parties)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) > 1 or texts[0]:  # not the neutral vector
            self.barrier.wait(timeout=30)
        return super().embed_documents(texts)


def test_concurrent_first_uploads_make_one_memory(service: MemoryService) -> None:
    uploads = 3
    racing = rewire(service, embedder=BarrierEmbedder(uploads))
    outcomes: list[DocumentOutcome] = []
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            outcomes.append(upload(racing, document(f"Version {n} of the key rule.", n, 5_000)))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(uploads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(o.status for o in outcomes) == ["success"] + ["updated"] * (uploads - 1)
    assert len({o.memory_id for o in outcomes}) == 1
    assert [m["memory_id"] for m in listed(racing)] == [outcomes[0].memory_id]
    found = retrieve(racing, "Version of the key rule")
    assert [r.memory_id for r in found].count(outcomes[0].memory_id) == 1
