"""Stored-vector reuse by the learned reflector on both real record stores (SQLite, and
DynamoDB on moto) with the bundled embedder: a one-statement episode stored without a
session is not embedded again at reflection, one stored in a session (its vector holds the
turn before) is, and the facts are those of a reflection that embeds everything."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight.adapters.memory import InMemorySearchIndex
from hindsight.adapters.reflectors.learned import LearnedReflector
from hindsight.bootstrap import build_aws_service, build_embedded_service, build_embedder
from hindsight.core.commands import ReflectCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.integration.dynamodb_local import moto_client, require_moto

PRINCIPAL = Principal(tenant_id="t1")
ALONE = ["I'm a nurse at the children's hospital.", "我养了一只猫，叫馒头。"]
IN_SESSION = "I volunteer at the animal shelter."


class RecordingEmbedder:
    """The real embedder, recording the passages the reflector asks for."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.passages: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.passages.extend(texts)
        return self.inner.embed_documents(texts)  # type: ignore[no-any-return]


class EmbedsEverything:
    """A fresh learned reflector behind an adapter that takes no stored vectors."""

    def __init__(self, embedder: Any) -> None:
        self.inner = LearnedReflector(embedder)
        self.label = self.inner.label

    def reflect(self, user_id: str, episodes: Any, existing: Any) -> Any:
        return self.inner.reflect(user_id, episodes, existing)

    def summarize(self, episodes: Any) -> Any:
        return self.inner.summarize(episodes)


@pytest.fixture(scope="module")
def embedder() -> Any:
    return build_embedder(Settings())


@pytest.fixture(params=["embedded", "aws"])
def backend(
    request: pytest.FixtureRequest, embedder: Any, tmp_path: Path
) -> Iterator[tuple[MemoryService, RecordingEmbedder]]:
    recording = RecordingEmbedder(embedder)
    reflector = LearnedReflector(recording)  # type: ignore[arg-type]
    if request.param == "embedded":
        service = build_embedded_service(
            Settings(data_dir=tmp_path), embedder=embedder, reflector=reflector
        )
        yield service, recording
        return
    client = moto_client()
    require_moto(client)
    settings = Settings(
        backend="aws", table=f"hindsight-reuse-{uuid.uuid4().hex[:10]}", region="us-east-1"
    )
    service = build_aws_service(
        settings,
        embedder=embedder,
        reflector=reflector,
        index=InMemorySearchIndex(),
        dynamodb_client=client,
    )
    yield service, recording
    client.delete_table(TableName=settings.table)


def test_stored_vectors_are_reused_where_they_are_a_statements_own(
    backend: tuple[MemoryService, RecordingEmbedder],
) -> None:
    service, recording = backend
    for text in ALONE:
        service.store(PRINCIPAL, StoreMemoryCommand(user_id="u1", content=text))
    for speaker, text in (("assistant", "Do you have any hobbies?"), ("user", IN_SESSION)):
        command = StoreMemoryCommand(user_id="u1", content=text, session_id="s1", speaker=speaker)
        service.store(PRINCIPAL, command)  # a reply: its vector holds the turn before
    recording.passages.clear()
    dry = service.reflect(PRINCIPAL, ReflectCommand(user_id="u1", dry_run=True))
    assert not set(ALONE) & set(recording.passages)
    assert IN_SESSION in recording.passages
    facts = sorted(f["content"] for f in dry.created)
    assert any("nurse" in f for f in facts) and any("猫" in f for f in facts)
    assert any("animal shelter" in f for f in facts)

    service.use_cases.reflect.reflector = EmbedsEverything(recording.inner)  # type: ignore[assignment]
    again = service.reflect(PRINCIPAL, ReflectCommand(user_id="u1", dry_run=True))
    assert sorted(f["content"] for f in again.created) == facts
