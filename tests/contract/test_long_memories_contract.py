"""Long memories through the whole service, on every backend pair (in-memory, embedded
SQLite, AWS DynamoDB + OpenSearch): stored whole, searched by chunks, returned once with
where they matched, deleted with every chunk, refused past the limit, deduplicated.

The embedder is the test HashingEmbedder with small chunks (64 tokens), so a 100,000
character memory is hundreds of chunks without the cost of a real model.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight.core.commands import (
    RetrieveCommand,
    StoreBatchCommand,
    StoreMemoryCommand,
)
from hindsight.core.errors import PayloadTooLargeError
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.service import MemoryService
from tests.contract.conftest import SERVICE_BACKENDS, service_on
from tests.fakes import HashingEmbedder, ScriptedReflector

PRINCIPAL = Principal(tenant_id="t1")
POLICY = Policy(chunk_tokens=64, chunk_overlap_tokens=8, max_content_chars=100_000)
NEEDLE = "The locker combination at the Zephyrine climbing gym is 4471."
_WORDS = """
    report server request latency budget meeting agenda quarterly revenue customer deploy
    cluster module invoice schedule review draft contract clause vendor pipeline storage
    backup network release ticket incident summary metric policy
""".split()  # noqa: SIM905


def filler(chars: int, seed: int) -> str:
    """Varied English-like sentences and paragraphs, ``chars`` characters long."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 16)))
        sentence = sentence.capitalize() + "."
        parts.append(sentence + ("\n\n" if rng.random() < 0.15 else " "))
        size += len(parts[-1])
    return "".join(parts)[:chars]


def long_text(total: int = 100_000, needle_at: int = 97_000, seed: int = 1) -> str:
    head = filler(needle_at, seed)
    return head + " " + NEEDLE + " " + filler(total - needle_at - len(NEEDLE) - 2, seed + 1)


@pytest.fixture(params=SERVICE_BACKENDS)
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    with service_on(
        request.param, tmp_path, HashingEmbedder(), ScriptedReflector(), POLICY
    ) as built:
        yield built


def store(service: MemoryService, content: str, user_id: str = "u1") -> str:
    outcome = service.store(PRINCIPAL, StoreMemoryCommand(user_id=user_id, content=content))
    assert outcome.memory_id is not None
    return outcome.memory_id


def retrieve(service: MemoryService, query: str, **options: object) -> list:
    command = RetrieveCommand(user_id="u1", query=query, **options)  # type: ignore[arg-type]
    return service.retrieve(PRINCIPAL, command).results


def test_a_100k_memory_is_found_by_a_phrase_near_its_end_once_with_its_span(
    service: MemoryService,
) -> None:
    text = long_text()
    memory_id = store(service, text)
    store(service, "The user had pasta for lunch on Monday.")
    stored = service.get_memory(PRINCIPAL, memory_id)
    assert stored["memory"]["content"] == text  # whole, not truncated

    results = retrieve(service, "Zephyrine climbing gym locker combination")
    assert [r.memory_id for r in results].count(memory_id) == 1
    top = results[0]
    assert top.memory_id == memory_id
    assert top.content == text
    needle_at = text.index(NEEDLE)
    assert top.highlights, "a chunked memory says where it matched"
    first = top.highlights[0]
    assert first.start <= needle_at < first.end
    assert "4471" in first.excerpt and len(first.excerpt) <= 320
    assert text[first.excerpt_start : first.excerpt_end].strip() == first.excerpt
    assert top.why["chunk"]["chunk"] == first.chunk

    cut = retrieve(service, "Zephyrine climbing gym locker combination", max_content_chars=500)[0]
    assert cut.content_truncated and cut.content_span is not None
    assert len(cut.content) <= 502 and "4471" in cut.content
    start, end = cut.content_span
    assert cut.content.strip("…") == text[start:end]


def test_deleting_a_long_memory_removes_every_chunk(service: MemoryService) -> None:
    memory_id = store(service, long_text())
    other = store(service, "Zephyrine is the name of the user's cat.")
    service.delete_memory(PRINCIPAL, memory_id)
    assert [r.memory_id for r in retrieve(service, "Zephyrine climbing gym locker")] == [other]
    for query in ("quarterly revenue invoice vendor", "backup storage network"):
        assert memory_id not in [r.memory_id for r in retrieve(service, query)]


def test_content_over_the_limit_is_refused_and_nothing_is_stored(service: MemoryService) -> None:
    with pytest.raises(PayloadTooLargeError, match="HINDSIGHT_MAX_CONTENT_CHARS") as refused:
        store(service, "x" * 100_001)
    assert "100,000" in refused.value.message
    batch = StoreBatchCommand(
        user_id="u1",
        items=[{"content": "a short memory about tea"}, {"content": "y" * 100_001}],  # type: ignore[list-item]
    )
    with pytest.raises(PayloadTooLargeError, match=r"items\[1\]\.content"):
        service.store_batch(PRINCIPAL, batch)
    assert retrieve(service, "short memory about tea") == []


def test_a_batch_mixes_long_and_short_memories(service: MemoryService) -> None:
    chinese = "会议纪要：" + "。".join(f"第{i}项议题讨论了预算和进度" for i in range(3000))
    chinese += "。另外，用户的女儿的钢琴老师姓欧阳。"
    batch = StoreBatchCommand(
        user_id="u1",
        items=[  # type: ignore[list-item]
            {"content": long_text(60_000, 30_000, seed=7)},
            {"content": "The user prefers aisle seats on long flights."},
            {"content": chinese},
        ],
    )
    outcomes = service.store_batch(PRINCIPAL, batch)
    assert [o.status for o in outcomes] == ["success"] * 3
    ids = [o.memory_id for o in outcomes]
    assert retrieve(service, "Zephyrine gym locker combination")[0].memory_id == ids[0]
    assert retrieve(service, "aisle seats on flights")[0].memory_id == ids[1]
    found = retrieve(service, "钢琴老师姓什么")[0]
    assert found.memory_id == ids[2]
    assert "欧阳" in found.highlights[0].excerpt


def test_the_same_long_content_is_a_duplicate(service: MemoryService) -> None:
    text = long_text(50_000, 40_000, seed=3)
    first = service.store(PRINCIPAL, StoreMemoryCommand(user_id="u1", content=text))
    again = service.store(PRINCIPAL, StoreMemoryCommand(user_id="u1", content=text))
    assert first.status == "success"
    assert (again.status, again.reason, again.memory_id) == (
        "skipped",
        "duplicate",
        first.memory_id,
    )
    changed = service.store(PRINCIPAL, StoreMemoryCommand(user_id="u1", content=text + " More."))
    assert changed.status == "success"
