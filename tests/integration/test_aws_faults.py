"""Faults on the AWS backend: the real OpenSearch node and moto, each behind a proxy the test
owns and breaks (``fault_proxy``), the shared engines themselves never stopped.

- OpenSearch stopped while storing and retrieving: stores are acknowledged and kept in
  DynamoDB, a retrieve answers 503 with ``Retry-After``, and the stream indexer makes the
  stored memories searchable once OpenSearch is back.
- The stream indexer failing mid-batch: the failed records are reported (partial batch
  failure), their batch lands in the dead-letter queue as Lambda's on-failure record, and
  ``hindsight replay-dlq`` re-applies it once OpenSearch is back (and keeps it while not).
- DynamoDB throttling: botocore's retries ride out a short burst; a lasting one answers 503
  with ``Retry-After``, never a 500, and writes nothing.

The HTTP answers come from the real Lambda handlers through the template-driven gateway
in this process. Lambda's event source mapping is played by the test: it hands the
indexer the stream records moto recorded and, once the retries are spent, sends the
on-failure record AWS documents (``DDBStreamBatchInfo``) to the queue.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from hindsight.adapters.aws.dynamodb_record_store import default_client
from hindsight.adapters.aws.opensearch_index import OpenSearchSearchIndex, build_opensearch_client
from hindsight.bootstrap import (
    build_aws_service,
    configure,
    configure_stream_index,
    configure_stream_payloads,
)
from hindsight.cli.app import app as cli_app
from hindsight.core.models import IndexDocument, SearchFilter
from hindsight.gateway.dispatch import Dispatcher
from hindsight.gateway.in_process import InProcessTransport
from hindsight.gateway.template import find_template, routes_from_template, stage_name
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder
from tests.integration.aws_stream import LambdaContextStub, StreamReader, load_indexer
from tests.integration.dynamodb_local import MOTO_URL, REGION, moto_client, require_moto
from tests.integration.fault_proxy import TcpFaultProxy, ThrottlingHttpProxy
from tests.services import OPENSEARCH_URL
from tests.services.opensearch_local import local_client

USER = "u1"


@dataclass
class Backend:
    """The AWS service wired through the two proxies, and the HTTP client onto it."""

    settings: Settings
    http: httpx.Client
    opensearch: TcpFaultProxy
    dynamodb: ThrottlingHttpProxy
    index: OpenSearchSearchIndex  # through the OpenSearch proxy
    direct: OpenSearchSearchIndex  # the same index, straight to the node (to check it)

    def store(self, content: str) -> httpx.Response:
        return self.http.post("/v1/memories", json={"user_id": USER, "content": content})

    def retrieve(self, query: str) -> httpx.Response:
        return self.http.post("/v1/retrieve", json={"user_id": USER, "query": query})

    def indexed(self, text: str) -> list[str]:
        """Ids OpenSearch itself finds for ``text`` (no read-your-writes buffer)."""
        hits = self.direct.keyword_search(SearchFilter(tenant_id="t1", user_id=USER), text, 20)
        return sorted(hit.memory_id for hit in hits)


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    require_moto(moto_client())
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL": MOTO_URL,
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "ERROR",
    }.items():
        monkeypatch.setenv(name, value)
    opensearch = TcpFaultProxy(OPENSEARCH_URL).start()
    dynamodb = ThrottlingHttpProxy(MOTO_URL).start()
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamodb.url)
    name = f"hindsight-faults-{uuid.uuid4().hex[:10]}"
    settings = Settings(
        backend="aws",
        table=name,
        region=REGION,
        opensearch_url=opensearch.url,
        opensearch_index=name,
        allow_anonymous=True,
        anonymous_tenant="t1",
    )
    embedder = HashingEmbedder()
    client = build_opensearch_client(opensearch.url, "none", timeout=5)
    index = OpenSearchSearchIndex(client, name, embedder.dimension, refresh="wait_for")
    index.ensure_index()
    direct = OpenSearchSearchIndex(local_client(), name, embedder.dimension, refresh="wait_for")
    service = build_aws_service(
        settings,
        embedder=embedder,
        index=index,
        dynamodb_client=default_client(REGION),  # the adapter's own retry configuration
        s3_client=moto_client("s3"),
    )
    configure(settings, service)
    template = find_template(None)
    dispatcher = Dispatcher(routes_from_template(template), stage_name(template))
    http = httpx.Client(transport=InProcessTransport(dispatcher), base_url="http://127.0.0.1")
    try:
        yield Backend(settings, http, opensearch, dynamodb, index, direct)
    finally:
        configure()
        configure_stream_index(None)
        configure_stream_payloads(None)
        http.close()
        opensearch.stop()
        dynamodb.close()
        direct.drop_index()
        direct.client.close()
        moto_client().delete_table(TableName=name)


def assert_unavailable(response: httpx.Response, *words: str) -> str:
    """A 503 with Retry-After and the error body; never a trace."""
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) >= 1
    body = response.json()
    assert body["status"] == "error"
    assert "Traceback" not in response.text
    for word in words:
        assert word in body["message"], body["message"]
    return str(body["message"])


def run_indexer(backend: Backend, records: list[dict[str, Any]], reader: StreamReader) -> Any:
    configure_stream_index(backend.index)
    return load_indexer().lambda_handler(reader.lambda_event(records), LambdaContextStub())


# --- OpenSearch stopped -------------------------------------------------------------------
def test_opensearch_stopped_while_storing_and_retrieving(backend: Backend) -> None:
    reader = StreamReader(backend.settings.table)
    first = backend.store("The user is allergic to peanuts").json()["memory_id"]
    assert backend.indexed("peanuts") == [first]

    with backend.opensearch.down():
        stored = backend.store("The user moved to Lisbon in March")
        assert stored.status_code == 201, stored.text  # acknowledged
        second = stored.json()["memory_id"]
        kept = backend.http.get(f"/v1/memories/{second}")
        assert kept.status_code == 200, kept.text
        assert kept.json()["memory"]["content"].endswith("Lisbon in March"), kept.text
        message = assert_unavailable(backend.retrieve("Lisbon"), "stored memories are safe")
        assert "retry" in message
        refused = backend.opensearch.connections

    assert backend.indexed("Lisbon") == []  # OpenSearch never got it
    # back up: the stream indexer applies what DynamoDB recorded, the direct write's repair
    result = run_indexer(backend, reader.read(), reader)
    assert result == {"batchItemFailures": []}
    assert backend.indexed("Lisbon") == [second]
    found = backend.retrieve("Lisbon")
    assert found.status_code == 200
    assert [r["memory_id"] for r in found.json()["results"]][:1] == [second]
    assert backend.opensearch.connections > refused  # served through the proxy again


# --- the stream indexer failing mid-batch, the dead-letter queue and its replay ------------
class StopsAfter:
    """Stops the OpenSearch proxy after ``writes`` upserts: the node dies mid-batch."""

    def __init__(self, index: OpenSearchSearchIndex, proxy: TcpFaultProxy, writes: int) -> None:
        self.index, self.proxy, self.left = index, proxy, writes

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        self.index.upsert(documents)
        self.left -= 1
        if self.left == 0:
            self.proxy.stop()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.index, name)


def on_failure_record(
    records: list[dict[str, Any]], stream_arn: str, from_sequence: str
) -> dict[str, Any]:
    """The invocation record Lambda sends to the on-failure destination once a batch's
    retries are spent: it names the records (shard, sequence range), it does not hold them."""
    failed = [r for r in records if int(r["dynamodb"]["SequenceNumber"]) >= int(from_sequence)]
    return {
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:indexer",
            "condition": "RetryAttemptsExhausted",
            "approximateInvokeCount": 6,
        },
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST"},
        "version": "1.0",
        "timestamp": datetime.now(UTC).isoformat(),
        "DDBStreamBatchInfo": {
            "shardId": failed[0]["_shard_id"],
            "startSequenceNumber": failed[0]["dynamodb"]["SequenceNumber"],
            "endSequenceNumber": failed[-1]["dynamodb"]["SequenceNumber"],
            "approximateArrivalOfFirstRecord": datetime.now(UTC).isoformat(),
            "approximateArrivalOfLastRecord": datetime.now(UTC).isoformat(),
            "batchSize": len(failed),
            "streamArn": stream_arn,
        },
    }


def read_with_shards(reader: StreamReader) -> list[dict[str, Any]]:
    """The stream's records, each noting its shard (the on-failure record names it)."""
    shards = reader.client.describe_stream(StreamArn=reader.stream_arn)["StreamDescription"]
    records = []
    for shard in shards["Shards"]:
        iterator = reader.client.get_shard_iterator(
            StreamArn=reader.stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        page = reader.client.get_records(ShardIterator=iterator, Limit=1000)
        records += [{**r, "_shard_id": shard["ShardId"]} for r in page["Records"]]
    return records


def replay_dlq(queue_url: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        cli_app, ["replay-dlq", "--queue-url", queue_url, "--json"], catch_exceptions=False
    )
    return result.exit_code, json.loads(result.stdout)


def memory_id_of(record: dict[str, Any]) -> str | None:
    image = record["dynamodb"].get("NewImage") or {}
    if image.get("item_type", {}).get("S") != "memory":
        return None
    return str(image["memory_id"]["S"])


def test_indexer_failing_mid_batch_reaches_the_dlq_and_replay_applies_it(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_BACKEND", "aws")
    monkeypatch.setenv("HINDSIGHT_TABLE", backend.settings.table)
    monkeypatch.setenv("HINDSIGHT_OPENSEARCH_URL", backend.opensearch.url)
    monkeypatch.setenv("HINDSIGHT_OPENSEARCH_INDEX", backend.settings.opensearch_index)
    sqs = moto_client("sqs")
    queue_url = sqs.create_queue(QueueName=f"indexer-dlq-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    reader = StreamReader(backend.settings.table)

    with backend.opensearch.down():  # the direct writes fail: only the stream can index
        ids = [backend.store(f"trip number {n} to Porto").json()["memory_id"] for n in range(4)]
    records = read_with_shards(reader)
    memory_records = [r for r in records if memory_id_of(r)]
    assert [memory_id_of(r) for r in memory_records] == ids

    # OpenSearch dies after the indexer applied two memories of the batch
    configure_stream_index(StopsAfter(backend.index, backend.opensearch, writes=2))  # type: ignore[arg-type]
    event = reader.lambda_event([{k: v for k, v in r.items() if k != "_shard_id"} for r in records])
    response = load_indexer().lambda_handler(event, LambdaContextStub())
    failed = [f["itemIdentifier"] for f in response["batchItemFailures"]]
    assert failed[0] == memory_records[2]["dynamodb"]["SequenceNumber"]
    assert backend.indexed("Porto") == sorted(ids[:2])
    # Lambda's retries fail alike while it is down; then the on-failure record is sent
    retry = reader.lambda_event(
        [
            {k: v for k, v in r.items() if k != "_shard_id"}
            for r in records
            if int(r["dynamodb"]["SequenceNumber"]) >= int(failed[0])
        ]
    )
    assert load_indexer().lambda_handler(retry, LambdaContextStub())["batchItemFailures"]
    message = on_failure_record(records, reader.stream_arn, failed[0])
    sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(message))
    # the CLI writes the stream indexer's index (``bootstrap.get_stream_index``): OpenSearch
    # through the proxy, not the e5-sized index the settings would build for the bundled model
    configure_stream_index(backend.index)

    # still down: nothing is lost, the message stays for the next run
    code, report = replay_dlq(queue_url)
    assert code == 1 and report["status"] == "error"
    assert "run `hindsight replay-dlq` again" in report["message"]

    backend.opensearch.start()
    sqs.send_message(QueueUrl=queue_url, MessageBody="not a failure record")
    started = time.monotonic()
    code, report = replay_dlq(queue_url)
    assert code == 0, report
    assert report["replayed"] == 1
    assert report["memories_indexed"] == 2
    assert report["kept"] == 1 and "not a stream indexer failure record" in report["why_kept"][0]
    assert backend.indexed("Porto") == sorted(ids)
    assert time.monotonic() - started < 30
    left = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    assert left.get("Messages", []) == []  # the applied one deleted, the kept ones invisible
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "1"  # kept for the operator
    sqs.delete_queue(QueueUrl=queue_url)


def test_replay_dlq_refuses_the_embedded_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_BACKEND", "embedded")
    result = CliRunner().invoke(cli_app, ["replay-dlq", "--queue-url", "http://q"])
    assert result.exit_code == 1
    assert "HINDSIGHT_BACKEND=aws" in " ".join(result.stderr.split())


# --- DynamoDB throttling ------------------------------------------------------------------
def test_dynamodb_throttling_is_retried_then_a_503(backend: Backend) -> None:
    kept = backend.store("The user prefers window seats").json()["memory_id"]

    for code in ("ProvisionedThroughputExceededException", "ThrottlingException"):
        before = backend.dynamodb.throttled
        backend.dynamodb.throttle(2, code)  # a short burst: botocore's backoff rides it out
        ok = backend.store(f"The user drinks green tea ({code})")
        assert ok.status_code == 201, ok.text
        assert backend.dynamodb.throttled - before == 2

    # lasting: the retries run out (the failing request was sent max_attempts = 4 times,
    # backed off in between), then a 503 that says to retry, never a 500
    backend.dynamodb.throttle(1_000, "ThrottlingException")
    before = backend.dynamodb.throttled
    refused = backend.store("The user speaks Portuguese")
    assert_unavailable(refused, "throttling", "ThrottlingException", "retry")
    assert refused.headers["retry-after"] == "2"
    assert backend.dynamodb.throttled - before >= 4
    backend.dynamodb.throttle(1_000, "ProvisionedThroughputExceededException")
    read = backend.http.get(f"/v1/memories/{kept}")
    assert_unavailable(read, "throttling", "ProvisionedThroughputExceededException")

    backend.dynamodb.throttle(0)  # nothing of the refused store was written
    listed = backend.http.get(f"/v1/users/{USER}/memories").json()["results"]
    assert sorted(m["content"] for m in listed) == [
        "The user drinks green tea (ProvisionedThroughputExceededException)",
        "The user drinks green tea (ThrottlingException)",
        "The user prefers window seats",
    ]
