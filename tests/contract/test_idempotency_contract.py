"""Idempotent writes, one contract for both persistence layers: Powertools'
DynamoDBPersistenceLayer (on moto, the AWS backend's) and our SqliteIdempotencyStore (the
embedded backend's). A retry gets the first answer without running again; another body for
the key is refused; tenants and operations do not share keys; a failed run is not kept; a
key in progress is a conflict; an expired key runs again."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight.adapters.aws.idempotency_table import dynamodb_idempotency_store
from hindsight.adapters.embedded.sqlite_idempotency import SqliteIdempotencyStore
from hindsight.api.idempotency import IdempotentWrites
from hindsight.core.errors import (
    ConflictError,
    InvalidRequestError,
    MalformedRequestError,
    StillRunningError,
    UnavailableError,
)
from hindsight.core.models import Principal

ACME = Principal(tenant_id="acme")
GLOBEX = Principal(tenant_id="globex")
BODY = b'{"user_id": "u1", "content": "the flight lands at 9"}'


@pytest.fixture(params=["sqlite", "dynamodb"])
def writes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[IdempotentWrites]:
    if request.param == "sqlite":
        store = SqliteIdempotencyStore(tmp_path / "idempotency.db")
        yield IdempotentWrites(store, expires_after_seconds=2)
        store.close()
        return
    from tests.integration.dynamodb_local import moto_client, require_moto

    client = moto_client()
    require_moto(client)
    name = f"hindsight-idempotency-{time.time_ns()}"
    yield IdempotentWrites(
        dynamodb_idempotency_store(name, client, create=True), expires_after_seconds=2
    )
    client.delete_table(TableName=name)


class Counter:
    """A write that counts its runs and answers a new id each time."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self) -> dict[str, Any]:
        self.runs += 1
        return {"status": 201, "body": {"status": "success", "memory_id": f"mem_{self.runs}"}}


def test_a_retry_gets_the_first_answer_and_runs_nothing(writes: IdempotentWrites) -> None:
    write = Counter()
    first, replayed = writes.run_once("store_memory", "k-1", ACME, BODY, write)
    assert not replayed and first["body"]["memory_id"] == "mem_1"
    for _ in range(3):
        again, replayed = writes.run_once("store_memory", "k-1", ACME, BODY, write)
        assert replayed and again == first
    assert write.runs == 1


def test_another_body_for_a_used_key_is_refused(writes: IdempotentWrites) -> None:
    write = Counter()
    writes.run_once("store_memory", "k-2", ACME, BODY, write)
    with pytest.raises(InvalidRequestError, match="already used for another request"):
        writes.run_once("store_memory", "k-2", ACME, BODY + b" ", write)
    assert write.runs == 1


def test_tenants_and_operations_do_not_share_keys(writes: IdempotentWrites) -> None:
    write = Counter()
    writes.run_once("store_memory", "k-3", ACME, BODY, write)
    _, replayed = writes.run_once("store_memory", "k-3", GLOBEX, BODY, write)
    assert not replayed
    _, replayed = writes.run_once("store_batch", "k-3", ACME, BODY, write)
    assert not replayed
    assert write.runs == 3


def test_a_failed_run_is_not_kept(writes: IdempotentWrites) -> None:
    def failing() -> dict[str, Any]:
        raise UnavailableError("the store is down")

    with pytest.raises(UnavailableError):
        writes.run_once("store_memory", "k-4", ACME, BODY, failing)
    write = Counter()
    answer, replayed = writes.run_once("store_memory", "k-4", ACME, BODY, write)
    assert not replayed and write.runs == 1 and answer["body"]["memory_id"] == "mem_1"


def test_a_key_in_progress_is_a_conflict(writes: IdempotentWrites) -> None:
    inner: list[BaseException] = []

    def retried_meanwhile() -> dict[str, Any]:
        try:
            writes.run_once("store_memory", "k-5", ACME, BODY, Counter())
        except ConflictError as exc:
            inner.append(exc)
        return Counter()()

    writes.run_once("store_memory", "k-5", ACME, BODY, retried_meanwhile)
    assert len(inner) == 1 and "still being processed" in str(inner[0])
    assert isinstance(inner[0], StillRunningError)  # answered 409 with Retry-After


def test_an_expired_key_runs_again(writes: IdempotentWrites) -> None:
    write = Counter()
    writes.run_once("store_memory", "k-6", ACME, BODY, write)
    time.sleep(3.1)  # the records here expire after 2 s (24 h by default)
    _, replayed = writes.run_once("store_memory", "k-6", ACME, BODY, write)
    assert not replayed and write.runs == 2


@pytest.mark.parametrize("key", ["", " ", "a b", "ключ", "x" * 256])
def test_a_malformed_key_is_a_400(writes: IdempotentWrites, key: str) -> None:
    with pytest.raises(MalformedRequestError, match="Idempotency-Key"):
        writes.run_once("store_memory", key, ACME, BODY, Counter())


def test_the_settings_choose_the_persistence_layer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AWS: Powertools' DynamoDB layer on HINDSIGHT_IDEMPOTENCY_TABLE (created when the
    process may create resources); embedded: a SQLite file in the data dir; memory: its own."""
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    from hindsight.api.idempotency import idempotent_writes
    from hindsight.settings import Settings
    from tests.integration.dynamodb_local import MOTO_URL, REGION, moto_client, require_moto

    client = moto_client()
    require_moto(client)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", MOTO_URL)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    name = f"hindsight-idempotency-{time.time_ns()}"
    aws = idempotent_writes(Settings(backend="aws", idempotency_table=name, region=REGION))
    assert isinstance(aws.persistence, DynamoDBPersistenceLayer)
    assert aws.expires_after_seconds == 86_400
    write = Counter()
    aws.run_once("store_memory", "k-aws", ACME, BODY, write)
    assert aws.run_once("store_memory", "k-aws", ACME, BODY, write)[1] is True
    ttl = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expiration"
    client.delete_table(TableName=name)

    embedded = idempotent_writes(Settings(backend="embedded", data_dir=tmp_path))
    assert isinstance(embedded.persistence, SqliteIdempotencyStore)
    assert (tmp_path / "idempotency.db").exists()
    assert idempotent_writes(Settings(backend="embedded", data_dir=tmp_path)) is embedded
    memory = Settings(backend="memory")
    assert idempotent_writes(memory) is idempotent_writes(memory)
    assert idempotent_writes(Settings(backend="memory")) is not idempotent_writes(memory)


def test_a_request_left_in_progress_by_a_killed_server_lapses(writes: IdempotentWrites) -> None:
    """A server killed mid-request leaves its key in progress; once the in-progress mark
    lapses (IN_PROGRESS_SECONDS; here already past) a retry runs instead of a 409."""
    import hashlib

    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

    writes.run_once("store_batch", "k-warm", ACME, BODY, Counter())  # configures the layer
    data = {
        "operation": "store_memory",
        "tenant": "acme",
        "key": "k-killed",
        "request": hashlib.sha256(BODY).hexdigest(),
    }
    writes.persistence.configure(IdempotencyConfig(), key_prefix="hindsight")
    writes.persistence.save_inprogress(data, remaining_time_in_millis=-1_000)
    write = Counter()
    answer, replayed = writes.run_once("store_memory", "k-killed", ACME, BODY, write)
    assert not replayed and write.runs == 1 and answer["status"] == 201
    running = {**data, "key": "k-running"}
    writes.persistence.save_inprogress(running, remaining_time_in_millis=60_000)
    with pytest.raises(ConflictError):
        writes.run_once("store_memory", "k-running", ACME, BODY, write)


def test_erasing_a_user_forgets_the_answers_of_their_writes(writes: IdempotentWrites) -> None:
    def stored(user: str) -> Any:
        return lambda: {"status": 201, "body": {"memory": {"user_id": user, "content": "hi"}}}

    writes.run_once("store_memory", "k1", ACME, b"1", stored("u1"), user_id="u1")
    writes.run_once("store_batch", "k2", ACME, b"2", stored("u1"), user_id="u1")
    writes.run_once("store_memory", "k3", ACME, b"3", stored("u2"), user_id="u2")
    writes.run_once("store_memory", "k4", GLOBEX, b"4", stored("u1"), user_id="u1")

    assert writes.forget_user("acme", "u1") == 2
    assert writes.forget_user("acme", "u1") == 0  # erasing twice is safe

    # the erased user's keys run again; the other user's and the other tenant's replay
    again = Counter()
    answer, replayed = writes.run_once("store_memory", "k1", ACME, b"1", again, user_id="u1")
    assert (replayed, again.runs) == (False, 1)
    _, replayed = writes.run_once("store_memory", "k3", ACME, b"3", again, user_id="u2")
    assert replayed
    answer, replayed = writes.run_once("store_memory", "k4", GLOBEX, b"4", again, user_id="u1")
    assert replayed and answer["body"]["memory"]["user_id"] == "u1"
    assert again.runs == 1


def test_records_kept_before_they_named_their_user_are_forgotten_by_mention(
    writes: IdempotentWrites,
) -> None:
    from aws_lambda_powertools.utilities.idempotency.persistence.base import DataRecord

    from hindsight.api.idempotency import answer_sweep

    # a record as kept before records named their tenant and user: the answer alone
    old = {"status": 201, "body": {"memory": {"user_id": "u1", "content": "hi"}}}
    record = DataRecord(
        idempotency_key="hindsight#old",
        status="COMPLETED",
        expiry_timestamp=int(time.time()) + 600,
        response_data=json.dumps(old, sort_keys=True),
    )
    writes.persistence._put_record(record)
    writes.persistence._update_record(record)
    assert [key for key, _ in answer_sweep(writes.persistence).mentioning('"u1"')] == [
        "hindsight#old"
    ]
    assert writes.forget_user("globex", "u2") == 0
    assert writes.forget_user("globex", "u1") == 1  # the tenant is not known: any tenant's
