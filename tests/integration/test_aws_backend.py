"""The whole service on the AWS backend: DynamoDB on moto and the real OpenSearch node.

The retrieval cases run on DynamoDB + OpenSearch (the local node of ``make services``)
and are compared with the embedded backend (SQLite + embedded index) on the same
embedding model. The failure cases wrap an in-process index whose writes or reads fail,
behind the same ``ReadYourWritesIndex`` the AWS bootstrap uses.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from hindsight.adapters.aws.read_your_writes import ReadYourWritesIndex
from hindsight.adapters.memory import InMemorySearchIndex
from hindsight.bootstrap import (
    build_aws_service,
    build_embedded_service,
    build_embedder,
    configure_stream_index,
)
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import UnavailableError
from hindsight.core.models import IndexDocument, Principal
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.integration.aws_stream import LambdaContextStub, StreamReader, load_indexer
from tests.integration.dynamodb_local import moto_client, require_moto
from tests.services.opensearch_local import drop, fresh_index

PRINCIPAL = Principal(tenant_id="t1")
CASES = [
    (
        "zh-user",
        "用户对花生过敏",
        ["今天天气很好", "用户喜欢看科幻电影", "下周三要去北京出差", "用户每天早上跑步"],
        "饮食禁忌",
    ),
    (
        "en-user",
        "The user is allergic to peanuts",
        [
            "The weather is lovely today",
            "The user enjoys science fiction films",
            "Business trip to Berlin next Wednesday",
            "The user goes running every morning",
        ],
        "what food must the user avoid?",
    ),
]


@pytest.fixture(scope="module")
def embedder():  # type: ignore[no-untyped-def]
    return build_embedder(Settings())


def aws_settings() -> Settings:
    return Settings(
        backend="aws", table=f"hindsight-aws-{uuid.uuid4().hex[:10]}", region="us-east-1"
    )


@pytest.fixture
def aws_table() -> Iterator[tuple[Settings, object]]:
    client = moto_client()
    require_moto(client)
    settings = aws_settings()
    yield settings, client
    client.delete_table(TableName=settings.table)


def store(service: MemoryService, user: str, content: str) -> str:
    outcome = service.store(PRINCIPAL, StoreMemoryCommand(user_id=user, content=content))
    assert outcome.memory_id is not None
    return outcome.memory_id


def top_contents(service: MemoryService, user: str, query: str, k: int = 3) -> list[str]:
    result = service.retrieve(PRINCIPAL, RetrieveCommand(user_id=user, query=query, top_k=k))
    assert not result.partial, "retrieve ran out of its time budget (engines overloaded?)"
    return [r.content for r in result.results]


def test_retrieval_cases_give_the_embedded_backends_top_results(
    aws_table: tuple[Settings, object], embedder: object, tmp_path: Path
) -> None:
    settings, client = aws_table
    opensearch = fresh_index(dimension=embedder.dimension)  # type: ignore[attr-defined]
    aws = build_aws_service(settings, embedder=embedder, index=opensearch, dynamodb_client=client)
    embedded = build_embedded_service(Settings(data_dir=tmp_path), embedder=embedder)
    assert client.describe_table(TableName=settings.table)["Table"]["TableName"]  # created
    for user, target, others, query in CASES:
        for service in (aws, embedded):
            store(service, user, target)
            for content in others:
                store(service, user, content)
        on_aws = top_contents(aws, user, query)
        assert on_aws[0] == target
        assert on_aws == top_contents(embedded, user, query)
    assert opensearch.count("t1") == 2 * (1 + len(CASES[0][2]))  # really in OpenSearch
    drop(opensearch)


def test_a_question_about_someone_unknown_is_empty_on_both_backends(
    aws_table: tuple[Settings, object], embedder: object, tmp_path: Path
) -> None:
    """core/retrieval/subjects.py on DynamoDB + OpenSearch: a name is looked up in the keyword index
    and among the best hits' speakers, as on the embedded backend."""
    settings, client = aws_table
    opensearch = fresh_index(dimension=embedder.dimension)  # type: ignore[attr-defined]
    aws = build_aws_service(settings, embedder=embedder, index=opensearch, dynamodb_client=client)
    embedded = build_embedded_service(Settings(data_dir=tmp_path), embedder=embedder)
    turns = [
        # the names only as speakers: found among the best hits' speakers
        ("Jon", "I lost my job at the bank, so I am opening a dance studio"),
        ("Gina", "I painted a sunset over the lake last weekend"),
    ]
    for service in (aws, embedded):
        for speaker, content in turns:
            command = StoreMemoryCommand(user_id="u", content=content, speaker=speaker)
            service.store(PRINCIPAL, command)
        unknown = service.retrieve(
            PRINCIPAL, RetrieveCommand(user_id="u", query="What did Caroline paint?")
        )
        assert unknown.results == [] and unknown.unknown_names == ["Caroline"]
        known = service.retrieve(
            PRINCIPAL,
            RetrieveCommand(user_id="u", query="What did Gina paint?"),
        )
        assert known.unknown_names == [] and known.results
    drop(opensearch)


class WritesFailIndex(InMemorySearchIndex):
    """An index whose writes fail (OpenSearch down for writes) until ``healthy``."""

    def __init__(self) -> None:
        super().__init__()
        self.healthy = False
        self.reads_fail = False

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        if not self.healthy:
            raise UnavailableError("connection refused")
        super().upsert(documents)

    def keyword_search(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if self.reads_fail:
            raise UnavailableError("connection refused")
        return super().keyword_search(*args, **kwargs)


def test_a_store_while_the_index_fails_is_kept_found_and_repaired_by_the_stream(
    aws_table: tuple[Settings, object], embedder: object
) -> None:
    settings, client = aws_table
    opensearch = WritesFailIndex()
    service = build_aws_service(
        settings, embedder=embedder, index=opensearch, dynamodb_client=client
    )
    reader = StreamReader(settings.table)
    memory_id = store(service, "u1", "The user is allergic to peanuts")

    # kept: DynamoDB is the source of truth, nothing is undone
    assert service.ports.records.get("t1", memory_id) is not None
    assert isinstance(service.ports.index, ReadYourWritesIndex)
    assert service.ports.index.failed_writes == 1
    # read-your-writes: this process finds it although the index never got it
    assert top_contents(service, "u1", "peanut allergy", 1) == ["The user is allergic to peanuts"]
    assert opensearch.count("t1") == 0
    # another container (no recent-writes buffer) finds it once the stream indexer ran
    other = build_aws_service(settings, embedder=embedder, index=opensearch, dynamodb_client=client)
    assert top_contents(other, "u1", "peanut allergy", 1) == []
    opensearch.healthy = True
    configure_stream_index(opensearch)
    try:
        records = reader.read()
        result = load_indexer().lambda_handler(reader.lambda_event(records), LambdaContextStub())
    finally:
        configure_stream_index(None)
    assert result == {"batchItemFailures": []}
    assert top_contents(other, "u1", "peanut allergy", 1) == ["The user is allergic to peanuts"]


def test_retrieve_with_the_index_down_is_a_clear_unavailable_error(
    aws_table: tuple[Settings, object], embedder: object
) -> None:
    settings, client = aws_table
    opensearch = WritesFailIndex()
    opensearch.reads_fail = True
    service = build_aws_service(
        settings, embedder=embedder, index=opensearch, dynamodb_client=client
    )
    store(service, "u1", "The user is allergic to peanuts")
    with pytest.raises(UnavailableError, match="stored memories are safe in DynamoDB"):
        service.retrieve(PRINCIPAL, RetrieveCommand(user_id="u1", query="peanuts"))


def test_without_create_resources_a_missing_table_is_reported(embedder: object) -> None:
    settings = Settings(backend="aws", table="never-created", create_resources=False)
    service = build_aws_service(
        settings, embedder=embedder, index=InMemorySearchIndex(), dynamodb_client=moto_client()
    )
    with pytest.raises(UnavailableError, match="never-created does not exist"):
        store(service, "u1", "hello")
