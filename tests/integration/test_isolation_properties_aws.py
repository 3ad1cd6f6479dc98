"""Isolation properties on the AWS backend (issue #15): the state machine of
``tests/isolation_machine.py`` against DynamoDB (moto on :5055), OpenSearch (the local
node on :9200) and S3 (moto: documents over 2 KB are kept there), with a fresh table,
index, bucket and idempotency table per example.

After every erase-user, every item of both DynamoDB tables is scanned, every object of
the bucket read and the OpenSearch index queried by tenant and user, by memory id and by
each of the user's tags: nothing of that user may remain.

Bounded and reproducible: derandomized, a fixed number of examples and steps; the test
prints how many ran.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import pytest

from hindsight.adapters.aws.dynamodb_record_store import DynamoDBRecordStore
from hindsight.adapters.aws.dynamodb_record_store.items import user_pk
from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import build_aws_service, configure, rewire
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder
from tests.integration.dynamodb_local import MOTO_URL, REGION, moto_client, require_moto
from tests.isolation_machine import IsolationMachine, key_config
from tests.isolation_run import run_isolation
from tests.services.opensearch_local import drop, fresh_index

EXAMPLES = 8
STEPS = 40
INLINE_BYTES = 2_000  # a document's body goes to S3, as a memory over 400 KB would


class AwsIsolation(IsolationMachine):
    def build(self) -> tuple[Settings, MemoryService]:
        self.dynamodb = moto_client()
        self.s3 = moto_client("s3")
        name = f"hindsight-isolation-{uuid.uuid4().hex[:10]}"
        config = Settings(
            backend="aws",
            table=name,
            region=REGION,
            blob_bucket=name,
            api_keys=key_config(),
        )
        # writes refreshed as in production (periodically): this process reads its own
        # writes through the bootstrap's ReadYourWritesIndex; leftovers() refreshes first
        self.opensearch = fresh_index(refresh=False)
        service = build_aws_service(
            config,
            embedder=HashingEmbedder(),
            reflector=RuleBasedReflector(),
            index=self.opensearch,
            dynamodb_client=self.dynamodb,
            s3_client=self.s3,
        )
        payloads = service.ports.records.payloads  # type: ignore[attr-defined]
        records = DynamoDBRecordStore(
            name, client=self.dynamodb, payloads=payloads, inline_bytes=INLINE_BYTES
        )
        service = rewire(service, records=records)
        configure(config, service)
        self.tables = [name, f"{name}-idempotency"]
        return config, service

    def close(self) -> None:
        configure()
        drop(self.opensearch)
        for table in self.tables:
            # (no idempotency table when no store of this example sent an Idempotency-Key)
            with contextlib.suppress(self.dynamodb.exceptions.ResourceNotFoundException):
                self.dynamodb.delete_table(TableName=table)
        bucket = self.settings.blob_bucket
        for key in self._bucket_keys():
            self.s3.delete_object(Bucket=bucket, Key=key)
        self.s3.delete_bucket(Bucket=bucket)

    def _bucket_keys(self) -> list[str]:
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.settings.blob_bucket)
        return [entry["Key"] for page in pages for entry in page.get("Contents", [])]

    # --- what erase-user must have left nothing in ------------------------------------------
    def leftovers(self, tenant: str, user: str, erased_ids: set[str], tags: set[str]) -> list[str]:
        found = self._items(self.tables[0], tenant, user, erased_ids, tags)
        # the idempotency records too: an erasure deletes the records of the user's writes
        found += self._items(self.tables[1], tenant, user, erased_ids, tags)
        found += self._objects(tenant, user, erased_ids, tags)
        found += self._documents(tenant, user, erased_ids, tags)
        return found

    def _items(
        self, table: str, tenant: str, user: str, ids: set[str], tags: set[str]
    ) -> list[str]:
        found: list[str] = []
        if table not in self.dynamodb.list_tables()["TableNames"]:
            return found
        owner_key = user_pk(tenant, user)
        for page in self.dynamodb.get_paginator("scan").paginate(TableName=table):
            for item in page["Items"]:
                texts = _strings(item)
                joined = " ".join(texts)
                owned = item.get("tenant_id") == {"S": tenant} and item.get("user_id") == {
                    "S": user
                }
                if owned or owner_key in joined:
                    found.append(f"{table}: an item of {tenant}/{user}: {_keys(item)}")
                elif any(memory_id in joined for memory_id in ids):
                    found.append(f"{table}: an item naming an erased memory: {_keys(item)}")
                elif any(tag in joined for tag in tags):
                    found.append(f"{table}: an item with the user's content: {_keys(item)}")
        return found

    def _objects(self, tenant: str, user: str, ids: set[str], tags: set[str]) -> list[str]:
        found: list[str] = []
        payloads = self.service.ports.records.payloads  # type: ignore[attr-defined]
        prefix = payloads.owner_prefix(tenant, user)
        for key in self._bucket_keys():
            if key.startswith(prefix):
                found.append(f"s3: an object of {tenant}/{user}: {key}")
                continue
            body = self.s3.get_object(Bucket=self.settings.blob_bucket, Key=key)["Body"].read()
            text = body.decode("utf-8", errors="replace")
            if any(token in text for token in (*ids, *tags)):
                found.append(f"s3: {key} holds an erased memory or the user's content")
        return found

    def _documents(self, tenant: str, user: str, ids: set[str], tags: set[str]) -> list[str]:
        client, name = self.opensearch.client, self.opensearch.index_name
        client.indices.refresh(index=name)
        queries: list[tuple[str, dict[str, Any]]] = [
            (
                f"tenant {tenant} and user {user}",
                {
                    "bool": {
                        "filter": [{"term": {"tenant_id": tenant}}, {"term": {"user_id": user}}]
                    }
                },
            )
        ]
        if ids:
            queries.append(("an erased memory id", {"terms": {"memory_id": sorted(ids)}}))
        queries += [(f"the tag {tag}", {"match": {"text": tag}}) for tag in sorted(tags)]
        found: list[str] = []
        for what, query in queries:
            hits = client.search(index=name, body={"query": query, "size": 5})["hits"]["hits"]
            found += [f"opensearch: {what}: {hit['_id']}" for hit in hits]
        return found


def _strings(value: Any) -> list[str]:
    """Every string inside a DynamoDB attribute value (maps and lists included)."""
    if isinstance(value, dict):
        return [text for inner in value.values() for text in _strings(inner)]
    if isinstance(value, list):
        return [text for inner in value for text in _strings(inner)]
    if isinstance(value, bytes):
        return [value.decode("utf-8", errors="replace")]
    return [value] if isinstance(value, str) else []


def _keys(item: dict[str, Any]) -> str:
    return f"pk={item.get('pk', {}).get('S')} sk={item.get('sk', {}).get('S')}"


def test_no_answer_leaks_and_erase_leaves_nothing_on_aws(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    require_moto(moto_client())
    # the idempotency records' table, made by the API's own client, is in moto too
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", MOTO_URL)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    summary = run_isolation(AwsIsolation, "AWS", EXAMPLES, STEPS)
    with capsys.disabled():
        print(summary)
    assert AwsIsolation.erasures > 0
