"""Retrieve's page cursors: opaque, tied to one query, freezing ``as_of`` so pages agree."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime

from hindsight.core.commands import RetrieveCommand
from hindsight.core.errors import InvalidRequestError
from hindsight.core.models import utc


def fingerprint(command: RetrieveCommand) -> str:
    fields = command.model_dump(mode="json", exclude={"cursor", "top_k", "as_of"})
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def encode_cursor(offset: int, as_of: datetime, fingerprint: str) -> str:
    raw = json.dumps({"o": offset, "a": as_of.isoformat(), "f": fingerprint})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, fingerprint: str) -> tuple[int, datetime]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        offset, as_of, seen = int(data["o"]), utc(datetime.fromisoformat(data["a"])), data["f"]
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidRequestError(
            "cursor is invalid; pass next_cursor exactly as a previous response returned it"
        ) from exc
    if seen != fingerprint or offset < 0:
        raise InvalidRequestError(
            "cursor belongs to a different query; repeat the same query and filters "
            "with the cursor, or drop the cursor to start again"
        )
    return offset, as_of
