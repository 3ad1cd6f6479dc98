"""Putting memories in: ``store`` one, or ``import`` a whole conversation in batches."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json, fail, make_console, table
from hindsight.cli.state import JsonFlag, cli_state, given, open_service
from hindsight.cli.transcript import (
    Format,
    ParsedTurn,
    TranscriptFormatError,
    parse_conversation,
)
from hindsight.core.commands import (
    MAX_BATCH_ITEMS,
    StoreBatchCommand,
    StoreMemoryCommand,
    StoreOutcome,
)
from hindsight.core.errors import HindsightError
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService

logger = logging.getLogger(__name__)


def _parse_metadata(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"not valid JSON ({exc.msg})", param_hint="--metadata") from exc
    if not isinstance(value, dict):
        raise typer.BadParameter("must be a JSON object", param_hint="--metadata")
    return value


@handles_errors
def store(
    ctx: typer.Context,
    user_id: Annotated[str, typer.Argument(help="Whose memory this is.")],
    content: Annotated[str, typer.Argument(help="What was said or happened.")],
    session_id: Annotated[str | None, typer.Option(help="Conversation session.")] = None,
    scope: Annotated[str | None, typer.Option(help="Scope (default 'global').")] = None,
    category: Annotated[str | None, typer.Option(help="Category label.")] = None,
    emotion: Annotated[str | None, typer.Option(help="Emotion label.")] = None,
    speaker: Annotated[str | None, typer.Option(help="Who said it.")] = None,
    occurred_at: Annotated[
        str | None, typer.Option(help="When it happened, ISO 8601 (default now).")
    ] = None,
    ttl_seconds: Annotated[int | None, typer.Option(help="Expire after N seconds.")] = None,
    expires_at: Annotated[str | None, typer.Option(help="Expire at this ISO 8601 time.")] = None,
    metadata: Annotated[str | None, typer.Option(help="A JSON object kept as is.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Store one episodic memory (skipped if the same content was stored recently)."""
    state = cli_state(ctx, as_json)
    command = StoreMemoryCommand(
        **given(
            user_id=user_id,
            content=content,
            session_id=session_id,
            scope=scope,
            category=category,
            emotion=emotion,
            speaker=speaker,
            occurred_at=occurred_at,
            ttl_seconds=ttl_seconds,
            expires_at=expires_at,
            metadata=_parse_metadata(metadata),
        )
    )
    service, principal = open_service(state)
    outcome = service.store(principal, command)
    if state.json_output:
        emit_json(outcome.model_dump(mode="json", exclude_none=True))
        return
    console = make_console()
    if outcome.status == "success":
        console.print(f"[green]stored[/green] {outcome.memory_id}")
    else:
        console.print(
            f"[yellow]skipped[/yellow] ({outcome.reason or 'duplicate'}): "
            f"same as {outcome.memory_id}"
        )
    for span in outcome.event_time:
        console.print(
            f"  refers to {span.expression!r}: {span.start.isoformat()} .. {span.end.isoformat()}",
            markup=False,
        )


def _read_conversation(file: Path) -> str:
    if str(file) == "-":
        return sys.stdin.read()
    try:
        return file.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise typer.BadParameter(f"{file} does not exist", param_hint="FILE") from exc
    except IsADirectoryError as exc:
        raise typer.BadParameter(f"{file} is a directory", param_hint="FILE") from exc
    except UnicodeDecodeError as exc:
        raise typer.BadParameter(f"{file} is not UTF-8 text", param_hint="FILE") from exc


def _store_chunk(
    service: MemoryService, principal: Principal, user_id: str, chunk: list[ParsedTurn]
) -> list[tuple[ParsedTurn, StoreOutcome | None, str | None]]:
    """Store one batch; if the batch fails as a whole, retry its turns one by one."""
    items = [turn.item for turn in chunk if turn.item is not None]
    try:
        outcomes = service.store_batch(principal, StoreBatchCommand(user_id=user_id, items=items))
        return [(turn, outcome, None) for turn, outcome in zip(chunk, outcomes, strict=True)]
    except HindsightError as exc:
        if len(chunk) == 1:
            return [(chunk[0], None, exc.message)]
        logger.info("batch failed, storing one by one reason=%s", exc.message)
    results: list[tuple[ParsedTurn, StoreOutcome | None, str | None]] = []
    for turn in chunk:
        results.extend(_store_chunk(service, principal, user_id, [turn]))
    return results


@handles_errors
def import_conversation(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(help="JSON array, JSON Lines or 'Speaker: text' transcript; - reads stdin."),
    ],
    user_id: Annotated[str, typer.Option("--user-id", help="Whose conversation this is.")],
    session_id: Annotated[
        str | None, typer.Option(help="Session for turns that name none.")
    ] = None,
    batch_size: Annotated[
        int, typer.Option(min=1, max=MAX_BATCH_ITEMS, help="Turns per store call.")
    ] = MAX_BATCH_ITEMS,
    fmt: Annotated[str, typer.Option("--format", help="auto, json, jsonl or text.")] = "auto",
    as_json: JsonFlag = False,
) -> None:
    """Import a conversation in batches; duplicates are skipped, bad lines reported."""
    state = cli_state(ctx, as_json)
    if fmt not in {"auto", "json", "jsonl", "text"}:
        raise typer.BadParameter("use auto, json, jsonl or text", param_hint="--format")
    # validates --user-id and --session-id before anything is read or written
    StoreMemoryCommand(user_id=user_id, content="-", session_id=session_id)
    text = _read_conversation(file)
    service, principal = open_service(state)
    chosen_format: Format = fmt  # type: ignore[assignment]
    try:
        used, turns = parse_conversation(
            text,
            user_id=user_id,
            session_id=session_id,
            now=service.now(),
            fmt=chosen_format,
            suffix=file.suffix,
        )
    except TranscriptFormatError as exc:
        fail(f"{file}: {exc}", 2, as_json=state.json_output)
    if not turns:
        fail(f"{file}: no conversation turns found", 1, as_json=state.json_output)

    valid = [turn for turn in turns if turn.item is not None]
    rows: list[dict[str, Any]] = [
        {"line": turn.line, "status": "failed", "memory_id": None, "reason": turn.error}
        for turn in turns
        if turn.item is None
    ]
    err_console = make_console(stderr=True)
    progress = Progress(
        TextColumn("importing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        disable=state.json_output or not err_console.is_terminal,
    )
    with progress:
        task = progress.add_task("import", total=len(valid))
        for start in range(0, len(valid), batch_size):
            chunk = valid[start : start + batch_size]
            for turn, outcome, error in _store_chunk(service, principal, user_id, chunk):
                if outcome is None:
                    rows.append(
                        {"line": turn.line, "status": "failed", "memory_id": None, "reason": error}
                    )
                else:
                    rows.append(
                        {
                            "line": turn.line,
                            "status": "stored" if outcome.status == "success" else "skipped",
                            "memory_id": outcome.memory_id,
                            "reason": outcome.reason,
                        }
                    )
            progress.advance(task, len(chunk))
    rows.sort(key=lambda row: row["line"])
    counts = {
        name: sum(row["status"] == name for row in rows) for name in ("stored", "skipped", "failed")
    }
    if state.json_output:
        emit_json({"status": "success", "format": used, **counts, "items": rows})
    else:
        console = make_console()
        console.print(
            f"[green]stored {counts['stored']}[/green], "
            f"[yellow]skipped {counts['skipped']}[/yellow] (duplicates), "
            f"[red]failed {counts['failed']}[/red] — {len(turns)} turns read as {used}"
        )
        failures = [row for row in rows if row["status"] == "failed"]
        if failures:
            console.print(
                table("failed", ["line", "reason"], ((r["line"], r["reason"]) for r in failures))
            )
    if counts["failed"]:
        raise typer.Exit(1)
