"""Background writes (``core/usecases/jobs.py``) through the service and the route table:
a job answers what the request would have answered, reports its progress, runs with its
caller's rights, writes nothing twice when run again after a stop, and goes with an
erased user. The Lambda handler, which runs no job queue, answers synchronously.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from hindsight.api.route_calls import RouteRequest
from hindsight.api.routes import call_route
from hindsight.bootstrap import build_memory_service, configure
from hindsight.core.commands import StoreBatchCommand, StoreMemoryCommand
from hindsight.core.embedding import PROGRESS_SLICE
from hindsight.core.errors import ForbiddenError, NotFoundError, PayloadTooLargeError
from hindsight.core.models import ListQuery, Principal
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder
from tests.functional.conftest import (
    ADMIN_KEY,
    CALENDAR_KEY,
    KEYS,
    LambdaContextStub,
    load_function,
)

ADMIN = Principal(tenant_id="acme", key_id="acme-admin")
CALENDAR = Principal(
    tenant_id="acme",
    key_id="calendar-agent",
    read_scopes=frozenset({"calendar"}),
    write_scopes=frozenset({"calendar"}),
    default_scope="calendar",
)


def long_content(words: int = 1500) -> str:
    return " ".join(f"word{i % 97} item{i}" for i in range(words))


def stored_ids(service: MemoryService, user_id: str) -> list[str]:
    return list(service.ports.records.list_ids("acme", user_id, ListQuery(), 1000))


@pytest.fixture
def no_dedup() -> Iterator[MemoryService]:
    """A service that never deduplicates: only the job's own ids keep a rerun from
    storing twice."""
    settings = Settings(backend="memory", api_keys=json.dumps(KEYS), dedup_window_seconds=0)
    built = build_memory_service(settings, embedder=HashingEmbedder(window_tokens=64))
    configure(settings, built)
    yield built
    configure()


def test_a_job_answers_what_the_store_would_have_and_reports_chunks(
    no_dedup: MemoryService,
) -> None:
    command = StoreMemoryCommand(user_id="u1", content=long_content())
    job = no_dedup.submit_job(ADMIN, command)
    assert (job.state, job.attempts, job.done, job.total) == ("pending", 0, 0, 0)
    seen: list[tuple[int, int]] = []
    jobs = no_dedup.ports.jobs
    assert jobs is not None
    report = jobs.report

    def watched(job_id: str, done: int, total: int, now: Any) -> None:
        seen.append((done, total))
        report(job_id, done, total, now)

    jobs.report = watched  # type: ignore[method-assign]
    finished = no_dedup.run_job(job.job_id)
    assert finished is not None and finished.state == "succeeded", finished
    total = finished.total
    assert total > 2 * PROGRESS_SLICE  # a long memory: several slices of chunks
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert finished.outcome is not None and finished.outcome["status"] == "success"
    assert stored_ids(no_dedup, "u1") == [finished.outcome["memory_id"]]
    assert no_dedup.run_job(job.job_id) is None  # a finished job is not run again


def test_a_job_run_again_after_its_write_stores_nothing_twice(no_dedup: MemoryService) -> None:
    items = [{"content": f"batch note {i}"} for i in range(3)]
    job = no_dedup.submit_job(ADMIN, StoreBatchCommand(user_id="u2", items=items))
    # the first run wrote the batch and the process died before the job was marked done
    commands = [StoreMemoryCommand.model_validate(c) for c in job.input["commands"]]
    first = no_dedup.use_cases.store(ADMIN, commands, job.input["memory_ids"])
    jobs = no_dedup.ports.jobs
    assert jobs is not None
    jobs.claim(job.job_id, no_dedup.now())
    assert no_dedup.unfinished_jobs() == [job.job_id]

    finished = no_dedup.run_job(job.job_id)  # resumed at the next start
    assert finished is not None and finished.state == "succeeded"
    assert finished.attempts == 2
    assert sorted(stored_ids(no_dedup, "u2")) == sorted(o.memory_id for o in first)
    results = finished.outcome["results"] if finished.outcome else []
    assert [r["memory_id"] for r in results] == [o.memory_id for o in first]
    assert {r["status"] for r in results} == {"success"}
    assert no_dedup.unfinished_jobs() == []


def test_a_job_interrupted_before_its_write_stores_once_when_resumed(
    no_dedup: MemoryService,
) -> None:
    job = no_dedup.submit_job(ADMIN, StoreMemoryCommand(user_id="u3", content="one note"))
    jobs = no_dedup.ports.jobs
    assert jobs is not None
    jobs.claim(job.job_id, no_dedup.now())  # started, then the process died
    finished = no_dedup.run_job(job.job_id)
    assert finished is not None and finished.state == "succeeded"
    assert stored_ids(no_dedup, "u3") == [job.input["memory_ids"][0]]


def test_what_can_be_refused_at_once_is_and_jobs_keep_their_callers_rights(
    service: MemoryService,
) -> None:
    with pytest.raises(PayloadTooLargeError):
        service.submit_job(ADMIN, StoreMemoryCommand(user_id="u", content="x" * 100_001))
    with pytest.raises(ForbiddenError):
        service.submit_job(CALENDAR, StoreMemoryCommand(user_id="u", content="x", scope="work"))
    job = service.submit_job(CALENDAR, StoreMemoryCommand(user_id="u", content="meeting"))
    assert service.get_job(CALENDAR, job.job_id).job_id == job.job_id
    assert service.get_job(ADMIN, job.job_id).job_id == job.job_id  # may read every scope
    other = Principal(tenant_id="acme", key_id="other", read_scopes=frozenset({"calendar"}))
    with pytest.raises(NotFoundError):
        service.get_job(other, job.job_id)
    with pytest.raises(NotFoundError):
        service.get_job(Principal(tenant_id="globex", key_id="acme-admin"), job.job_id)
    finished = service.run_job(job.job_id)
    assert finished is not None and finished.outcome is not None
    memory = service.get_memory(CALENDAR, finished.outcome["memory_id"])
    assert memory["memory"]["scope"] == "calendar"


def test_a_failed_job_says_why(service: MemoryService) -> None:
    refusing = Principal(tenant_id="acme", key_id="strict", secrets="refuse")
    command = StoreMemoryCommand(user_id="u", content="my key is AKIAIOSFODNN7EXAMPLE ok")
    job = service.submit_job(refusing, command)
    finished = service.run_job(job.job_id)
    assert finished is not None and finished.state == "failed"
    assert finished.error and "secret" in finished.error.lower()
    assert stored_ids(service, "u") == []


def test_erasing_a_user_deletes_their_jobs_before_they_run(service: MemoryService) -> None:
    job = service.submit_job(ADMIN, StoreMemoryCommand(user_id="gone", content="private"))
    service.erase_user(ADMIN, "gone")
    with pytest.raises(NotFoundError):
        service.get_job(ADMIN, job.job_id)
    assert service.run_job(job.job_id) is None
    assert stored_ids(service, "gone") == []


def _route(
    operation: str,
    body: dict[str, Any],
    prefer: bool,
    jobs: list[str] | None,
    **extra: str,
) -> Any:
    headers = {"Authorization": f"Bearer {ADMIN_KEY}", **extra}
    if prefer:
        headers["Prefer"] = "respond-async; wait=10"
    request = RouteRequest(headers, json.dumps(body).encode())
    from hindsight.api.auth import authenticate
    from hindsight.bootstrap import get_service, get_settings

    return call_route(
        operation,
        request,
        lambda: authenticate(request.headers, None, get_settings()),
        get_service,
        None if jobs is None else jobs.append,
    )


def _get_job(job_id: str) -> Any:
    from hindsight.api.auth import authenticate
    from hindsight.bootstrap import get_service, get_settings

    request = RouteRequest({"Authorization": f"Bearer {ADMIN_KEY}"}, path_params={"job_id": job_id})
    caller = lambda: authenticate(request.headers, None, get_settings())  # noqa: E731
    return call_route("get_job", request, caller, get_service)


def test_the_route_accepts_a_job_only_where_a_queue_runs(service: MemoryService) -> None:
    queued: list[str] = []
    body = {"user_id": "u-route", "content": "routed note"}
    answer = _route("store_memory", body, prefer=True, jobs=queued)
    assert answer.status == 202
    assert answer.headers["Location"] == f"/v1/jobs/{answer.body['job_id']}"
    assert answer.headers["Preference-Applied"] == "respond-async"
    assert queued == [answer.body["job_id"]]
    polled = _get_job(answer.body["job_id"])
    assert polled.status == 200 and polled.body["state"] == "pending"
    assert polled.headers["Retry-After"] == "1"  # unfinished: look again in a second
    # no queue (the Lambda handlers): the preference is not applied
    synchronous = _route("store_memory", {**body, "content": "another"}, prefer=True, jobs=None)
    assert synchronous.status == 201 and "Preference-Applied" not in synchronous.headers
    # a queue, but no Prefer: as always
    plain = _route("store_memory", {**body, "content": "a third"}, prefer=False, jobs=queued)
    assert plain.status == 201 and len(queued) == 1


def test_a_retried_async_write_with_its_idempotency_key_gets_the_same_job(
    service: MemoryService,
) -> None:
    queued: list[str] = []
    body = {"user_id": "u-retry", "items": [{"content": "retried batch"}]}
    key = {"Idempotency-Key": "retry-0001"}
    first = _route("store_batch", body, prefer=True, jobs=queued, **key)
    again = _route("store_batch", body, prefer=True, jobs=queued, **key)
    assert first.status == again.status == 202
    assert again.body["job_id"] == first.body["job_id"] and len(queued) == 1
    assert again.headers["Idempotent-Replayed"] == "true"


def test_the_lambda_handler_answers_synchronously_and_finds_no_job(
    service: MemoryService,
) -> None:
    from hindsight.gateway.lambda_emulation import proxy_event

    handler = load_function("store")
    headers = {"Authorization": f"Bearer {CALENDAR_KEY}", "Prefer": "respond-async"}
    body = json.dumps({"user_id": "u-aws", "content": "stored at once"})
    event = proxy_event("POST", "/v1/memories", headers=headers, body=body)
    reply = handler(event, LambdaContextStub(function_name="store"))
    assert reply["statusCode"] == 201, reply
    event = proxy_event(
        "GET",
        "/v1/jobs/{job_id}",
        headers=headers,
        path_parameters={"job_id": "job_01JZ0000000000000000000000"},
    )
    reply = handler(event, LambdaContextStub(function_name="store"))
    assert reply["statusCode"] == 404, reply
