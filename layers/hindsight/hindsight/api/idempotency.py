"""Idempotent writes: ``Idempotency-Key`` on ``POST /v1/memories`` and ``/v1/memories/batch``.

A client that retries a store (a timeout, a dropped connection) sends the same
``Idempotency-Key`` header again; the retry gets the first request's answer and stores
nothing new. Keys belong to a tenant and an operation; a key is remembered for
``HINDSIGHT_IDEMPOTENCY_TTL_SECONDS`` (default 24 h).

- the same key with another body: 422, the key was used for another request;
- the same key while the first request is still running: 409, retry in a moment (a
  request's in-progress mark lapses after ``IN_PROGRESS_SECONDS``, so a server killed
  mid-request does not hold the key for a day);
- an answer that is an error is not remembered (the retry runs again);
- a record keeps its answer with the tenant and user of the write: erasing a user deletes
  the records of the user's writes (``forget_user``; the ``KeptAnswers`` port of the erase
  use case), whose answers hold the memories stored.

The mechanism is Powertools' idempotency utility (``idempotent_function`` with an
``IdempotencyConfig``): on AWS over its ``DynamoDBPersistenceLayer`` (the template's
``IdempotencyTable``), locally over ``SqliteIdempotencyStore``, a persistence layer of ours
with the same semantics (``<data dir>/idempotency.db``; in memory for the memory backend).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer

from hindsight.core.errors import (
    InvalidRequestError,
    MalformedRequestError,
    StillRunningError,
    UnavailableError,
)
from hindsight.core.models import Principal
from hindsight.settings import Settings

IDEMPOTENCY_HEADER = "Idempotency-Key"
IDEMPOTENT_OPERATIONS = frozenset({"store_memory", "store_batch"})
MAX_KEY_CHARS = 255
# longer than any one store runs (API Gateway ends a request at 29 s; a local batch of long
# memories may take a minute on two cores), short enough that a retry after a server was
# killed mid-request (on AWS, where the marks live in DynamoDB) runs again within minutes
IN_PROGRESS_SECONDS = 90
KEY_PREFIX = "hindsight"  # one prefix for every operation (the operation is in the key)
# a record keeps the first answer with whose write it was, so erasing the user forgets it
ANSWER, TENANT, USER = "answer", "tenant", "user_id"


class _InProgressWindow:
    """What Powertools asks a Lambda context: how long the request may still run. The
    in-progress mark of a request lapses after that long."""

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return IN_PROGRESS_SECONDS * 1000


def check_key(key: str, key_name: str = f"{IDEMPOTENCY_HEADER} header") -> str:
    """The key (``key_name``: what the caller calls it), or ``MalformedRequestError``
    (400) saying what a key may be."""
    key = key.strip()
    if not key or len(key) > MAX_KEY_CHARS or not all(" " < c < "\x7f" for c in key):
        raise MalformedRequestError(
            f"the {key_name} must be 1 to {MAX_KEY_CHARS} visible ASCII "
            "characters without spaces (e.g. a UUID); send a new one for each new request"
        )
    return key


@dataclass
class IdempotentWrites:
    """Runs a write once per (operation, tenant, key); retries get the stored answer."""

    persistence: BasePersistenceLayer
    expires_after_seconds: int = 86_400

    def _config(self) -> IdempotencyConfig:
        config = IdempotencyConfig(
            event_key_jmespath="[operation, tenant, key]",
            payload_validation_jmespath="request",
            raise_on_no_idempotency_key=True,
            expires_after_seconds=self.expires_after_seconds,
            hash_function="sha256",
        )
        config.register_lambda_context(_InProgressWindow())  # type: ignore[arg-type]
        return config

    def run_once(
        self,
        operation_id: str,
        key: str,
        principal: Principal,
        body: bytes,
        run: Callable[[], dict[str, Any]],
        key_name: str = IDEMPOTENCY_HEADER,
        user_id: str = "",
    ) -> tuple[dict[str, Any], bool]:
        """``run()``'s JSON answer and False the first time; the stored answer and True
        for a retry. ``run`` raising stores nothing (the retry runs again). ``key_name``
        is what the caller calls the key (the header, or an MCP tool's argument);
        ``user_id`` whose memories the write stores (the record is kept with the tenant
        and user, so erasing the user forgets it: ``forget_user``)."""
        key = check_key(key, f"{key_name} header" if key_name == IDEMPOTENCY_HEADER else key_name)
        data = {
            "operation": operation_id,
            "tenant": principal.tenant_id,
            "key": key,
            "request": hashlib.sha256(body).hexdigest(),
        }
        ran: list[bool] = []

        def first(request: dict[str, Any]) -> dict[str, Any]:
            ran.append(True)
            return {ANSWER: run(), TENANT: principal.tenant_id, USER: user_id}

        once = idempotent_function(
            first,
            data_keyword_argument="request",
            persistence_store=self.persistence,
            config=self._config(),
            key_prefix=KEY_PREFIX,
        )
        try:
            answer = once(request=data)
        except IdempotencyValidationError as exc:
            raise InvalidRequestError(
                f"{key_name} {key!r} was already used for another request (a "
                "different body); send a new key for a new request, or the same body to get "
                "the first answer again"
            ) from exc
        except IdempotencyAlreadyInProgressError as exc:
            raise StillRunningError(
                f"the request with {key_name} {key!r} is still being processed; "
                "retry in a few seconds (Retry-After) to get its answer"
            ) from exc
        except IdempotencyPersistenceLayerError as exc:
            raise UnavailableError(
                "the idempotency records cannot be read or written right now; retry in a moment"
            ) from exc
        # records kept before the tenant and user were (a day at most) are the answer alone
        return answer.get(ANSWER, answer), not ran

    def forget_user(self, tenant_id: str, user_id: str) -> int:
        """Delete the records of the user's writes (how many): their answers hold the
        memories stored. Records kept before records named their user are deleted when
        they mention the user id anywhere (their tenant is not known; a retry of such a
        write then runs again). ``UnavailableError`` when the records cannot be swept."""
        sweep = answer_sweep(self.persistence)
        mention = json.dumps(user_id, ensure_ascii=False)
        try:
            doomed = [
                key
                for key, data in sweep.mentioning(user_id)
                if _holds_user(data, tenant_id, user_id, mention)
            ]
            sweep.delete_keys(doomed)
        except Exception as exc:  # a store's own errors: sqlite3, botocore
            raise UnavailableError(
                "the idempotency records of the user's writes cannot be deleted right now; "
                "erase the user again in a moment (erasing twice is safe)"
            ) from exc
        return len(doomed)


def _holds_user(data: str | None, tenant_id: str, user_id: str, mention: str) -> bool:
    """Whether a record's kept answer is one of the user's writes."""
    if not data:
        return False
    try:
        kept = json.loads(data)
    except ValueError:
        return False
    if isinstance(kept, dict) and ANSWER in kept:
        return bool(kept.get(TENANT) == tenant_id and kept.get(USER) == user_id)
    return mention in json.dumps(kept, ensure_ascii=False)


class AnswerSweep(Protocol):
    """What ``forget_user`` needs of a persistence layer."""

    def mentioning(self, text: str) -> list[tuple[str, str | None]]:
        """(record key, kept answer JSON) of the records whose answer contains ``text``
        (a superset is fine: each is checked)."""

    def delete_keys(self, keys: Sequence[str]) -> None:
        """Delete the records, leaving nothing of them readable in the store."""


def answer_sweep(persistence: BasePersistenceLayer) -> AnswerSweep:
    """The persistence layer's sweep: the SQLite store is one; DynamoDB gets an adapter."""
    if isinstance(persistence, DynamoDBPersistenceLayer):
        from hindsight.adapters.aws.idempotency_table import DynamoDBAnswerSweep

        return DynamoDBAnswerSweep(persistence)
    if hasattr(persistence, "mentioning") and hasattr(persistence, "delete_keys"):
        return persistence  # type: ignore[return-value]
    raise TypeError(f"no answer sweep for {type(persistence).__name__}")


_lock = threading.Lock()
_writes: dict[Any, tuple[Settings, IdempotentWrites]] = {}


def _store_key(settings: Settings) -> tuple[Any, ...]:
    """Which records ``settings`` name: one table, one data dir, or this settings object's."""
    backend = settings.backend.strip().lower()
    if backend == "aws":
        table = settings.idempotency_table or f"{settings.table}-idempotency"
        return ("aws", table, settings.region)
    if backend == "embedded":
        return ("embedded", str(settings.data_dir.resolve()))
    return ("memory", id(settings))


def _build(key: tuple[Any, ...], settings: Settings) -> BasePersistenceLayer:
    if key[0] == "aws":
        from hindsight.adapters.aws.dynamodb_record_store.table import default_client
        from hindsight.adapters.aws.idempotency_table import dynamodb_idempotency_store

        return dynamodb_idempotency_store(
            key[1], default_client(settings.region or None), create=settings.create_resources
        )
    from hindsight.adapters.embedded.sqlite_idempotency import SqliteIdempotencyStore

    if key[0] == "embedded":
        return SqliteIdempotencyStore(settings.data_dir / "idempotency.db")
    return SqliteIdempotencyStore(":memory:")


def idempotent_writes(settings: Settings) -> IdempotentWrites:
    """The process's idempotent writes for ``settings`` (built once per store)."""
    key = _store_key(settings)
    with _lock:
        found = _writes.get(key)
        if found is None or (key[0] == "memory" and found[0] is not settings):
            writes = IdempotentWrites(_build(key, settings), settings.idempotency_ttl_seconds)
            _writes[key] = found = (settings, writes)
        return found[1]
