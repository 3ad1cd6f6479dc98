"""bench/aws_latency.py part 3: store to searchable through the DynamoDB stream indexer.

The service's direct index writes fail (``WritesFailIndex``: every write raises
UnavailableError), so only the stream path indexes; after each store the bench reads
moto's stream, invokes ``functions/indexer/app.py:lambda_handler`` and searches
OpenSearch (ids query: sees refreshed documents only) until the memory is found.
"""

from __future__ import annotations

import contextlib
import io
import time
import uuid
from collections.abc import Sequence
from typing import Any

from harness import latency_summary

from hindsight.adapters.aws.opensearch_index import (
    OpenSearchSearchIndex,
    build_opensearch_client,
)
from hindsight.bootstrap import build_aws_service, configure_stream_index
from hindsight.core.commands import StoreMemoryCommand
from hindsight.core.errors import UnavailableError
from hindsight.core.models import IndexDocument, Principal
from hindsight.core.ports import Embedder
from hindsight.settings import Settings
from tests.integration.aws_stream import LambdaContextStub, StreamReader, load_indexer
from tests.integration.dynamodb_local import moto_client
from tests.services import OPENSEARCH_URL

TENANT = "bench"
PRINCIPAL = Principal(tenant_id=TENANT, key_id="bench")


class WritesFailIndex:
    """Delegates reads to OpenSearch; every write raises UnavailableError (stream-only)."""

    def __init__(self, inner: OpenSearchSearchIndex) -> None:
        self.inner = inner

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        raise UnavailableError("direct index writes disabled by the benchmark")

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        raise UnavailableError("direct index writes disabled by the benchmark")

    def delete_user(self, tenant_id: str, user_id: str) -> None:
        raise UnavailableError("direct index writes disabled by the benchmark")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def searchable(index: OpenSearchSearchIndex, user: str, memory_id: str) -> bool:
    response = index.client.search(
        index=index.index_name,
        body={"size": 1, "_source": False, "query": {"ids": {"values": [f"{TENANT}:{memory_id}"]}}},
        routing=f"{TENANT}:{user}",
    )
    return bool(response["hits"]["hits"])


def bench_stream(
    embedder: Embedder, texts: list[str], poll_s: float, timeout_s: float
) -> dict[str, Any]:
    client = moto_client()
    settings = Settings(
        backend="aws", table=f"hindsight-bench-stream-{uuid.uuid4().hex[:8]}", region="us-east-1"
    )
    os_client = build_opensearch_client(OPENSEARCH_URL, "none", timeout=60)
    index = OpenSearchSearchIndex(
        os_client, f"hindsight-bench-stream-{uuid.uuid4().hex[:8]}", embedder.dimension
    )  # refresh=False: the production default (relies on index.refresh_interval)
    index.ensure_index()
    service = build_aws_service(
        settings, embedder=embedder, index=WritesFailIndex(index), dynamodb_client=client
    )
    indexer = load_indexer()
    configure_stream_index(index)
    reader = StreamReader(settings.table)
    reader.read()  # nothing yet; sets the shard iterators
    user = "stream-user"
    rows: list[dict[str, float]] = []
    try:
        # warm-up: the first invocation loads Powertools and the index state
        service.store(PRINCIPAL, StoreMemoryCommand(user_id=user, content="warm-up memory"))
        with contextlib.redirect_stdout(io.StringIO()):
            indexer.lambda_handler(reader.lambda_event(reader.read()), LambdaContextStub())
        for text in texts:
            started = time.perf_counter()
            outcome = service.store(PRINCIPAL, StoreMemoryCommand(user_id=user, content=text))
            stored_at = time.perf_counter()
            read_s = invoke_s = 0.0
            indexed_at: float | None = None
            found_at: float | None = None
            polls = 0
            while time.perf_counter() - stored_at < timeout_s:
                polls += 1
                if indexed_at is None:
                    t0 = time.perf_counter()
                    records = reader.read()
                    t1 = time.perf_counter()
                    read_s += t1 - t0
                    if records:
                        with contextlib.redirect_stdout(io.StringIO()):
                            response = indexer.lambda_handler(
                                reader.lambda_event(records), LambdaContextStub()
                            )
                        if response.get("batchItemFailures"):
                            raise RuntimeError(f"indexer failed: {response}")
                        indexed_at = time.perf_counter()
                        invoke_s += indexed_at - t1
                if searchable(index, user, outcome.memory_id):
                    found_at = time.perf_counter()
                    break
                time.sleep(poll_s)
            if found_at is None or indexed_at is None:
                raise RuntimeError(f"memory {outcome.memory_id} not searchable in {timeout_s} s")
            rows.append(
                {
                    "store_s": stored_at - started,
                    "to_searchable_s": found_at - stored_at,
                    "stream_read_s": read_s,
                    "indexer_invoke_s": invoke_s,
                    "refresh_wait_s": found_at - indexed_at,
                    "polls": polls,
                }
            )
    finally:
        configure_stream_index(None)
        index.drop_index()
        client.delete_table(TableName=settings.table)
    return {
        "samples": len(rows),
        "poll_interval_ms": poll_s * 1000,
        "store_to_searchable": latency_summary([r["to_searchable_s"] for r in rows]),
        "stream_read": latency_summary([r["stream_read_s"] for r in rows]),
        "indexer_invocation": latency_summary([r["indexer_invoke_s"] for r in rows]),
        "refresh_wait_after_indexer": latency_summary([r["refresh_wait_s"] for r in rows]),
        "store_call": latency_summary([r["store_s"] for r in rows]),
        "index_refresh_policy": (
            "OpenSearchSearchIndex(refresh=False), the production default of "
            "build_opensearch_index: writes become searchable at the next periodic refresh "
            "(index.refresh_interval, OpenSearch default 1s; the index body sets none)"
        ),
    }
