"""The server's log lines: text for a terminal, JSON lines for a log collector.

Every record goes to stderr, one line each. A record may carry key/value ``fields``
(``logger.info("request", extra={"fields": {...}})``): the text format appends them as
``key=value``, the JSON format puts them beside ``time``, ``level``, ``logger`` and
``message``::

    2026-06-01T09:00:00.123Z INFO hindsight.server request method=POST path=/v1/memories
    status=201 ms=41.7 tenant=acme key_id=calendar-agent request_id=6f1c...
    {"time": "2026-06-01T09:00:00.123Z", "level": "INFO", "logger": "hindsight.server",
     "message": "request", "method": "POST", "path": "/v1/memories", "status": 201, ...}
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

LOG_FORMATS = ("text", "json")


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = getattr(record, "fields", None)
    return dict(fields) if isinstance(fields, dict) else {}


def _text_value(value: Any) -> str:
    text = str(value)
    return json.dumps(text, ensure_ascii=False) if (" " in text or not text) else text


class TextFormatter(logging.Formatter):
    """``<time> <LEVEL> <logger> <message> key=value ...`` (and the traceback, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {record.levelname} {record.name} {record.getMessage()}"
        extra = " ".join(f"{k}={_text_value(v)}" for k, v in _fields(record).items())
        if extra:
            line = f"{line} {extra}"
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line; a traceback goes in ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in _fields(record).items():
            entry.setdefault(key, value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(log_format: str = "text", level: int = logging.INFO) -> None:
    """Send every log record (the server's, uvicorn's, the service's) to stderr in
    ``log_format``; replaces handlers set up before, the Lambda handlers' Powertools
    logger's included (it writes its own JSON to stdout, for CloudWatch)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "hindsight"):
        named = logging.getLogger(name)
        named.handlers.clear()
        named.propagate = True
        named.setLevel(logging.NOTSET)
