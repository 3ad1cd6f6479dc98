"""functions/reflect_worker: SQS batch of users, reflected one by one, partial failures."""

from __future__ import annotations

import copy
import json
import sys
from typing import Any

from hindsight.core.models import ListQuery, MemoryKind
from hindsight.core.service import MemoryService
from hindsight.core.usecases.reflect import REFLECTION_CURSOR
from tests.functional.conftest import EVENTS_DIR, LambdaContextStub, call, load_function

BATCH = EVENTS_DIR / "async" / "reflect_worker_sqs_batch.json"


def run(event: dict[str, Any]) -> dict[str, Any]:
    handler = load_function("reflect_worker")
    return handler(event, LambdaContextStub("reflect-worker"))


def sample() -> dict[str, Any]:
    return json.loads(BATCH.read_text())


def facts(service: MemoryService, tenant: str, user: str) -> list[Any]:
    page = service.ports.records.list(
        tenant,
        user,
        ListQuery(kinds=frozenset({MemoryKind.SEMANTIC}), now=service.ports.clock.now()),
        50,
        None,
    )
    return list(page.items)


def test_each_user_of_the_batch_is_reflected(service: MemoryService) -> None:
    for user in ("u1", "u2"):
        reply = call("POST", "/v1/memories", body={"user_id": user, "content": "我对花生过敏"})
        assert reply.status == 201
    answer = run(sample())
    assert answer == {"batchItemFailures": []}
    for user in ("u1", "u2"):
        assert facts(service, "acme", user), user
        assert service.ports.records.get_cursor("acme", user, REFLECTION_CURSOR) is not None
    assert facts(service, "globex", "u1") == []


def test_a_bad_message_fails_alone(service: MemoryService) -> None:
    call("POST", "/v1/memories", body={"user_id": "u1", "content": "我对花生过敏"})
    event = sample()
    broken = copy.deepcopy(event["Records"][1])
    broken["messageId"] = "broken-1"
    broken["body"] = json.dumps({"user_id": "u3"})  # no tenant
    event["Records"].append(broken)
    answer = run(event)
    assert answer == {"batchItemFailures": [{"itemIdentifier": "broken-1"}]}
    assert facts(service, "acme", "u1")


def test_the_worker_principal_stays_in_its_tenant(service: MemoryService) -> None:
    module_name = "functional_fn_reflect_worker"
    load_function("reflect_worker")
    principal = sys.modules[module_name].system_principal("globex")
    assert principal.tenant_id == "globex" and principal.can_write("calendar")
