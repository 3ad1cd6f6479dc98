"""The local DynamoDB engine of the tests: moto in server mode on 127.0.0.1:5055.

Started by ``make services`` (``python -m tests.services start``). Nothing here is
skipped when it is down: the caller fails with the message below.
"""

from __future__ import annotations

import uuid
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError

from hindsight.adapters.aws.dynamodb_record_store import (
    DEFAULT_INLINE_BYTES,
    DynamoDBRecordStore,
    S3PayloadStore,
    create_table,
)

MOTO_URL = "http://127.0.0.1:5055"
REGION = "us-east-1"
NOT_RUNNING = "start the local engines: make services"


def moto_client(service: str = "dynamodb") -> Any:
    return boto3.client(
        service,
        endpoint_url=MOTO_URL,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"mode": "standard", "max_attempts": 2}, connect_timeout=2),
    )


def require_moto(client: Any) -> None:
    try:
        client.list_tables(Limit=1)
    except BotoCoreError as exc:
        raise RuntimeError(f"moto is not answering on {MOTO_URL} ({exc}); {NOT_RUNNING}") from exc


def fresh_table(client: Any, prefix: str = "hindsight-test") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    create_table(client, name)
    return name


def fresh_bucket(prefix: str = "hindsight-test") -> S3PayloadStore:
    """An S3PayloadStore on a new, empty bucket in moto."""
    client = moto_client("s3")
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return S3PayloadStore(name, client=client)


def fresh_store(
    prefix: str = "hindsight-test", inline_bytes: int = DEFAULT_INLINE_BYTES
) -> DynamoDBRecordStore:
    """A DynamoDBRecordStore on a new, empty table in moto, keeping large memories in a new
    bucket (as HINDSIGHT_BLOB_BUCKET does)."""
    client = moto_client()
    require_moto(client)
    return DynamoDBRecordStore(
        fresh_table(client, prefix),
        client=client,
        payloads=fresh_bucket(prefix),
        inline_bytes=inline_bytes,
    )


def bucket_keys(payloads: S3PayloadStore) -> list[str]:
    """Every object key in the store's bucket."""
    pages = payloads.client.get_paginator("list_objects_v2").paginate(Bucket=payloads.bucket)
    return [entry["Key"] for page in pages for entry in page.get("Contents", [])]


def drop_bucket(payloads: S3PayloadStore) -> None:
    keys = bucket_keys(payloads)
    if keys:
        payloads.delete([f"s3://{payloads.bucket}/{key}" for key in keys])
    payloads.client.delete_bucket(Bucket=payloads.bucket)


def drop_table(store: DynamoDBRecordStore) -> None:
    store.client.delete_table(TableName=store.table_name)
    if store.payloads is not None and store.payloads.bucket:
        drop_bucket(store.payloads)
