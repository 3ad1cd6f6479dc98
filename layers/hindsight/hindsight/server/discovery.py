"""How other processes find the server that holds an embedded data directory.

``hindsight serve`` is the only writer of its data directory (``startup.DataDirLock``),
so the CLI and ``hindsight mcp`` on that directory become its clients instead of
second writers. The server says where it listens in ``<data dir>/server.json``: its
address, its process id and whether it asks for API keys (never a key). The file is
written once the server answers and removed when it stops; a file left behind by a
server that was killed is ignored: its process is gone, or its address does not answer
as a Hindsight server.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path

import httpx
from pydantic import BaseModel, ValidationError

logger = logging.getLogger(__name__)

SERVER_FILE = "server.json"
PROBE_TIMEOUT_SECONDS = 3.0
# a wildcard address is where the server listens, not where a client connects
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


class ServerRecord(BaseModel):
    """What ``server.json`` holds: where the server answers and who it is."""

    url: str
    pid: int
    keys_required: bool
    data_dir: str
    started_at: datetime


def client_url(host: str, port: int) -> str:
    """The URL a client on this machine uses for a server bound to ``host:port``."""
    host = _WILDCARDS.get(host, host)
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def write_record(data_dir: str | Path, url: str, keys_required: bool) -> ServerRecord:
    """Write ``server.json`` for this process (atomically: a reader sees all of it or
    nothing)."""
    directory = Path(data_dir)
    record = ServerRecord(
        url=url,
        pid=os.getpid(),
        keys_required=keys_required,
        data_dir=str(directory.resolve()),
        started_at=datetime.now(UTC),
    )
    path = directory / SERVER_FILE
    partial = path.with_name(f".{SERVER_FILE}.{os.getpid()}")
    partial.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    partial.replace(path)
    return record


def remove_record(data_dir: str | Path) -> None:
    """Remove ``server.json`` if this process wrote it (a newer server's file stays)."""
    path = Path(data_dir) / SERVER_FILE
    record = read_record(data_dir)
    if record is not None and record.pid == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def read_record(data_dir: str | Path) -> ServerRecord | None:
    """The record in ``data_dir`` as written, or None (no file, or not a record)."""
    try:
        text = (Path(data_dir) / SERVER_FILE).read_text(encoding="utf-8")
        return ServerRecord.model_validate(json.loads(text))
    except (OSError, ValueError, ValidationError):
        return None


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (signal 0 checks without sending)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    except OSError:
        return False
    return True


def answers(url: str, timeout: float = PROBE_TIMEOUT_SECONDS) -> bool:
    """Whether ``url`` answers ``GET /v1/health`` as a Hindsight server does."""
    try:
        response = httpx.get(f"{url}/v1/health", timeout=timeout)
        body = response.json()
    except (httpx.HTTPError, ValueError):
        return False
    return response.status_code == 200 and isinstance(body, dict) and "status" in body


def find_server(data_dir: str | Path) -> ServerRecord | None:
    """The live server holding ``data_dir``, or None when none does (no file, or a
    stale one: its process is gone or its address does not answer)."""
    record = read_record(data_dir)
    if record is None:
        return None
    if not process_alive(record.pid):
        logger.info("ignoring a stale server file pid=%s (no such process)", record.pid)
        return None
    if not answers(record.url):
        logger.info("ignoring a stale server file url=%s (no answer)", record.url)
        return None
    return record
