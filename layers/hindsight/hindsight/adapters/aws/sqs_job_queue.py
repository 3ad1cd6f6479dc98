"""Reflection jobs on SQS: the fan-out's job queue on AWS.

Each job is one message ``{"tenant_id", "user_id", "requested_at"}`` (what
functions/reflect_worker reads), sent with SendMessageBatch in tens. Any entry SQS
refuses, or any client error, raises ``FanOutError`` so that the run is retried.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hindsight.core.usecases.fan_out import FanOutError, ReflectionJob

SQS_BATCH = 10  # SendMessageBatch takes at most ten entries


def job_message(job: ReflectionJob) -> str:
    """The message body of one job."""
    return json.dumps(
        {
            "tenant_id": job.tenant_id,
            "user_id": job.user_id,
            "requested_at": job.requested_at.isoformat(),
        },
        ensure_ascii=False,
    )


class SqsReflectionJobQueue:
    """``ReflectionJobQueue`` on one SQS queue; the client is injected or made on first use."""

    def __init__(self, queue_url: str, client: Any = None) -> None:
        self.queue_url = queue_url
        self._client = client

    def _sqs(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("sqs")
        return self._client

    def send(self, jobs: Sequence[ReflectionJob]) -> None:
        failed: list[str] = []
        for start in range(0, len(jobs), SQS_BATCH):
            chunk = jobs[start : start + SQS_BATCH]
            entries = [
                {"Id": str(i), "MessageBody": job_message(job)} for i, job in enumerate(chunk)
            ]
            try:
                answer = self._sqs().send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            except Exception as exc:  # botocore errors: translate, keep the cause
                raise FanOutError(
                    f"could not queue reflection jobs on {self.queue_url}: {type(exc).__name__}"
                ) from exc
            for failure in answer.get("Failed") or []:
                job = chunk[int(failure["Id"])]
                failed.append(f"{job.tenant_id}/{job.user_id} ({failure.get('Code', '?')})")
        if failed:
            raise FanOutError(
                f"{len(failed)} reflection jobs could not be queued: {', '.join(failed[:10])}"
            )
