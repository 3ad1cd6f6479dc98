"""Stream indexer: applies DynamoDB stream records to the search index (OpenSearch).

INSERT and MODIFY of a memory item upsert its index documents (one per chunk of a long
memory; the index replaces them all), rebuilt from the NEW image; a large memory's content
and vectors kept in S3 are read back first. An image whose S3 object is gone was replaced by
a later write (or deleted) whose own record follows, so it is skipped. REMOVE (a delete, or a
TTL expiry made by the DynamoDB service) deletes every document of the memory.
Dedup markers, cursors and activity items are ignored, and so is a MODIFY that changed
only a memory's access counts; the record of an archived memory deletes its documents.
A record that fails is reported as a batch item failure, so Lambda retries from it (and
the records after it, in order); after the retries the event source mapping sends it to
the dead-letter queue (``hindsight replay-dlq`` applies what it names once the index is
back). What a memory item does to the index is ``hindsight.adapters.aws.stream_indexing``.
"""

from __future__ import annotations

import base64
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
    DynamoDBRecord,
    DynamoDBRecordEventName,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from hindsight.adapters.aws.dynamodb_record_store import from_attribute_values, is_memory_item
from hindsight.adapters.aws.dynamodb_record_store.hits import only_hits_changed
from hindsight.adapters.aws.stream_indexing import (
    IndexOutcome,
    index_memory_item,
    remove_memory_item,
)
from hindsight.api.observability import MetricUnit, logger, metrics, tracer
from hindsight.bootstrap import get_stream_index, get_stream_payloads

processor = BatchProcessor(event_type=EventType.DynamoDBStreams)


def _image(record: DynamoDBRecord, name: str) -> dict[str, Any]:
    """A stream image as plain values (Lambda sends binary attributes base64-encoded)."""
    raw = dict((record.dynamodb.raw_event if record.dynamodb else {}).get(name) or {})
    for attribute, value in raw.items():
        if isinstance(value.get("B"), str):
            raw[attribute] = {"B": base64.b64decode(value["B"])}
    return from_attribute_values(raw)


def _is_ttl_expiry(record: DynamoDBRecord) -> bool:
    identity = record.user_identity or {}
    return identity.get("type") == "Service" and identity.get("principalId") == (
        "dynamodb.amazonaws.com"
    )


# the metric each outcome of ``index_memory_item`` counts
_OUTCOME_METRICS = {
    IndexOutcome.UPSERTED: "IndexUpserts",
    IndexOutcome.ARCHIVED: "IndexArchives",
    IndexOutcome.STALE: "IndexStaleSkips",
    IndexOutcome.OTHER_MODEL: "IndexModelSkips",
}


@tracer.capture_method
def record_handler(record: DynamoDBRecord) -> None:
    index = get_stream_index()
    if record.event_name in (DynamoDBRecordEventName.INSERT, DynamoDBRecordEventName.MODIFY):
        item = _image(record, "NewImage")
        if not is_memory_item(item):
            return
        if only_hits_changed(_image(record, "OldImage"), item):
            return  # access tracking (hit_count, last_hit_us): nothing to index
        outcome = index_memory_item(index, item, get_stream_payloads())
        metric = _OUTCOME_METRICS.get(outcome)
        if metric is not None:
            metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
        return
    if record.event_name == DynamoDBRecordEventName.REMOVE:
        item = _image(record, "OldImage")
        if not is_memory_item(item):
            return
        remove_memory_item(index, item)
        expired = _is_ttl_expiry(record)
        metrics.add_metric(
            name="IndexTtlDeletes" if expired else "IndexDeletes", unit=MetricUnit.Count, value=1
        )
        logger.debug("index document deleted", memory_id=item["memory_id"], ttl=expired)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
