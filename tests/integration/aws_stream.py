"""Read a table's real DynamoDB stream from moto and hand it to the indexer as Lambda would."""

from __future__ import annotations

import base64
from datetime import datetime
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from hindsight.gateway.lambda_emulation import LocalLambdaContext, load_function_module
from tests.integration.dynamodb_local import moto_client

ROOT = Path(__file__).resolve().parents[2]


# the context Lambda hands the indexer, and its code imported by path as Lambda would
LambdaContextStub = partial(
    LocalLambdaContext,
    "indexer-function",
    memory_mb=512,
    timeout_seconds=30,
    region="us-east-1",
    account_id="123456789012",
    log_stream_name="test",
)


def load_indexer() -> ModuleType:
    return load_function_module(ROOT / "functions", "indexer", "indexer_app")


class StreamReader:
    """Reads every shard of a table's stream from where the last read stopped."""

    def __init__(self, table_name: str) -> None:
        self.client = moto_client("dynamodbstreams")
        table = moto_client().describe_table(TableName=table_name)["Table"]
        self.stream_arn = table["LatestStreamArn"]
        self._iterators: dict[str, str] = {}

    def read(self) -> list[dict[str, Any]]:
        shards = self.client.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]
        records: list[dict[str, Any]] = []
        for shard in shards["Shards"]:
            shard_id = shard["ShardId"]
            iterator = (
                self._iterators.get(shard_id)
                or self.client.get_shard_iterator(
                    StreamArn=self.stream_arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            )
            response = self.client.get_records(ShardIterator=iterator, Limit=1000)
            records += response["Records"]
            self._iterators[shard_id] = response["NextShardIterator"]
        return records

    def lambda_event(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """The event Lambda's event source mapping sends (JSON: binary as base64)."""
        return {"Records": [{**_jsonable(r), "eventSourceARN": self.stream_arn} for r in records]}


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, datetime):
        return int(value.timestamp())
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value
