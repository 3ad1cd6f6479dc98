"""functions/reflect_fanout: one queued reflection per user with new episodes."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hindsight.adapters.aws.sqs_job_queue import SqsReflectionJobQueue
from hindsight.core.errors import ConfigurationError, InvalidRequestError
from hindsight.core.service import MemoryService
from hindsight.core.usecases.fan_out import FanOutError, ReflectionJob
from tests.functional.conftest import EVENTS_DIR, GLOBEX_KEY, LambdaContextStub, call, load_function

SCHEDULE = EVENTS_DIR / "async" / "reflect_fanout_schedule.json"


def fanout_module() -> Any:
    load_function("reflect_fanout")
    return sys.modules["functional_fn_reflect_fanout"]


class ListQueue:
    """A reflection job queue that keeps what it is sent; can be made to fail."""

    def __init__(self) -> None:
        self.jobs: list[ReflectionJob] = []
        self.failing = False

    def send(self, jobs: Sequence[ReflectionJob]) -> None:
        if self.failing:
            raise FanOutError("queue down")
        self.jobs.extend(jobs)


@pytest.fixture
def queue(service: MemoryService) -> Iterator[ListQueue]:
    module = fanout_module()
    fake = ListQueue()
    module.configure_queue(fake)
    yield fake
    module.configure_queue()


def run(event: dict[str, Any] | None = None) -> dict[str, Any]:
    event = event if event is not None else json.loads(SCHEDULE.read_text())
    return fanout_module().lambda_handler(event, LambdaContextStub("reflect-fanout"))


def store(user_id: str, content: str, **kwargs: Any) -> None:
    reply = call("POST", "/v1/memories", body={"user_id": user_id, "content": content}, **kwargs)
    assert reply.status == 201, reply.body


def test_one_job_per_tenant_and_user(queue: ListQueue) -> None:
    store("u1", "我对花生过敏")
    store("u1", "周五下午三点开会")
    store("u2", "prefers window seats")
    store("u1", "likes green tea", key=GLOBEX_KEY)
    answer = run()
    assert answer["status"] == "success" and answer["queued"] == 3
    assert sorted((j.tenant_id, j.user_id) for j in queue.jobs) == [
        ("acme", "u1"),
        ("acme", "u2"),
        ("globex", "u1"),
    ]


def test_the_next_run_only_sees_users_with_newer_episodes(queue: ListQueue) -> None:
    store("u1", "我对花生过敏")
    store("u2", "prefers window seats")
    run()
    queue.jobs.clear()
    store("u2", "works from Berlin")
    assert run()["queued"] == 1
    assert [(j.tenant_id, j.user_id) for j in queue.jobs] == [("acme", "u2")]
    queue.jobs.clear()
    assert run()["queued"] == 0


def test_a_failed_send_keeps_the_cursor_so_the_retry_queues_again(queue: ListQueue) -> None:
    store("u1", "我对花生过敏")
    queue.failing = True
    with pytest.raises(FanOutError):
        run()
    queue.failing = False
    assert run()["queued"] == 1


def test_dry_run_lists_without_queueing_or_moving_the_cursor(
    queue: ListQueue, service: MemoryService
) -> None:
    store("u1", "我对花生过敏")
    answer = run({"dry_run": True})
    assert answer["users"] == 1 and answer["queued"] == 0 and queue.jobs == []
    assert run()["queued"] == 1


def test_since_in_the_input_looks_back_again(queue: ListQueue, service: MemoryService) -> None:
    store("u1", "我对花生过敏")
    run()
    queue.jobs.clear()
    since = (service.ports.clock.now() - timedelta(days=1)).isoformat()
    assert run({"since": since})["queued"] == 1


def test_invalid_input_is_refused_with_a_readable_error(queue: ListQueue) -> None:
    with pytest.raises(InvalidRequestError, match="schedule input"):
        run({"since": "not a time"})


def test_without_a_queue_url_the_error_names_the_variable(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = fanout_module()
    module.configure_queue()
    monkeypatch.delenv("HINDSIGHT_REFLECTION_QUEUE_URL", raising=False)
    with pytest.raises(ConfigurationError, match="HINDSIGHT_REFLECTION_QUEUE_URL"):
        run()


class FakeSqs:
    """The send_message_batch call of an SQS client; refuses the users it is told to."""

    def __init__(self, refuse: set[str] | None = None) -> None:
        self.batches: list[list[dict[str, str]]] = []
        self.refuse = refuse or set()

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, str]]) -> dict[str, Any]:
        self.batches.append(Entries)
        failed = [
            {"Id": e["Id"], "Code": "InternalError"}
            for e in Entries
            if json.loads(e["MessageBody"])["user_id"] in self.refuse
        ]
        return {"Successful": [], "Failed": failed}


def jobs(count: int) -> list[ReflectionJob]:
    now = datetime(2026, 6, 1, 2, 0, tzinfo=UTC)
    return [ReflectionJob("acme", f"u{i}", now) for i in range(count)]


def test_sqs_queue_sends_in_batches_of_ten_with_the_worker_message() -> None:
    sqs = FakeSqs()
    SqsReflectionJobQueue("https://sqs.example/q", sqs).send(jobs(23))
    assert [len(batch) for batch in sqs.batches] == [10, 10, 3]
    body = json.loads(sqs.batches[0][0]["MessageBody"])
    assert body == {
        "tenant_id": "acme",
        "user_id": "u0",
        "requested_at": "2026-06-01T02:00:00+00:00",
    }


def test_sqs_queue_raises_naming_the_refused_jobs() -> None:
    sqs = FakeSqs(refuse={"u3", "u12"})
    with pytest.raises(FanOutError, match=r"2 reflection jobs.*acme/u3 \(InternalError\)"):
        SqsReflectionJobQueue("https://sqs.example/q", sqs).send(jobs(15))
    assert len(sqs.batches) == 2  # every batch was tried
