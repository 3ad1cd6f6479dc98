"""What a local server checks before it listens, whichever server it is.

- ``prepare_settings``: keyless (no API keys configured) only on a loopback host, where
  anonymous access is then on unless switched off;
- ``DataDirLock``: one server per embedded data directory. Two processes would each
  hold their own in-process index over one SQLite file, and each would miss the
  other's writes (and overwrite the other's saved graphs); the second is refused with
  the pid of the first. The lock is an ``flock`` on ``<data dir>/serve.lock``, so it dies
  with its process: a server killed with SIGKILL leaves no stale lock behind.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from hindsight.api.auth import load_key_ring
from hindsight.core.errors import ConfigurationError
from hindsight.settings import Settings

logger = logging.getLogger(__name__)

KEYLESS_WARNING = "no API keys configured: serving keyless on {host} — do not expose this port"
LOCK_FILE = "serve.lock"
EXAMPLE_USER = "test_user"  # the README's examples' user
IDEMPOTENCY_FILE = "idempotency.db"  # hindsight.api.idempotency's SQLite records


class ServerStartError(ConfigurationError):
    """The server cannot start as asked (an unsafe keyless bind, a data dir in use...)."""


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` keeps the port private to this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def prepare_settings(
    host: str,
    data_dir: str | Path | None = None,
    allow_anonymous: bool | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Settings, bool]:
    """Settings for a local server and whether it serves keyless.

    Keyless (no keys configured) is allowed only on a loopback host; there anonymous
    access is on unless switched off explicitly (flag or HINDSIGHT_ALLOW_ANONYMOUS).
    """
    env = os.environ if environ is None else environ
    settings = Settings.from_env(env, data_dir=data_dir, allow_anonymous=allow_anonymous)
    if len(load_key_ring(settings)) > 0:
        return settings, False
    if not is_loopback(host):
        raise ServerStartError(
            f"refusing to serve without API keys on {host}: anyone who can reach the port "
            "could read every memory. Configure keys (HINDSIGHT_API_KEYS_FILE) or bind to "
            "127.0.0.1"
        )
    if allow_anonymous is None and "HINDSIGHT_ALLOW_ANONYMOUS" not in env:
        settings = Settings.from_env(env, data_dir=data_dir, allow_anonymous=True)
    return settings, settings.allow_anonymous


class DataDirInUseError(ServerStartError):
    """Another server holds the embedded data directory."""


class DataDirLock:
    """An exclusive lock on an embedded data directory for the life of one server.

    ``acquire()`` raises ``DataDirInUseError`` naming the pid that holds it; the
    lock is released by ``release()`` or when the process ends, however it ends.
    """

    def __init__(self, data_dir: str | Path) -> None:
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / LOCK_FILE
        self._file: IO[str] | None = None

    def acquire(self) -> DataDirLock:
        try:
            import fcntl
        except ImportError:  # not POSIX: no advisory locks to rely on
            logger.warning("data dir lock unavailable on this platform dir=%s", self.data_dir)
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise DataDirInUseError(
                f"another Hindsight server (pid {holder}) is serving {self.data_dir.resolve()}: "
                "two servers on one embedded store would each keep their own index and lose "
                "each other's writes. Stop it first, send requests to it instead, or give "
                "this one another --data-dir"
            ) from exc
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._file = handle
        return self

    def release(self) -> None:
        handle, self._file = self._file, None
        if handle is None:
            return
        handle.truncate(0)  # the pid no longer names a server
        handle.close()  # closing the descriptor releases the flock

    def __enter__(self) -> DataDirLock:
        return self.acquire()

    def __exit__(self, *_: object) -> None:
        self.release()


def lock_data_dir(settings: Settings) -> DataDirLock | None:
    """The data directory's lock for an embedded backend (None for the others: the
    memory backend keeps nothing, the AWS backend's state is in DynamoDB/OpenSearch).

    Once it holds the lock, the server is the data directory's only writer, so a store
    still marked in progress there was cut short by a server that was killed; its mark is
    released (``release_interrupted_writes``) so that the client's retry with the same
    ``Idempotency-Key`` runs now instead of being answered 409 until the mark lapses."""
    if settings.backend.strip().lower() != "embedded":
        return None
    lock = DataDirLock(settings.data_dir).acquire()
    try:
        release_interrupted_writes(settings.data_dir)
    except BaseException:
        lock.release()
        raise
    return lock


def release_interrupted_writes(data_dir: str | Path) -> int:
    """Release the in-progress idempotency marks in ``data_dir`` (how many there were).

    Call it only while holding the data directory's lock, before serving. A retried store
    then runs again: if the killed server had committed it, the dedup window answers the
    retry with the memory it stored (``skipped``, same id), so nothing is stored twice."""
    path = Path(data_dir) / IDEMPOTENCY_FILE
    if not path.exists():
        return 0
    from hindsight.adapters.embedded.sqlite_idempotency import SqliteIdempotencyStore

    store = SqliteIdempotencyStore(path)
    try:
        released = store.release_in_progress()
    finally:
        store.close()
    if released:
        logger.warning(
            "released %d idempotency marks of requests a previous server did not finish",
            released,
        )
    return released


def banner(
    title: str,
    url: str,
    host: str,
    settings: Settings,
    keyless: bool,
    details: list[tuple[str, str]],
) -> str:
    """What a local server prints once it is ready: where, what, and a first request."""
    lines = [f"{title} listening on {url}"]
    lines += [f"  {name:<9}: {value}" for name, value in details]
    auth = "" if keyless else ' -H "Authorization: Bearer $HINDSIGHT_KEY"'
    if keyless:
        lines.append("WARNING: " + KEYLESS_WARNING.format(host=host))
    elif not settings.allow_anonymous:
        lines.append("  auth     : API keys required (Authorization: Bearer <key>)")
    lines += [
        "Try:",
        f"  curl -s -X POST {url}/v1/memories{auth} -H 'Content-Type: application/json' "
        f'-d \'{{"user_id": "{EXAMPLE_USER}", "content": "用户对花生过敏", '
        '"category": "constraint"}\'',
        f"  curl -s -X POST {url}/v1/retrieve{auth} -H 'Content-Type: application/json' "
        f'-d \'{{"user_id": "{EXAMPLE_USER}", "query": "饮食禁忌"}}\'',
        f"Memory explorer: {url}/explorer?user_id={EXAMPLE_USER}",
    ]
    return "\n".join(lines)


def data_details(settings: Settings) -> list[tuple[str, str]]:
    details = [("backend", settings.backend)]
    if settings.backend.strip().lower() == "embedded":
        details.append(("data dir", str(Path(settings.data_dir).resolve())))
    return details
