"""Read a table's real DynamoDB stream from moto and hand it to the indexer as Lambda would."""

from __future__ import annotations

import base64
import importlib.util
import uuid
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.integration.dynamodb_local import moto_client

ROOT = Path(__file__).resolve().parents[2]


class LambdaContextStub:
    """The attributes of a Lambda context that Powertools reads."""

    function_name = "indexer-function"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:indexer-function"
    log_group_name = "/aws/lambda/indexer-function"
    log_stream_name = "test"

    def __init__(self) -> None:
        self.aws_request_id = str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def load_indexer() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "indexer_app", ROOT / "functions" / "indexer" / "app.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
