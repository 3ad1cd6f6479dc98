"""Secrets at the door on every backend: a secret in stored content never reaches the record
store, the search index or the embedder (redact: typed placeholders, reported; refuse: 422,
nothing stored; off: as sent), through store, batch store, long memories and documents."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.core.commands import (
    ListMemoriesCommand,
    RetrieveCommand,
    StoreBatchCommand,
    StoreMemoryCommand,
)
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.secrets import SecretsRefusedError
from hindsight.core.service import MemoryService
from hindsight.core.usecases.documents import StoreDocumentCommand
from tests.contract.conftest import SERVICE_BACKENDS, service_on
from tests.fakes import HashingEmbedder

AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
CARD = "4111 1111 1111 1111"
OWNER = Principal(tenant_id="t1")
REFUSING = Principal(tenant_id="t1", key_id="strict", secrets="refuse")
OPEN = Principal(tenant_id="t1", key_id="open", secrets="off")


class RecordingEmbedder(HashingEmbedder):
    """The hashing embedder, keeping every text it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed_documents(texts)


@pytest.fixture(params=SERVICE_BACKENDS)
def world(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[MemoryService, RecordingEmbedder]]:
    embedder = RecordingEmbedder()
    with service_on(request.param, tmp_path, embedder, RuleBasedReflector(), Policy()) as built:
        yield built, embedder


def contents(service: MemoryService, user_id: str = "u1") -> list[str]:
    page = service.list_memories(OWNER, ListMemoriesCommand(user_id=user_id, limit=50))
    return [str(m["content"]) for m in page.results]


def found(service: MemoryService, query: str) -> list[str]:
    result = service.retrieve(OWNER, RetrieveCommand(user_id="u1", query=query))
    return [r.content for r in result.results]


def test_store_redacts_a_key_in_chinese_text_everywhere(
    world: tuple[MemoryService, RecordingEmbedder],
) -> None:
    service, embedder = world
    outcome = service.store(
        OWNER, StoreMemoryCommand(user_id="u1", content=f"我的AWS密钥是 {AWS_KEY_ID}，别告诉别人")
    )
    assert outcome.status == "success"
    assert [r.model_dump() for r in outcome.redacted or []] == [
        {"type": "aws_access_key", "count": 1}
    ]
    assert contents(service) == ["我的AWS密钥是 [REDACTED:aws_access_key]，别告诉别人"]
    assert embedder.seen and all(AWS_KEY_ID not in text for text in embedder.seen)
    assert all(AWS_KEY_ID not in text for text in found(service, f"AWS密钥 {AWS_KEY_ID}"))
    memory = service.get_memory(OWNER, outcome.memory_id)["memory"]
    assert AWS_KEY_ID not in str(memory)


def test_batch_reports_per_item_and_cards_in_chinese_sentences(
    world: tuple[MemoryService, RecordingEmbedder],
) -> None:
    service, embedder = world
    batch = StoreBatchCommand.model_validate(
        {
            "user_id": "u1",
            "items": [
                {"content": f"我的信用卡号是{CARD}，有效期12/28"},
                {"content": "明天下午三点和王经理开会"},
                {
                    "content": "deployed the service",
                    "agent_action": "used postgres://app:hunter2x@db.internal/prod",
                },
            ],
        }
    )
    first, plain, third = service.store_batch(OWNER, batch)
    assert [r.model_dump() for r in first.redacted or []] == [{"type": "card_number", "count": 1}]
    assert plain.redacted is None
    assert [r.model_dump() for r in third.redacted or []] == [{"type": "password", "count": 1}]
    stored = set(contents(service))
    assert "我的信用卡号是[REDACTED:card_number]，有效期12/28" in stored
    assert not any(CARD in text or "hunter2x" in text for text in embedder.seen)
    actions = [
        service.get_memory(OWNER, o.memory_id)["memory"].get("agent_action") for o in (third,)
    ]
    assert actions == ["used postgres://app:[REDACTED:password]@db.internal/prod"]


def test_refuse_stores_nothing_of_the_batch(
    world: tuple[MemoryService, RecordingEmbedder],
) -> None:
    service, embedder = world
    batch = StoreBatchCommand.model_validate(
        {"user_id": "u1", "items": [{"content": "fine"}, {"content": f"key {AWS_KEY_ID}"}]}
    )
    with pytest.raises(SecretsRefusedError) as refused:
        service.store_batch(REFUSING, batch)
    assert "items[1]" in refused.value.message and "aws_access_key" in refused.value.message
    assert contents(service) == [] and embedder.seen == []


def test_off_stores_as_sent(world: tuple[MemoryService, RecordingEmbedder]) -> None:
    service, _ = world
    outcome = service.store(OPEN, StoreMemoryCommand(user_id="u1", content=f"card {CARD}"))
    assert outcome.redacted is None
    assert contents(service) == [f"card {CARD}"]


def test_a_long_memory_and_a_document_are_screened(
    world: tuple[MemoryService, RecordingEmbedder],
) -> None:
    service, embedder = world
    pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
    filler = " ".join(f"line {n} of the deployment log, all fine." for n in range(400))
    long = service.store(OWNER, StoreMemoryCommand(user_id="u1", content=f"{filler}\n{pem}\n"))
    assert [r.model_dump() for r in long.redacted or []] == [{"type": "private_key", "count": 1}]
    document = service.store_document(
        OWNER,
        StoreDocumentCommand(
            user_id="u1",
            file_name="notes.md",
            data=f"# Notes\n\nThe CI token is {AWS_KEY_ID} for now.\n".encode(),
        ),
    )
    assert [r.model_dump() for r in document.redacted or []] == [
        {"type": "aws_access_key", "count": 1}
    ]
    assert not any("MIIEvQIBADAN" in t or AWS_KEY_ID in t for t in embedder.seen)
    assert not any("MIIEvQIBADAN" in t or AWS_KEY_ID in t for t in contents(service))
    with pytest.raises(SecretsRefusedError, match=r"notes2\.md"):
        service.store_document(
            REFUSING,
            StoreDocumentCommand(user_id="u1", file_name="notes2.md", data=pem.encode()),
        )
