"""503 answers carry Retry-After; DynamoDB throttling is a 503; dead-letter messages parse."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from hindsight.adapters.aws.dynamodb_record_store.errors import (
    TableThrottledError,
    translated_errors,
)
from hindsight.adapters.aws.indexer_dlq import StreamRange, changed_memories, failed_batch
from hindsight.api.errors import DEFAULT_RETRY_AFTER_SECONDS, headers_for, retry_after_seconds
from hindsight.core.errors import (
    ConfigurationError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    ReflectorOutputError,
    StillRunningError,
    UnavailableError,
)
from hindsight.server.app import error_answer

STREAM_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/memories/stream/2026-12-03T22:00:00.000"


def test_every_503_says_when_to_retry_and_nothing_else_does() -> None:
    assert headers_for(UnavailableError("down")) == {
        "Retry-After": str(DEFAULT_RETRY_AFTER_SECONDS)
    }
    assert retry_after_seconds(ReflectorOutputError("bad output")) == DEFAULT_RETRY_AFTER_SECONDS
    assert headers_for(TableThrottledError("throttled")) == {"Retry-After": "2"}
    for error in (NotFoundError("x"), InvalidRequestError("x"), ConfigurationError("x")):
        assert headers_for(error) == {}
    assert error_answer(UnavailableError("down")).headers["Retry-After"] == "5"
    assert "Retry-After" not in error_answer(NotFoundError("gone")).headers


def test_only_a_conflict_that_retrying_resolves_says_when() -> None:
    assert headers_for(StillRunningError("the same key is still being processed")) == {
        "Retry-After": "2"
    }
    assert error_answer(StillRunningError("running")).status == 409
    assert headers_for(ConflictError("only semantic memories can be reviewed")) == {}


@pytest.mark.parametrize(
    "code",
    ["ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"],
)
def test_throttling_left_after_the_retries_is_a_throttled_error(code: str) -> None:
    error = ClientError({"Error": {"Code": code, "Message": "slow down"}}, "PutItem")
    with pytest.raises(TableThrottledError) as raised, translated_errors("memories", "PutItem"):
        raise error
    assert isinstance(raised.value, UnavailableError)
    assert "throttling" in raised.value.message and code in raised.value.message
    assert "retry in 2 s" in raised.value.message


def test_a_condition_failure_passes_through() -> None:
    error = ClientError({"Error": {"Code": "ConditionalCheckFailedException"}}, "PutItem")
    with pytest.raises(ClientError), translated_errors("memories", "PutItem"):
        raise error


def on_failure_body(**info: object) -> str:
    batch = {
        "shardId": "shardId-00000001",
        "startSequenceNumber": "100",
        "endSequenceNumber": "120",
        "batchSize": 3,
        "streamArn": STREAM_ARN,
        **info,
    }
    return json.dumps(
        {"requestContext": {"condition": "RetryAttemptsExhausted"}, "DDBStreamBatchInfo": batch}
    )


def test_a_dead_letter_message_names_the_shard_range_and_table() -> None:
    batch = failed_batch(on_failure_body())
    assert (batch.shard_id, batch.start_sequence, batch.end_sequence) == (
        "shardId-00000001",
        "100",
        "120",
    )
    assert batch.table_name == "memories"
    for body in (
        "not json",
        json.dumps({"Records": []}),
        on_failure_body(shardId=None),
        on_failure_body(endSequenceNumber=120),
    ):
        with pytest.raises(InvalidRequestError, match="not a stream indexer failure record"):
            failed_batch(body)
    with pytest.raises(InvalidRequestError, match="not a DynamoDB stream ARN"):
        _ = failed_batch(on_failure_body(streamArn="arn:aws:sqs:us-east-1:1:queue")).table_name


def _record(pk: str, item_type: str, event: str = "MODIFY") -> dict[str, object]:
    image = {
        "pk": {"S": pk},
        "sk": {"S": "M"},
        "item_type": {"S": item_type},
        "body": {"S": "{}"},
        "tenant_id": {"S": "t1"},
        "memory_id": {"S": pk},
    }
    change = {"Keys": {"pk": {"S": pk}, "sk": {"S": "M"}}}
    change["OldImage" if event == "REMOVE" else "NewImage"] = image
    return {"eventName": event, "dynamodb": change}


def test_the_memories_a_range_changed_once_each_markers_left_out() -> None:
    records = [
        _record("m1", "memory", "INSERT"),
        _record("d1", "dedup"),
        _record("m1", "memory"),
        _record("m2", "memory", "REMOVE"),
    ]
    assert sorted(changed_memories(records)) == [("m1", "M"), ("m2", "M")]  # type: ignore[arg-type]


class TrimmedStream:
    """A DynamoDB Streams client whose shard no longer holds the range (past 24 hours)."""

    def get_shard_iterator(self, **_: object) -> dict[str, str]:
        raise ClientError(
            {"Error": {"Code": "TrimmedDataAccessException", "Message": "trimmed"}},
            "GetShardIterator",
        )


def test_a_range_gone_from_the_stream_says_to_reindex() -> None:
    with pytest.raises(InvalidRequestError, match="hindsight reindex") as raised:
        StreamRange(TrimmedStream()).records(failed_batch(on_failure_body()))
    assert "TrimmedDataAccessException" in raised.value.message
