"""Replaying the stream indexer's dead-letter queue into the search index.

When the indexer gives up on a batch of stream records (its retries ran out, or the
records grew too old), Lambda's event source mapping sends an invocation record to the
on-failure destination (``IndexerDeadLetterQueue``). That message does NOT hold the
records: it names them, in ``DDBStreamBatchInfo``: the stream ARN, the shard id and the
range of sequence numbers (``startSequenceNumber`` .. ``endSequenceNumber``).

``DeadLetterReplay`` reads each message, reads that range of the shard back from the
stream (records stay readable for 24 hours), collects the memory items the records
changed, re-reads each one's CURRENT item from the table (strongly consistent) and applies
it with the indexer's own rules (``stream_indexing``): an item that still exists is
indexed, one that is gone has its documents deleted. Applying the current item rather
than the old images is idempotent and never puts an older state back in the index.
A message is deleted only after every memory it names was applied; one that cannot be
applied (the index still down, the range trimmed from the stream) stays in the queue, and
the report says what to do (for a trimmed range: ``hindsight reindex``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from hindsight.adapters.aws.dynamodb_record_store import from_attribute_values, is_memory_item
from hindsight.adapters.aws.dynamodb_record_store.requests import TableRequests
from hindsight.adapters.aws.stream_indexing import (
    IndexOutcome,
    index_memory_item,
    remove_memory_item,
)
from hindsight.core.errors import InvalidRequestError, UnavailableError
from hindsight.core.ports import SearchIndex

logger = logging.getLogger(__name__)

_GONE_FROM_STREAM = {
    "TrimmedDataAccessException",
    "ExpiredIteratorException",
    "ResourceNotFoundException",
}
MAX_PAGES_PER_BATCH = 1_000
VISIBILITY_SECONDS = 120


@dataclass(frozen=True)
class FailedBatch:
    """The stream records one dead-letter message names."""

    stream_arn: str
    shard_id: str
    start_sequence: str
    end_sequence: str
    batch_size: int

    @property
    def table_name(self) -> str:
        """``arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>`` -> name."""
        resource = self.stream_arn.split(":", 5)[-1]
        parts = resource.split("/")
        if len(parts) < 2 or parts[0] != "table":
            raise InvalidRequestError(f"not a DynamoDB stream ARN: {self.stream_arn}")
        return parts[1]


def failed_batch(body: str) -> FailedBatch:
    """The batch a dead-letter message names; InvalidRequestError if it names none."""
    try:
        info = json.loads(body)["DDBStreamBatchInfo"]
        named = ("streamArn", "shardId", "startSequenceNumber", "endSequenceNumber")
        if not all(isinstance(info[name], str) and info[name] for name in named):
            raise ValueError("a field is empty or not a string")
        return FailedBatch(
            stream_arn=str(info["streamArn"]),
            shard_id=str(info["shardId"]),
            start_sequence=str(info["startSequenceNumber"]),
            end_sequence=str(info["endSequenceNumber"]),
            batch_size=int(info.get("batchSize") or 0),
        )
    except (ValueError, TypeError, KeyError) as exc:
        raise InvalidRequestError(
            "not a stream indexer failure record (no DDBStreamBatchInfo with streamArn, "
            "shardId, startSequenceNumber and endSequenceNumber)"
        ) from exc


@dataclass
class ReplayReport:
    """What a replay did: messages applied and deleted, memories re-applied, kept ones."""

    messages: int = 0
    replayed: int = 0
    indexed: int = 0
    removed: int = 0
    skipped: int = 0
    kept: list[str] = field(default_factory=list)  # why each kept message was kept

    def as_dict(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "replayed": self.replayed,
            "kept": len(self.kept),
            "memories_indexed": self.indexed,
            "memories_removed": self.removed,
            "memories_skipped": self.skipped,
            "why_kept": list(self.kept),
        }


class StreamRange:
    """Reads the records of a ``FailedBatch`` back from the table's stream."""

    def __init__(self, streams_client: Any) -> None:
        self.client = streams_client

    def records(self, batch: FailedBatch) -> list[dict[str, Any]]:
        """Every record of the range, in order; InvalidRequestError if the stream no
        longer holds it (older than 24 hours, or the stream was replaced)."""
        try:
            return list(self._read(batch))
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in _GONE_FROM_STREAM:
                raise InvalidRequestError(
                    f"shard {batch.shard_id} no longer holds records "
                    f"{batch.start_sequence}..{batch.end_sequence} ({code}); rebuild the "
                    "index from the table with `hindsight reindex`, then delete the message"
                ) from exc
            raise UnavailableError(f"cannot read the table's stream ({code}); retry") from exc
        except ParamValidationError as exc:
            raise InvalidRequestError(
                f"the message names no readable shard range ({exc}); delete the message"
            ) from exc
        except BotoCoreError as exc:
            raise UnavailableError(f"cannot reach DynamoDB Streams ({exc}); retry") from exc

    def _read(self, batch: FailedBatch) -> Iterator[dict[str, Any]]:
        iterator = self.client.get_shard_iterator(
            StreamArn=batch.stream_arn,
            ShardId=batch.shard_id,
            ShardIteratorType="AT_SEQUENCE_NUMBER",
            SequenceNumber=batch.start_sequence,
        )["ShardIterator"]
        end = int(batch.end_sequence)
        for _ in range(MAX_PAGES_PER_BATCH):
            page = self.client.get_records(ShardIterator=iterator, Limit=1000)
            for record in page.get("Records", []):
                if int(record["dynamodb"]["SequenceNumber"]) > end:
                    return
                yield record
                if int(record["dynamodb"]["SequenceNumber"]) == end:
                    return
            iterator = page.get("NextShardIterator")
            if not iterator or not page.get("Records"):
                return  # the shard is closed, or holds nothing further yet
        raise UnavailableError(f"shard {batch.shard_id} is still being read; retry")


def changed_memories(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(pk, sk) -> the latest image of each memory item the records changed."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for record in records:
        change = record.get("dynamodb") or {}
        image = from_attribute_values(change.get("NewImage") or change.get("OldImage") or {})
        if not is_memory_item(image):
            continue
        keys = change.get("Keys") or {}
        found[(keys["pk"]["S"], keys["sk"]["S"])] = image
    return found


class DeadLetterReplay:
    """Applies what the indexer's dead-letter messages name, deleting each one applied."""

    def __init__(
        self,
        queue_url: str,
        sqs_client: Any,
        streams_client: Any,
        dynamodb_client: Any,
        index: SearchIndex,
        payloads: Any,
    ) -> None:
        self.queue_url = queue_url
        self.sqs = sqs_client
        self.stream = StreamRange(streams_client)
        self.dynamodb = dynamodb_client
        self.index = index
        self.payloads = payloads

    def run(
        self, max_messages: int = 1_000, progress: Callable[[ReplayReport], None] | None = None
    ) -> ReplayReport:
        """Replay up to ``max_messages`` messages (each received once in this run)."""
        report = ReplayReport()
        while report.messages < max_messages:
            messages = self._receive(min(10, max_messages - report.messages))
            if not messages:
                break
            for message in messages:
                report.messages += 1
                self._replay(message, report)
                if progress is not None:
                    progress(report)
        return report

    def _receive(self, count: int) -> list[dict[str, Any]]:
        try:
            response = self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=count,
                VisibilityTimeout=VISIBILITY_SECONDS,
                WaitTimeSeconds=1,
            )
        except (BotoCoreError, ClientError) as exc:
            raise UnavailableError(
                f"cannot read the dead-letter queue {self.queue_url} ({exc}); check the URL "
                "(stack output IndexerDeadLetterQueueUrl), the region and credentials"
            ) from exc
        return list(response.get("Messages", []))

    def _replay(self, message: Mapping[str, Any], report: ReplayReport) -> None:
        message_id = str(message.get("MessageId"))
        try:
            batch = failed_batch(str(message.get("Body", "")))
            outcomes = self._apply(batch)
        except (InvalidRequestError, UnavailableError) as exc:
            report.kept.append(f"{message_id}: {exc.message}")
            logger.warning("dead letter kept message_id=%s reason=%s", message_id, exc.message)
            if isinstance(exc, UnavailableError):
                # a later run retries it; an unreadable one stays invisible for this run
                self._release(message)
                raise UnavailableError(
                    f"{exc.message}; {report.replayed} message(s) were replayed before this, "
                    "the rest are still in the queue: run `hindsight replay-dlq` again"
                ) from exc
            return
        self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        report.replayed += 1
        for outcome in outcomes:
            if outcome in (IndexOutcome.UPSERTED,):
                report.indexed += 1
            elif outcome in (IndexOutcome.DELETED, IndexOutcome.ARCHIVED):
                report.removed += 1
            else:
                report.skipped += 1

    def _release(self, message: Mapping[str, Any]) -> None:
        """Make a kept message visible again at once (a later run may apply it)."""
        try:
            self.sqs.change_message_visibility(
                QueueUrl=self.queue_url,
                ReceiptHandle=message["ReceiptHandle"],
                VisibilityTimeout=0,
            )
        except (BotoCoreError, ClientError):
            logger.info("message stays invisible until its timeout ends")

    def _apply(self, batch: FailedBatch) -> list[IndexOutcome]:
        table = TableRequests(batch.table_name, self.dynamodb)
        outcomes = []
        for (pk, sk), image in changed_memories(self.stream.records(batch)).items():
            current = table.call(
                "GetItem",
                TableName=batch.table_name,
                Key=table.key(pk, sk),
                ConsistentRead=True,
            ).get("Item")
            item = from_attribute_values(current) if current else None
            if item is not None and is_memory_item(item):
                outcomes.append(index_memory_item(self.index, item, self.payloads))
            else:
                outcomes.append(remove_memory_item(self.index, image))
        return outcomes
