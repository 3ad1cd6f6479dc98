"""Putting memories in: ``store`` one, or ``import`` a whole conversation history.

The import itself (formats, streaming, resuming, limits) is in ``hindsight.cli.importing``;
this module holds the commands' options and renders the import's progress and summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from hindsight import bootstrap
from hindsight.cli import documents
from hindsight.cli.chat_exports import FORMATS, Format, parse_time
from hindsight.cli.errors import handles_errors
from hindsight.cli.importing import (
    ImportOptions,
    ImportStoppedError,
    ImportSummary,
    TurnWriter,
    default_base_time,
    plan_import,
    run_import,
)
from hindsight.cli.output import emit_json, fail, make_console, table
from hindsight.cli.progress import embedding_bar
from hindsight.cli.state import (
    CliState,
    JsonFlag,
    cli_state,
    given,
    open_service,
    parse_metadata,
)
from hindsight.cli.transcript import TranscriptFormatError, open_source, unreadable_file
from hindsight.core.commands import MAX_BATCH_ITEMS, StoreMemoryCommand
from hindsight.settings import Settings

SHOWN_SESSIONS = 20  # sessions listed in the table; --json lists them all
SHOWN_REFUSALS = 50  # refused turns listed in the table; --json lists up to MAX_REPORTED


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
            metadata=parse_metadata(metadata),
        )
    )
    service, principal = open_service(state)
    with embedding_bar("storing", state.json_output):
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


def content_limit(settings: Settings) -> int:
    """The longest content one memory may have (HINDSIGHT_MAX_CONTENT_CHARS)."""
    return settings.max_content_chars


def _chosen_format(fmt: str) -> Format:
    if fmt not in FORMATS:
        raise typer.BadParameter(f"use one of {', '.join(FORMATS)}", param_hint="--format")
    return fmt  # type: ignore[return-value]


def _base_time(occurred_at: str | None) -> Any:
    if occurred_at is None:
        return None
    try:
        return parse_time(occurred_at, "--occurred-at")
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--occurred-at") from exc


@handles_errors
def import_conversation(
    ctx: typer.Context,
    file: Annotated[
        Path | None,
        typer.Argument(
            help="JSON Lines, a JSON document (turns, OpenAI-style chats, ChatGPT's "
            "conversations.json, dated sessions) or a 'Speaker: text' transcript; - reads stdin."
        ),
    ] = None,
    *,
    user_id: Annotated[str, typer.Option("--user-id", help="Whose conversation this is.")],
    document: Annotated[
        Path | None,
        typer.Option(
            "--file",
            exists=True,
            dir_okay=False,
            readable=True,
            help="Instead of a conversation: a document (.md .txt .html .pdf .docx) stored as "
            "one memory, replaced when imported again (as `hindsight document add`).",
        ),
    ] = None,
    document_id: Annotated[
        str | None,
        typer.Option(help="With --file: what the document is known by (default its name)."),
    ] = None,
    session_id: Annotated[
        str | None,
        typer.Option(help="Session for turns that name none (and the base of generated names)."),
    ] = None,
    batch_size: Annotated[
        int, typer.Option(min=1, max=MAX_BATCH_ITEMS, help="Turns per store call.")
    ] = MAX_BATCH_ITEMS,
    fmt: Annotated[str, typer.Option("--format", help=f"One of {', '.join(FORMATS)}.")] = "auto",
    occurred_at: Annotated[
        str | None,
        typer.Option(
            help="When the last turn without a time of its own happened (earlier ones a "
            "second apart); default the file's modification time, now for stdin."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Import a conversation history; a re-run resumes it (nothing is stored twice).

    With --file, import a document instead: one memory, replaced when imported again."""
    if (file is None) == (document is None):
        raise typer.BadParameter(
            "give a conversation FILE, or a document with --file PATH (not both)",
            param_hint="FILE",
        )
    if document is not None:
        documents.add(
            ctx,
            document,
            user_id=user_id,
            document_id=document_id,
            file_name=None,
            content_type=None,
            scope=None,
            session_id=session_id,
            category=None,
            occurred_at=occurred_at,
            metadata=None,
            as_json=as_json,
        )
        return
    assert file is not None
    state = cli_state(ctx, as_json)
    chosen = _chosen_format(fmt)
    base_time = _base_time(occurred_at)
    # validates --user-id and --session-id before anything is read or written
    StoreMemoryCommand(user_id=user_id, content="-", session_id=session_id)
    problem = unreadable_file(file)
    if problem is not None:
        raise typer.BadParameter(problem, param_hint="FILE")
    with open_source(file) as source:
        service, principal = open_service(state)
        settings = bootstrap.get_settings()
        options = ImportOptions(
            user_id=user_id,
            session_id=session_id,
            fmt=chosen,
            content_limit=content_limit(settings),
            dedup_window_seconds=settings.dedup_window_seconds,
            base_time=base_time or default_base_time(source.modified_at, service.now()),
            batch_size=batch_size,
        )
        try:
            plan = plan_import(source.path, source.name, options)
        except TranscriptFormatError as exc:
            fail(f"{source.name}: {exc}", 2, as_json=state.json_output)
        if not plan.turns:
            fail(f"{source.name}: no conversation turns found", 1, as_json=state.json_output)
        summary = ImportSummary(format=plan.label, turns=plan.turns)
        writer = TurnWriter(service, principal, user_id, settings.dedup_window_seconds)
        progress = _progress(state)
        with progress:
            task = progress.add_task("import", total=plan.turns)
            try:
                run_import(
                    source.path, plan, options, writer, summary, lambda n: progress.advance(task, n)
                )
            except ImportStoppedError as exc:
                summary.stopped = f"stopped at {exc.where}: {exc.reason}"
            except KeyboardInterrupt:
                summary.stopped = "interrupted"
    _report(summary, state)
    if summary.stopped == "interrupted":
        raise typer.Exit(130)  # as a shell reports Ctrl-C
    if summary.stopped or summary.totals.refused:
        raise typer.Exit(1)


def _progress(state: CliState) -> Progress:
    err_console = make_console(stderr=True)
    return Progress(
        TextColumn("importing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        disable=state.json_output or not err_console.is_terminal,
    )


def _report(summary: ImportSummary, state: CliState) -> None:
    if state.json_output:
        emit_json(summary.to_json())
        return
    console = make_console()
    totals = summary.totals
    console.print(
        f"[green]stored {totals.stored}[/green], "
        f"[yellow]skipped {totals.skipped}[/yellow] (duplicates), "
        f"[red]refused {totals.refused}[/red], ignored {totals.ignored} — "
        f"{summary.turns} turns read as {summary.format}"
    )
    if len(summary.sessions) > 1:
        _sessions_table(console, summary)
    if summary.refusals:
        rows = [(r.where, r.session_id or "", r.reason) for r in summary.refusals]
        console.print(table("refused", ["where", "session", "reason"], rows[:SHOWN_REFUSALS]))
        if totals.refused > SHOWN_REFUSALS:
            console.print(f"… and {totals.refused - SHOWN_REFUSALS} more refused (see --json)")
    if summary.ignored_reasons:
        reasons = ", ".join(f"{n} {why}" for why, n in summary.ignored_reasons.most_common())
        console.print(f"ignored (not conversation turns): {reasons}", markup=False)
    if summary.stopped:
        console.print(
            f"{summary.stopped}; run the same command again to resume "
            "(turns already stored are skipped)",
            style="red",
            markup=False,
        )


def _sessions_table(console: Console, summary: ImportSummary) -> None:
    rows = [
        (session_id or "(none)", t.stored, t.skipped, t.refused, t.ignored)
        for session_id, t in list(summary.sessions.items())[:SHOWN_SESSIONS]
    ]
    columns = ["session", "stored", "skipped", "refused", "ignored"]
    console.print(table("by session", columns, rows))
    if len(summary.sessions) > SHOWN_SESSIONS:
        console.print(f"… and {len(summary.sessions) - SHOWN_SESSIONS} more sessions (see --json)")
