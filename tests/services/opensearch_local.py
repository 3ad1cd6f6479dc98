"""Fresh OpenSearch indexes on the local node, for the contract and integration tests."""

from __future__ import annotations

import uuid

import pytest

from hindsight.adapters.aws.opensearch_index import OpenSearchSearchIndex, build_opensearch_client
from tests.services import OPENSEARCH_URL

NOT_RUNNING = "start the local engines: make services"
TEST_DIMENSION = 64  # tests.fakes.HashingEmbedder


def local_client() -> object:
    """A client of the local node; fails the test (never skips) when the node is down."""
    client = build_opensearch_client(OPENSEARCH_URL, "none", timeout=30)
    if not client.ping():
        pytest.fail(f"OpenSearch does not answer on {OPENSEARCH_URL}: {NOT_RUNNING}")
    return client


def fresh_index(dimension: int = TEST_DIMENSION, **options: object) -> OpenSearchSearchIndex:
    """A new, empty index with a unique name; writes are visible when they return."""
    options.setdefault("refresh", "wait_for")
    index = OpenSearchSearchIndex(
        local_client(),
        f"hindsight-test-{uuid.uuid4().hex[:12]}",
        dimension,
        **options,  # type: ignore[arg-type]
    )
    index.ensure_index()
    return index


def drop(index: OpenSearchSearchIndex) -> None:
    index.drop_index()
    index.client.close()
