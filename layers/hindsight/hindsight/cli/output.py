"""Rendering for the CLI: rich tables for people, JSON for machines, one-line errors."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from enum import Enum
from pathlib import Path
from typing import Any, NoReturn

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

CONTENT_WIDTH = 80
WRAPPED_COLUMNS = frozenset({"content", "why", "reason", "value"})
PIPE_WIDTH = 160  # table width when stdout is not a terminal (files, pipes, tests)


def make_console(stderr: bool = False) -> Console:
    """A console bound to the current stdout/stderr, never wrapping tables at 80 in pipes."""
    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal:
        console.width = PIPE_WIDTH
    return console


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, Path):
        return str(value)
    return str(value)


def emit_json(data: Any) -> None:
    """Print one JSON document on stdout."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=_json_default))


def fail(message: str, code: int = 1, *, as_json: bool = False) -> NoReturn:
    """One red line on stderr (plus a JSON error on stdout in --json mode), then exit."""
    line = " ".join(message.split())
    if as_json:
        emit_json({"status": "error", "message": line})
    typer.secho(f"error: {line}", fg="red", err=True)
    raise typer.Exit(code)


def validation_messages(
    exc: ValidationError, name_of: Callable[[str], str] | None = None
) -> list[str]:
    """Pydantic errors as ``field: message`` lines a person can act on.

    ``name_of`` renames a top-level field (e.g. to the CLI option that set it).
    """
    messages: list[str] = []
    for error in exc.errors(include_url=False):
        parts = [str(part) for part in error.get("loc", ())]
        if parts and name_of is not None:
            parts = [name_of(parts[0])]  # the option names the value; item indexes add noise
        location = ".".join(parts)
        text = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        messages.append(f"{location}: {text}" if location else text)
    return messages


def shorten(text: str | None, width: int = CONTENT_WIDTH) -> str:
    """One line of at most ``width`` characters."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def when(value: Any) -> str:
    """The date part of an ISO timestamp or datetime ('' when absent)."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.date().isoformat()
    return str(value)[:10]


def format_why(why: Mapping[str, Any]) -> str:
    """Score parts as ``name=value`` pairs, numbers to three decimals."""
    parts: list[str] = []
    for name, value in why.items():
        if isinstance(value, Mapping):
            parts.extend(f"{name}.{key}={_number(inner)}" for key, inner in value.items())
        else:
            parts.append(f"{name}={_number(value)}")
    return " ".join(parts)


def _number(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (list, tuple)):
        return ",".join(_number(v) for v in value)
    return str(value)


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Table:
    """A table whose cells are literal text (user content is never read as rich markup)."""
    grid = Table(title=title, show_lines=False, title_justify="left")
    for name in columns:
        if name in WRAPPED_COLUMNS:
            grid.add_column(name, overflow="fold", ratio=1)
        else:
            grid.add_column(name, no_wrap=True)
    for row in rows:
        grid.add_row(*(cell if isinstance(cell, Text) else Text(_cell(cell)) for cell in row))
    return grid


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=_json_default)
    return str(value)


def summary_line(result: Mapping[str, Any], skip: Iterable[str] = ("status",)) -> str:
    """Scalar fields of a result as ``key=value`` pairs, for one-line confirmations."""
    skipped = set(skip)
    pairs = [
        f"{key}={_number(value)}"
        for key, value in result.items()
        if key not in skipped and isinstance(value, (str, int, float, bool))
    ]
    return " ".join(pairs)


def print_fields(fields: Mapping[str, Any]) -> None:
    """A mapping (one memory, a health report) as a two-column field/value table."""
    make_console().print(table(None, ["field", "value"], list(fields.items())))
