"""A server killed in the middle of an idempotent store leaves the key marked in progress;
the server that takes the data directory next releases the mark, so the client's retry
runs at once instead of being answered 409 for minutes (found by bench/soak.py: after a
SIGKILL every store in flight was refused on retry for the rest of the soak)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hindsight.adapters.embedded.sqlite_idempotency import SqliteIdempotencyStore
from hindsight.api.idempotency import IdempotentWrites
from hindsight.core.errors import ConflictError
from hindsight.core.models import Principal
from hindsight.server.startup import IDEMPOTENCY_FILE, lock_data_dir
from hindsight.settings import Settings

PRINCIPAL = Principal(tenant_id="local", key_id="test")
BODY = b'{"user_id": "u1", "content": "the flight to Lisbon lands at 9"}'
ANSWER = {"status": "success", "memory_id": "mem_1"}


class ServerKilledError(BaseException):
    """Stands for SIGKILL: not an Exception, so nothing cleans up after it."""


def writes_in(data_dir: Path) -> IdempotentWrites:
    return IdempotentWrites(SqliteIdempotencyStore(data_dir / IDEMPOTENCY_FILE))


def settings_for(data_dir: Path) -> Settings:
    return Settings.from_env({"HINDSIGHT_BACKEND": "embedded"}, data_dir=data_dir)


def killed_mid_store(data_dir: Path, key: str) -> None:
    def dies() -> dict[str, Any]:
        raise ServerKilledError

    with pytest.raises(ServerKilledError):
        writes_in(data_dir).run_once("store_memory", key, PRINCIPAL, BODY, dies)


def test_without_the_release_the_retry_is_refused_as_in_progress(tmp_path: Path) -> None:
    killed_mid_store(tmp_path, "key-1")
    with pytest.raises(ConflictError, match="still being processed"):
        writes_in(tmp_path).run_once("store_memory", "key-1", PRINCIPAL, BODY, lambda: ANSWER)


def test_the_next_server_releases_the_mark_and_the_retry_runs(tmp_path: Path) -> None:
    killed_mid_store(tmp_path, "key-1")
    lock = lock_data_dir(settings_for(tmp_path))
    assert lock is not None
    try:
        ran: list[bool] = []

        def store() -> dict[str, Any]:
            ran.append(True)
            return ANSWER

        answer, replayed = writes_in(tmp_path).run_once(
            "store_memory", "key-1", PRINCIPAL, BODY, store
        )
    finally:
        lock.release()
    assert (answer, replayed, ran) == (ANSWER, False, [True])


def test_finished_answers_survive_the_restart(tmp_path: Path) -> None:
    writes_in(tmp_path).run_once("store_memory", "key-2", PRINCIPAL, BODY, lambda: ANSWER)
    lock = lock_data_dir(settings_for(tmp_path))
    assert lock is not None
    try:
        answer, replayed = writes_in(tmp_path).run_once(
            "store_memory", "key-2", PRINCIPAL, BODY, lambda: {"status": "other"}
        )
    finally:
        lock.release()
    assert (answer, replayed) == (ANSWER, True)


def test_release_counts_only_in_progress_marks(tmp_path: Path) -> None:
    writes_in(tmp_path).run_once("store_memory", "done", PRINCIPAL, BODY, lambda: ANSWER)
    killed_mid_store(tmp_path, "cut-1")
    killed_mid_store(tmp_path, "cut-2")
    store = SqliteIdempotencyStore(tmp_path / IDEMPOTENCY_FILE)
    try:
        assert store.release_in_progress() == 2
        assert store.release_in_progress() == 0
    finally:
        store.close()
