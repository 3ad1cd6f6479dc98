"""Parse a conversation file for ``hindsight import`` into validated batch items.

Three formats: a JSON array of objects, JSON Lines (one object a line), or a plain-text
transcript of ``Speaker: text`` lines. Objects carry the StoreMemoryCommand fields.
Every turn is validated on its own; a bad one is reported with its line number and
skipped, so the rest can still be imported.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import ValidationError

from hindsight.cli.output import validation_messages
from hindsight.core.commands import BatchItem

Format = Literal["auto", "json", "jsonl", "text"]

_TURN = re.compile(r"^(?P<speaker>[^:：\s][^:：]{0,63}?)\s*[:：]\s*(?P<content>\S.*)$")
_SUFFIX_FORMATS = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".txt": "text"}


class TranscriptFormatError(ValueError):
    """The file as a whole cannot be read in the chosen format (nothing is imported)."""


@dataclass(frozen=True)
class _Unreadable:
    reason: str


@dataclass(frozen=True)
class ParsedTurn:
    """One turn of the file: a valid item, or the reason it was skipped."""

    line: int
    item: BatchItem | None = None
    error: str | None = None


def detect_format(text: str, suffix: str = "") -> Literal["json", "jsonl", "text"]:
    """The format named by the file suffix, else guessed from the first character."""
    by_suffix = _SUFFIX_FORMATS.get(suffix.lower())
    if by_suffix == "json":
        return "json"
    if by_suffix == "jsonl":
        return "jsonl"
    if by_suffix == "text":
        return "text"
    first = text.lstrip()[:1]
    if first == "[":
        return "json"
    if first == "{":
        return "jsonl"
    return "text"


def parse_conversation(
    text: str,
    *,
    user_id: str,
    session_id: str | None,
    now: datetime,
    fmt: Format = "auto",
    suffix: str = "",
) -> tuple[str, list[ParsedTurn]]:
    """Return the format used and one ParsedTurn per turn, in file order.

    Turns without ``occurred_at`` get ``now`` minus one millisecond per later turn, so
    their order survives and none lies in the future.
    """
    chosen = detect_format(text, suffix) if fmt == "auto" else fmt
    if chosen == "json":
        raw = _json_array(text)
    elif chosen == "jsonl":
        raw = _json_lines(text)
    else:
        raw = _text_lines(text)
    turns: list[ParsedTurn] = []
    for position, (line, value) in enumerate(raw):
        if isinstance(value, _Unreadable):
            turns.append(ParsedTurn(line=line, error=value.reason))
            continue
        default_time = now - timedelta(milliseconds=len(raw) - 1 - position)
        turns.append(_validate(line, value, user_id, session_id, default_time))
    return chosen, turns


def _validate(
    line: int, value: Any, user_id: str, session_id: str | None, default_time: datetime
) -> ParsedTurn:
    if not isinstance(value, dict):
        return ParsedTurn(line=line, error=f"expected a JSON object, got {type(value).__name__}")
    fields = dict(value)
    owner = fields.get("user_id")
    if owner is not None and owner != user_id:
        return ParsedTurn(line=line, error=f"user_id {owner!r} differs from --user-id {user_id!r}")
    if session_id is not None:
        fields.setdefault("session_id", session_id)
    if fields.get("occurred_at") is None:
        fields["occurred_at"] = default_time
    try:
        return ParsedTurn(line=line, item=BatchItem.model_validate(fields))
    except ValidationError as exc:
        return ParsedTurn(line=line, error="; ".join(validation_messages(exc)))


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _json_array(text: str) -> list[tuple[int, Any]]:
    """Decode a JSON array element by element, keeping each element's line number."""
    decoder = json.JSONDecoder()
    ws = re.compile(r"\s*")
    position = ws.match(text, 0).end()  # type: ignore[union-attr]
    if text[position : position + 1] != "[":
        raise TranscriptFormatError("a JSON conversation must be an array of objects: [...]")
    position = ws.match(text, position + 1).end()  # type: ignore[union-attr]
    elements: list[tuple[int, Any]] = []
    if text[position : position + 1] == "]":
        return elements
    while True:
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise TranscriptFormatError(
                f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from exc
        elements.append((_line_of(text, position), value))
        position = ws.match(text, end).end()  # type: ignore[union-attr]
        separator = text[position : position + 1]
        if separator == "]":
            trailing = text[position + 1 :].strip()
            if trailing:
                raise TranscriptFormatError(
                    f"unexpected text after the JSON array at line {_line_of(text, position + 1)}"
                )
            return elements
        if separator != ",":
            raise TranscriptFormatError(
                f"invalid JSON at line {_line_of(text, position)}: expected ',' or ']'"
            )
        position = ws.match(text, position + 1).end()  # type: ignore[union-attr]


def _json_lines(text: str) -> list[tuple[int, Any]]:
    """One JSON value per non-blank line; an undecodable line is marked unreadable."""
    values: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            values.append((number, _Unreadable(f"not valid JSON: {exc.msg} (column {exc.colno})")))
    return values


def _text_lines(text: str) -> list[tuple[int, Any]]:
    """``Speaker: text`` per line; blank lines and ``#`` comments are ignored."""
    values: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _TURN.match(stripped)
        if match is None:
            values.append((number, _Unreadable("expected 'Speaker: text'")))
            continue
        values.append(
            (number, {"speaker": match["speaker"].strip(), "content": match["content"].strip()})
        )
    return values
