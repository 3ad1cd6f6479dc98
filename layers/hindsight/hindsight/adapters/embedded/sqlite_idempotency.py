"""Idempotency records on SQLite: Powertools' ``BasePersistenceLayer`` for one machine.

On AWS the idempotent writes (``hindsight.api.idempotency``) keep their records with
Powertools' ``DynamoDBPersistenceLayer``; locally this layer keeps the same records with
the same semantics in one SQLite file (``<data dir>/idempotency.db``; ``":memory:"`` for
the in-memory backend):

- a record is put only when its key is new, expired, or left in progress past its
  in-progress expiry (a server killed mid-request), else ``IdempotencyItemAlreadyExistsError``
  carries the record found (Powertools then replays its answer, reports it in progress, or
  refuses another payload for the key);
- expired records are never answered and are purged on the next put;
- a server that takes the data directory's lock first releases the in-progress marks a
  killed predecessor left (``release_in_progress``).

One connection serves every thread (the server runs requests in worker threads); a lock
makes each put a single check-and-write.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import (
    STATUS_CONSTANTS,
    BasePersistenceLayer,
    DataRecord,
)

from hindsight.adapters.embedded.sqlite_files import scrub

_SCHEMA = """
CREATE TABLE IF NOT EXISTS idempotency (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    expiration INTEGER NOT NULL,
    in_progress_expiration INTEGER,
    data TEXT NOT NULL DEFAULT '',
    validation TEXT NOT NULL DEFAULT ''
)
"""
_COLUMNS = "id, status, expiration, in_progress_expiration, data, validation"


class SqliteIdempotencyStore(BasePersistenceLayer):
    """Powertools idempotency records in a SQLite file (or ``":memory:"``)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        # a deleted record (an erased user's answer) is overwritten, not left in free pages
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.execute(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def release_in_progress(self) -> int:
        """Forget every in-progress mark (how many there were). Only for a process that
        alone writes this file and has not started a request yet, such as a server that
        just took its data directory's lock: the marks are then those of a server that
        was killed mid-request, and its clients' retries should run again now rather than
        be answered 409 until the marks lapse."""
        with self._lock:
            cursor = self._db.execute(
                "DELETE FROM idempotency WHERE status = ?", (STATUS_CONSTANTS["INPROGRESS"],)
            )
            return max(cursor.rowcount, 0)

    def mentioning(self, text: str) -> list[tuple[str, str | None]]:
        """(key, kept answer) of the records whose answer contains ``text``."""
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self._lock:
            rows = self._db.execute(
                "SELECT id, data FROM idempotency WHERE data LIKE ? ESCAPE '\\'", (pattern,)
            ).fetchall()
        return [(str(key), data) for key, data in rows]

    def delete_keys(self, keys: Sequence[str]) -> None:
        """Delete the records and rewrite the file without them (``scrub``: freed cells
        are zeroed by ``secure_delete``, copies left by page rebuilds only by the rewrite),
        then checkpoint the write-ahead log, which still holds them, away."""
        if not keys:
            return
        with self._lock:
            self._db.executemany("DELETE FROM idempotency WHERE id = ?", [(k,) for k in keys])
            if self.path != ":memory:":
                scrub(self._db)

    @staticmethod
    def _record(row: tuple[str, str, int, int | None, str, str]) -> DataRecord:
        key, status, expiration, in_progress, data, validation = row
        return DataRecord(
            idempotency_key=key,
            status=status,
            expiry_timestamp=expiration,
            in_progress_expiry_timestamp=in_progress,
            response_data=data,
            payload_hash=validation,
        )

    def _row(self, key: str) -> DataRecord | None:
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM idempotency WHERE id = ?", (key,)
        ).fetchone()
        return None if row is None else self._record(row)

    def _get_record(self, idempotency_key: str) -> DataRecord:
        with self._lock:
            record = self._row(idempotency_key)
        if record is None:
            raise IdempotencyItemNotFoundError
        return record

    @staticmethod
    def _replaceable(old: DataRecord, now: float) -> bool:
        """As the DynamoDB layer's condition: expired, or in progress past its expiry."""
        if (old.expiry_timestamp or 0) < int(now):
            return True
        stale_since = old.in_progress_expiry_timestamp
        return (
            old.status == STATUS_CONSTANTS["INPROGRESS"]
            and stale_since is not None
            and stale_since < int(now * 1000)
        )

    def _put_record(self, data_record: DataRecord) -> None:
        now = time.time()
        with self._lock:
            self._db.execute("DELETE FROM idempotency WHERE expiration < ?", (int(now),))
            old = self._row(data_record.idempotency_key)
            if old is not None and not self._replaceable(old, now):
                self._validate_payload(data_payload=data_record, stored_data_record=old)
                raise IdempotencyItemAlreadyExistsError(old_data_record=old)
            self._db.execute(
                f"INSERT OR REPLACE INTO idempotency ({_COLUMNS}) VALUES (?, ?, ?, ?, '', ?)",
                (
                    data_record.idempotency_key,
                    data_record.status,
                    data_record.expiry_timestamp,
                    data_record.in_progress_expiry_timestamp,
                    data_record.payload_hash if self.payload_validation_enabled else "",
                ),
            )

    def _update_record(self, data_record: DataRecord) -> None:
        with self._lock:
            self._db.execute(
                "UPDATE idempotency SET data = ?, expiration = ?, status = ? WHERE id = ?",
                (
                    data_record.response_data,
                    data_record.expiry_timestamp,
                    data_record.status,
                    data_record.idempotency_key,
                ),
            )

    def _delete_record(self, data_record: DataRecord) -> None:
        with self._lock:
            self._db.execute("DELETE FROM idempotency WHERE id = ?", (data_record.idempotency_key,))
