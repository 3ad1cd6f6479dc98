"""functions/reflect_fanout: one queued reflection per user with new episodes."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

import pytest

from hindsight.core.service import MemoryService
from tests.functional.conftest import EVENTS_DIR, GLOBEX_KEY, LambdaContextStub, call, load_function

SCHEDULE = EVENTS_DIR / "async" / "reflect_fanout_schedule.json"


def fanout_module() -> Any:
    load_function("reflect_fanout")
    return sys.modules["functional_fn_reflect_fanout"]


class ListQueue:
    """A reflection job queue that keeps what it is sent; can be made to fail."""

    def __init__(self) -> None:
        self.jobs: list[Any] = []
        self.failing = False

    def send(self, jobs: Sequence[Any]) -> None:
        if self.failing:
            raise fanout_module().FanOutError("queue down")
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
    body = json.loads(queue.jobs[0].body())
    assert set(body) == {"tenant_id", "user_id", "requested_at"}


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
    with pytest.raises(fanout_module().FanOutError):
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
    since = (service.clock.now() - timedelta(days=1)).isoformat()
    assert run({"since": since})["queued"] == 1


def test_invalid_input_is_refused_with_a_readable_error(queue: ListQueue) -> None:
    from hindsight.core.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError, match="schedule input"):
        run({"since": "not a time"})


def test_without_a_queue_url_the_error_names_the_variable(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hindsight.core.errors import InvalidRequestError

    module = fanout_module()
    module.configure_queue()
    monkeypatch.delenv("HINDSIGHT_REFLECTION_QUEUE_URL", raising=False)
    with pytest.raises(InvalidRequestError, match="HINDSIGHT_REFLECTION_QUEUE_URL"):
        run()
