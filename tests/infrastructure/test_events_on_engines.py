"""Every sample in events/ invokes its real handler in-process on the AWS backend.

The backend is the local engines (``make services``): moto on 127.0.0.1:5055 for
DynamoDB, SQS and SSM, and the OpenSearch k-NN node on 127.0.0.1:9200. Nothing is
skipped when they are down: the tests fail with "start the local engines: make services".
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight.adapters.aws.opensearch_index import OpenSearchSearchIndex
from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import (
    build_aws_service,
    build_opensearch_index,
    configure,
    configure_stream_index,
)
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder
from tests.functional.conftest import (
    EVENTS_DIR,
    EXAMPLE_KEY,
    KEYS,
    ROUTES,
    LambdaContextStub,
    call,
    invoke,
    load_function,
)
from tests.functional.test_reflect_function import seed_fact
from tests.integration.dynamodb_local import fresh_table, moto_client, require_moto
from tests.services import OPENSEARCH_URL
from tests.services.opensearch_local import local_client

ASYNC = EVENTS_DIR / "async"


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Settings, MemoryService]]:
    """A fresh table in moto and a fresh index in OpenSearch behind the process service."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:5055",
    }.items():
        monkeypatch.setenv(name, value)
    client = moto_client()
    require_moto(client)  # RuntimeError: "... start the local engines: make services"
    local_client()  # pytest.fail: "... start the local engines: make services"
    settings = Settings(
        backend="aws",
        table=fresh_table(client, "hindsight-events"),
        opensearch_url=OPENSEARCH_URL,
        opensearch_index=f"hindsight-events-{uuid.uuid4().hex[:12]}",
        opensearch_auth="none",
        region="us-east-1",
        api_keys=json.dumps(KEYS),
    )
    embedder = HashingEmbedder()
    service = build_aws_service(
        settings, embedder=embedder, reflector=RuleBasedReflector(), dynamodb_client=client
    )
    stream_index = build_opensearch_index(settings, embedder.dimension)
    configure(settings, service)
    configure_stream_index(stream_index)
    yield settings, service
    configure()
    configure_stream_index(None)
    if isinstance(stream_index, OpenSearchSearchIndex):
        stream_index.drop_index()
    client.delete_table(TableName=settings.table)


def api_samples() -> list[Path]:
    return sorted(EVENTS_DIR.glob("*.json"))


@pytest.mark.parametrize("path", api_samples(), ids=lambda p: p.stem)
def test_api_sample_on_the_aws_backend(path: Path, engines: tuple[Settings, MemoryService]) -> None:
    _, service = engines
    event: dict[str, Any] = json.loads(path.read_text())
    stored = call(
        "POST", "/v1/memories", key=EXAMPLE_KEY, body={"user_id": "u1", "content": "喜欢靠窗的座位"}
    )
    assert stored.status == 201, stored.body
    params = event.get("pathParameters") or {}
    if "memory_id" in params:
        real = (
            seed_fact(service, "用户对花生过敏")
            if "semantic" in event["resource"]
            else stored.body["memory_id"]
        )
        event["path"] = event["path"].replace(params["memory_id"], real)
        params["memory_id"] = real
    reply = invoke(event, ROUTES[(event["httpMethod"], event["resource"])])
    assert reply.status in (200, 201), reply.body
    if event["resource"] != "/mcp":
        assert reply.body["status"] == "success", reply.body


def _index_sample(settings: Settings) -> tuple[OpenSearchSearchIndex, list[str], list[str]]:
    """Run the indexer on the stream sample; the memory ids it inserts and removes."""
    event = json.loads((ASYNC / "indexer_dynamodb_stream_batch.json").read_text())
    answer = load_function("indexer")(event, LambdaContextStub("indexer"))
    assert answer == {"batchItemFailures": []}
    index = build_opensearch_index(settings, HashingEmbedder().dimension)
    assert isinstance(index, OpenSearchSearchIndex)
    index.client.indices.refresh(index=settings.opensearch_index)

    def memory_ids(name: str, image: str) -> list[str]:
        return [
            r["dynamodb"][image]["memory_id"]["S"]
            for r in event["Records"]
            if r["eventName"] == name and r["dynamodb"]["Keys"]["sk"]["S"] == "M"
        ]

    return index, memory_ids("INSERT", "NewImage"), memory_ids("REMOVE", "OldImage")


def _indexed(index: OpenSearchSearchIndex, memory_id: str) -> bool:
    found = index.client.count(
        index=index.index_name, body={"query": {"ids": {"values": [f"acme:{memory_id}"]}}}
    )
    return bool(found["count"])


def test_indexer_stream_batch_sample(engines: tuple[Settings, MemoryService]) -> None:
    settings, _ = engines
    index, inserted, removed = _index_sample(settings)
    assert len(inserted) == 2 and len(removed) == 1
    kept = [m for m in inserted if m not in removed]
    assert [m for m in kept if _indexed(index, m)] == kept


def test_indexer_stream_batch_sample_removes_the_deleted_memory(
    engines: tuple[Settings, MemoryService],
) -> None:
    settings, _ = engines
    index, _, removed = _index_sample(settings)
    assert not any(_indexed(index, m) for m in removed)


def test_authorizer_sample_with_keys_in_ssm(engines: tuple[Settings, MemoryService]) -> None:
    load_function("authorizer")
    module = sys.modules["functional_fn_authorizer"]
    name = f"/hindsight/test/{uuid.uuid4().hex[:8]}/api-keys"
    ssm = moto_client("ssm")
    ssm.put_parameter(Name=name, Type="SecureString", Value=json.dumps(KEYS))
    module.configure_key_source(module.SsmKeyRingSource(name, ssm))
    try:
        event = json.loads((ASYNC / "authorizer_request.json").read_text())
        answer = module.lambda_handler(event, LambdaContextStub("authorizer"))
    finally:
        module.configure_key_source()
        ssm.delete_parameter(Name=name)
    assert answer["context"]["tenant_id"] == "acme"
    assert answer["context"]["key_id"] == "example"


def test_schedule_sample_fans_out_and_worker_sample_reflects(
    engines: tuple[Settings, MemoryService],
) -> None:
    _, service = engines
    for user in ("u1", "u2"):
        reply = call(
            "POST",
            "/v1/memories",
            key=EXAMPLE_KEY,
            body={"user_id": user, "content": "我对花生过敏"},
        )
        assert reply.status == 201, reply.body
    load_function("reflect_fanout")
    fanout = sys.modules["functional_fn_reflect_fanout"]
    sqs = moto_client("sqs")
    queue_url = sqs.create_queue(QueueName=f"hindsight-reflect-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    fanout.configure_queue(fanout.SqsReflectionJobQueue(queue_url, sqs))
    try:
        schedule = json.loads((ASYNC / "reflect_fanout_schedule.json").read_text())
        # a fresh table still holds the cursor of no earlier run: every user is found
        answer = fanout.lambda_handler(schedule, LambdaContextStub("reflect-fanout"))
    finally:
        fanout.configure_queue()
    assert answer["status"] == "success" and answer["queued"] == 2, answer
    received = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
    sqs.delete_queue(QueueUrl=queue_url)
    queued = sorted(
        (json.loads(m["Body"])["tenant_id"], json.loads(m["Body"])["user_id"]) for m in received
    )
    assert queued == [("acme", "u1"), ("acme", "u2")]

    batch = json.loads((ASYNC / "reflect_worker_sqs_batch.json").read_text())
    assert (
        sorted(
            (json.loads(r["body"])["tenant_id"], json.loads(r["body"])["user_id"])
            for r in batch["Records"]
        )
        == queued
    )
    answer = load_function("reflect_worker")(batch, LambdaContextStub("reflect-worker"))
    assert answer == {"batchItemFailures": []}
    from hindsight.core.usecases.reflect import REFLECTION_CURSOR

    for user in ("u1", "u2"):
        assert service.ports.records.get_cursor("acme", user, REFLECTION_CURSOR) is not None
