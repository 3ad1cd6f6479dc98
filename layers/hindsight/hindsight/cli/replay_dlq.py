"""``hindsight replay-dlq``: apply the stream batches the indexer gave up on (AWS backend).

The indexer's dead-letter queue (stack output ``IndexerDeadLetterQueueUrl``) holds one
message per batch of stream records it could not apply (OpenSearch down for longer than
its retries). Once the index is back, this command re-applies every memory those batches
changed, from its current item in the table, and deletes each message it applied
(``hindsight.adapters.aws.indexer_dlq``).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hindsight import bootstrap
from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json, print_fields
from hindsight.cli.state import JsonFlag, cli_state
from hindsight.core.errors import InvalidRequestError
from hindsight.settings import Settings

QueueOption = Annotated[
    str | None,
    typer.Option(
        "--queue-url",
        envvar="HINDSIGHT_INDEXER_DLQ_URL",
        help="URL of the indexer's dead-letter queue (stack output IndexerDeadLetterQueueUrl; "
        "or HINDSIGHT_INDEXER_DLQ_URL).",
        show_default=False,
    ),
]
MaxOption = Annotated[
    int,
    typer.Option("--max-messages", min=1, help="Replay at most this many messages."),
]


def _aws_client(service: str, region: str | None) -> Any:
    """A boto3 client from the standard chain (honours ``AWS_ENDPOINT_URL_<SERVICE>``)."""
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "max_attempts": 4}, connect_timeout=3)
    return boto3.client(service, region_name=region, config=config)


def _replay(settings: Settings, queue_url: str) -> Any:
    from hindsight.adapters.aws.dynamodb_record_store import default_client
    from hindsight.adapters.aws.indexer_dlq import DeadLetterReplay

    region = settings.region or None
    return DeadLetterReplay(
        queue_url,
        sqs_client=_aws_client("sqs", region),
        streams_client=_aws_client("dynamodbstreams", region),
        dynamodb_client=default_client(region),
        index=bootstrap.get_stream_index(),  # OpenSearch itself, as the indexer writes it
        payloads=bootstrap.get_stream_payloads(),
    )


@handles_errors
def replay_dlq(
    ctx: typer.Context,
    queue_url: QueueOption = None,
    max_messages: MaxOption = 1_000,
    as_json: JsonFlag = False,
) -> None:
    """Re-apply to OpenSearch the stream batches the indexer sent to its dead-letter queue
    (AWS backend), deleting each message once applied."""
    state = cli_state(ctx, as_json)
    settings = Settings.from_env(data_dir=state.data_dir)
    if settings.backend != "aws":
        raise InvalidRequestError(
            f"replay-dlq replays the AWS stream indexer's dead-letter queue, but "
            f"HINDSIGHT_BACKEND is {settings.backend!r}: set HINDSIGHT_BACKEND=aws (with "
            "HINDSIGHT_TABLE, HINDSIGHT_OPENSEARCH_URL and the region); the embedded backend "
            "indexes synchronously and has no such queue"
        )
    if not queue_url:
        raise InvalidRequestError(
            "no dead-letter queue: pass --queue-url or set HINDSIGHT_INDEXER_DLQ_URL to the "
            "stack output IndexerDeadLetterQueueUrl"
        )
    report = _replay(settings, queue_url).run(max_messages=max_messages).as_dict()
    if state.json_output:
        emit_json(report)
        return
    print_fields(report)
