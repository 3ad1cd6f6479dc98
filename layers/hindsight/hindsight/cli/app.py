"""The ``hindsight`` command line: the memory service in-process, tables or JSON out.

Every command parses its options into a core command, calls one MemoryService
method as the local tenant (or ``--tenant``) and renders the result. A service that
is already configured through ``hindsight.bootstrap.configure`` is used as is;
otherwise settings come from the environment (``HINDSIGHT_*``) and ``--data-dir``.
"""

from __future__ import annotations

import functools
import json
import logging
import subprocess
import sys
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text
from typer.models import ArgumentInfo

from hindsight import bootstrap
from hindsight.cli.output import (
    emit_json,
    fail,
    format_why,
    make_console,
    shorten,
    summary_line,
    table,
    validation_messages,
    when,
)
from hindsight.cli.transcript import (
    Format,
    ParsedTurn,
    TranscriptFormatError,
    parse_conversation,
)
from hindsight.core.commands import (
    MAX_BATCH_ITEMS,
    MAX_LIST_ITEMS,
    ContextCommand,
    ListMemoriesCommand,
    ListResult,
    ReflectCommand,
    RetrieveCommand,
    StoreBatchCommand,
    StoreMemoryCommand,
    StoreOutcome,
)
from hindsight.core.errors import HindsightError, UnavailableError
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from hindsight.settings import Settings

logger = logging.getLogger(__name__)

app = typer.Typer(
    name="hindsight",
    help="Long-term memory for LLM agents: store, retrieve, reflect, review and forget.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@dataclass
class CliState:
    """Global options, shared by every command through the typer context."""

    json_output: bool = False
    data_dir: Path | None = None
    tenant: str | None = None


JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print machine-readable JSON instead of tables.")
]

F = TypeVar("F", bound=Callable[..., Any])


@app.callback()
def _global_options(
    ctx: typer.Context,
    json_output: JsonFlag = False,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help="Data directory of the embedded store (default .hindsight or HINDSIGHT_DATA_DIR).",
        ),
    ] = None,
    tenant: Annotated[
        str | None,
        typer.Option(help="Act as this tenant (default HINDSIGHT_ANONYMOUS_TENANT, 'local')."),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log to stderr.")] = False,
) -> None:
    """Long-term memory for LLM agents: store, retrieve, reflect, review and forget."""
    if verbose:
        logging.basicConfig(
            level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
        )
    ctx.obj = CliState(json_output=json_output, data_dir=data_dir, tenant=tenant)


def _state(ctx: typer.Context, as_json: bool = False) -> CliState:
    state = ctx.find_object(CliState) or CliState()
    if as_json:
        state.json_output = True
    return state


# command fields whose option is named differently (plural field, repeatable option)
_FIELD_OPTIONS = {
    "scopes": "--scope",
    "kinds": "--kind",
    "categories": "--category",
    "emotions": "--emotion",
    "statuses": "--status",
}


def _cli_names(command: Callable[..., Any]) -> Callable[[str], str]:
    """Map a command field to what the user typed: ``USER_ID`` or ``--top-k``."""
    hints = typing.get_type_hints(command, include_extras=True)
    arguments = {
        name
        for name, hint in hints.items()
        if any(isinstance(extra, ArgumentInfo) for extra in getattr(hint, "__metadata__", ()))
    }

    def name_of(field: str) -> str:
        if field in arguments:
            return field.upper()
        return _FIELD_OPTIONS.get(field, "--" + field.replace("_", "-"))

    return name_of


def _handles_errors(command: F) -> F:
    """Expected errors become one red line and an exit code, never a traceback."""
    name_of = _cli_names(command)

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx: Any = kwargs.get("ctx")
        state = ctx.find_object(CliState) if hasattr(ctx, "find_object") else None
        as_json = bool(kwargs.get("as_json")) or (state is not None and state.json_output)
        try:
            return command(*args, **kwargs)
        except HindsightError as exc:
            fail(exc.message, 1, as_json=as_json)
        except ValidationError as exc:
            messages = validation_messages(exc, name_of)
            fail("invalid input: " + "; ".join(messages), 2, as_json=as_json)

    return wrapper  # type: ignore[return-value]


def _settings_and_service(data_dir: Path | None) -> tuple[Settings, MemoryService]:
    """The configured service if there is one, else one built from the environment."""
    configured = bootstrap.configured_service()
    if configured is not None:
        return bootstrap.get_settings(), configured
    settings = Settings.from_env(data_dir=data_dir)
    bootstrap.configure(settings)
    try:
        return settings, bootstrap.get_service()
    except ImportError as exc:  # an adapter or its optional dependency is not installed
        raise UnavailableError(
            f"cannot start the memory service ({settings.backend} backend): {exc}"
        ) from exc


def _open(state: CliState) -> tuple[MemoryService, Principal]:
    settings, service = _settings_and_service(state.data_dir)
    tenant = state.tenant if state.tenant is not None else settings.anonymous_tenant
    if not tenant.strip():
        raise typer.BadParameter("must not be empty", param_hint="--tenant")
    return service, Principal(tenant_id=tenant, key_id="cli")


def _given(**values: Any) -> dict[str, Any]:
    """Only the options the user actually gave, so the commands' defaults apply."""
    return {key: value for key, value in values.items() if value is not None}


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


# --- serve -----------------------------------------------------------------------------------


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65_535, help="TCP port.")] = 8080,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Data directory (overrides the global one).")
    ] = None,
    allow_anonymous: Annotated[
        bool | None,
        typer.Option(
            "--allow-anonymous/--no-allow-anonymous",
            help="Accept requests without an API key. Default: only when bound to loopback.",
        ),
    ] = None,
) -> None:
    """Serve the HTTP API locally (the same handlers as on AWS)."""
    state = _state(ctx)
    try:
        settings = Settings.from_env(data_dir=data_dir or state.data_dir)
        from hindsight.gateway.local_gateway import serve as serve_gateway
    except HindsightError as exc:
        fail(exc.message)
    except ImportError as exc:
        fail(f"the local gateway is not available: {exc}")
    try:
        serve_gateway(
            host=host, port=port, data_dir=settings.data_dir, allow_anonymous=allow_anonymous
        )
    except HindsightError as exc:
        fail(exc.message)
    except OSError as exc:
        fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        typer.echo("stopped", err=True)


# --- mcp -------------------------------------------------------------------------------------


def _mcp_principal(settings: Settings, api_key: str | None, tenant: str | None) -> Principal:
    """The key's principal, or the local anonymous one when no key is needed."""
    from hindsight.api.auth import UNKNOWN_KEY_MESSAGE, anonymous_principal, load_key_ring

    ring = load_key_ring(settings)
    if api_key:
        if len(ring) == 0:
            fail(
                "--api-key was given but no API keys are configured; set "
                "HINDSIGHT_API_KEYS_FILE (or HINDSIGHT_API_KEYS), or leave the key out"
            )
        principal = ring.lookup(api_key)
        if principal is None:
            fail(UNKNOWN_KEY_MESSAGE)
        return principal
    if len(ring) > 0 and not settings.allow_anonymous:
        fail(
            "API keys are configured: pass --api-key or set HINDSIGHT_API_KEY "
            "(or allow keyless local use with HINDSIGHT_ALLOW_ANONYMOUS=true)"
        )
    principal = anonymous_principal(settings)
    if tenant is not None:
        if not tenant.strip():
            raise typer.BadParameter("must not be empty", param_hint="--tenant")
        principal = principal.model_copy(update={"tenant_id": tenant})
    return principal


@app.command("mcp")
def mcp_server(
    ctx: typer.Context,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="HINDSIGHT_API_KEY",
            show_envvar=True,
            help="Act as this API key (its tenant and scopes). Default: the local tenant "
            "with every scope, when no keys are configured.",
        ),
    ] = None,
) -> None:
    """Serve the memory tools to an MCP client over stdio (Claude Desktop, Cursor, ...)."""
    state = _state(ctx)
    try:
        from hindsight.mcp.server import run_stdio

        configured = bootstrap.configured_service()
        if configured is not None:
            settings = bootstrap.get_settings()
        else:
            settings = Settings.from_env(data_dir=state.data_dir)
            bootstrap.configure(settings)
        principal = _mcp_principal(settings, api_key, state.tenant)
    except HindsightError as exc:
        fail(exc.message)
    except ImportError as exc:
        fail(f"the MCP server is not available (pip install mcp): {exc}")
    logger.info(
        "mcp stdio server starting tenant=%s key_id=%s", principal.tenant_id, principal.key_id
    )
    try:
        run_stdio(principal, (lambda: configured) if configured is not None else None)
    except KeyboardInterrupt:
        typer.echo("stopped", err=True)


# --- store / import --------------------------------------------------------------------------


@app.command()
@_handles_errors
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
    state = _state(ctx, as_json)
    command = StoreMemoryCommand(
        **_given(
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
    service, principal = _open(state)
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


@app.command("import")
@_handles_errors
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
    state = _state(ctx, as_json)
    if fmt not in {"auto", "json", "jsonl", "text"}:
        raise typer.BadParameter("use auto, json, jsonl or text", param_hint="--format")
    # validates --user-id and --session-id before anything is read or written
    StoreMemoryCommand(user_id=user_id, content="-", session_id=session_id)
    text = _read_conversation(file)
    service, principal = _open(state)
    chosen_format: Format = fmt  # type: ignore[assignment]
    try:
        used, turns = parse_conversation(
            text,
            user_id=user_id,
            session_id=session_id,
            now=service.clock.now(),
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


# --- retrieve / reflect / context -------------------------------------------------------------


@app.command()
@_handles_errors
def retrieve(
    ctx: typer.Context,
    user_id: Annotated[str, typer.Argument(help="Whose memories to search.")],
    query: Annotated[str, typer.Argument(help="What to look for.")],
    top_k: Annotated[
        int | None, typer.Option(help="Results per page (default 10, max 20).")
    ] = None,
    scope: Annotated[list[str] | None, typer.Option(help="Only these scopes (repeatable).")] = None,
    kind: Annotated[
        list[str] | None, typer.Option(help="episodic and/or semantic (repeatable).")
    ] = None,
    category: Annotated[list[str] | None, typer.Option(help="Only these categories.")] = None,
    emotion: Annotated[list[str] | None, typer.Option(help="Only these emotions.")] = None,
    status: Annotated[
        list[str] | None, typer.Option(help="Semantic statuses to include (default approved).")
    ] = None,
    session_id: Annotated[str | None, typer.Option(help="Only this session.")] = None,
    since: Annotated[str | None, typer.Option(help="Occurred at or after (ISO 8601).")] = None,
    until: Annotated[str | None, typer.Option(help="Occurred before (ISO 8601).")] = None,
    as_of: Annotated[str | None, typer.Option(help="Evaluate as if now were this time.")] = None,
    time_decay: Annotated[
        float | None, typer.Option(help="Daily decay factor (default 0.95; 1 switches it off).")
    ] = None,
    min_similarity: Annotated[float | None, typer.Option(help="Drop weaker matches.")] = None,
    cursor: Annotated[str | None, typer.Option(help="next_cursor of the previous page.")] = None,
    why: Annotated[bool, typer.Option("--why", help="Show the parts of each score.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Find the memories that matter for a query, facts first."""
    state = _state(ctx, as_json)
    command = RetrieveCommand(
        **_given(
            user_id=user_id,
            query=query,
            top_k=top_k,
            scopes=scope,
            kinds=kind,
            categories=category,
            emotions=emotion,
            statuses=status,
            session_id=session_id,
            since=since,
            until=until,
            as_of=as_of,
            time_decay=time_decay,
            min_similarity=min_similarity,
            cursor=cursor,
        )
    )
    service, principal = _open(state)
    result = service.retrieve(principal, command)
    if state.json_output:
        emit_json({"status": "success", **result.model_dump(mode="json")})
        return
    console = make_console()
    columns = ["#", "score", "kind", "when", "category", "memory_id", "content"]
    if why:
        columns.append("why")
    rows = []
    for rank, hit in enumerate(result.results, start=1):
        row: list[Any] = [
            rank,
            f"{hit.score:.3f}",
            hit.kind.value,
            when(hit.occurred_at),
            hit.category,
            hit.memory_id,
            shorten(hit.content),
        ]
        if why:
            row.append(format_why(hit.why))
        rows.append(row)
    if not rows:
        console.print("no matching memories")
    else:
        console.print(table(None, columns, rows))
    if result.query_time is not None:
        span = result.query_time
        console.print(
            f"query time {span.expression!r}: {when(span.start)} .. {when(span.end)}", markup=False
        )
    if result.partial:
        console.print("[yellow]partial: the time budget ran out before every source answered[/]")
    if result.next_cursor:
        console.print(f"more: --cursor {result.next_cursor}", markup=False)


_CHANGES = ("created", "updated", "superseded", "pending")


@app.command()
@_handles_errors
def reflect(
    ctx: typer.Context,
    user_id: Annotated[str, typer.Argument(help="Whose episodes to distil.")],
    since: Annotated[
        str | None, typer.Option(help="Episodes created after this (default: since last run).")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show, write nothing.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Distil recent episodes into facts (new facts wait for review)."""
    state = _state(ctx, as_json)
    command = ReflectCommand(**_given(user_id=user_id, since=since, dry_run=dry_run))
    service, principal = _open(state)
    result = service.reflect(principal, command)
    if state.json_output:
        emit_json({"status": "success", **result.model_dump(mode="json")})
        return
    console = make_console()
    note = " (dry run: nothing written)" if result.dry_run else ""
    console.print(
        f"reflector {result.reflector}: {result.episodes_considered} episodes considered{note}",
        markup=False,
    )
    facts: dict[str, dict[str, Any]] = {}
    changes: dict[str, list[str]] = {}
    for change in _CHANGES:
        for fact in getattr(result, change):
            key = str(fact.get("memory_id") or id(fact))
            facts.setdefault(key, fact)
            changes.setdefault(key, []).append(change)
    if not facts:
        console.print("no new facts")
        return
    rows = [
        (
            ", ".join(changes[key]),
            fact.get("memory_id"),
            fact.get("status"),
            fact.get("confidence"),
            fact.get("category"),
            shorten(fact.get("content")),
            len(fact.get("source_memory_ids") or []),
        )
        for key, fact in facts.items()
    ]
    console.print(
        table(
            None,
            ["change", "memory_id", "status", "confidence", "category", "content", "sources"],
            rows,
        )
    )


@app.command()
@_handles_errors
def context(
    ctx: typer.Context,
    user_id: Annotated[str, typer.Argument(help="Whose working memory.")],
    session_id: Annotated[str, typer.Argument(help="The current session.")],
    query: Annotated[str | None, typer.Option(help="What the next turn is about.")] = None,
    budget_tokens: Annotated[int | None, typer.Option(help="Token budget (default 1500).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Print the working-memory prompt block for a session."""
    state = _state(ctx, as_json)
    command = ContextCommand(
        **_given(user_id=user_id, session_id=session_id, query=query, budget_tokens=budget_tokens)
    )
    service, principal = _open(state)
    result = service.context(principal, command)
    if state.json_output:
        emit_json({"status": "success", **result.model_dump(mode="json")})
        return
    typer.echo(result.context)
    truncated = ", truncated" if result.truncated else ""
    typer.secho(
        f"{result.tokens}/{result.budget_tokens} tokens, {len(result.facts)} facts, "
        f"{len(result.recent_turns)} recent turns{truncated}",
        dim=True,
        err=True,
    )


# --- browse / review / forget -----------------------------------------------------------------


def _pages(
    service: MemoryService, principal: Principal, command: ListMemoriesCommand, follow: bool
) -> Iterator[ListResult]:
    seen: set[str] = set()
    while True:
        page = service.list_memories(principal, command)
        yield page
        cursor = page.next_cursor
        if not follow or not cursor or cursor in seen:
            return
        seen.add(cursor)
        command = command.model_copy(update={"cursor": cursor})


@app.command("list")
@_handles_errors
def list_memories(
    ctx: typer.Context,
    user_id: Annotated[str, typer.Argument(help="Whose memories.")],
    kind: Annotated[str | None, typer.Option(help="episodic or semantic.")] = None,
    status: Annotated[
        str | None, typer.Option(help="pending, approved, rejected or superseded.")
    ] = None,
    category: Annotated[str | None, typer.Option(help="Only this category.")] = None,
    scope: Annotated[str | None, typer.Option(help="Only this scope.")] = None,
    session_id: Annotated[str | None, typer.Option(help="Only this session.")] = None,
    since: Annotated[str | None, typer.Option(help="Occurred at or after (ISO 8601).")] = None,
    until: Annotated[str | None, typer.Option(help="Occurred before (ISO 8601).")] = None,
    limit: Annotated[
        int | None, typer.Option(help=f"Per page (default 20, max {MAX_LIST_ITEMS}).")
    ] = None,
    cursor: Annotated[str | None, typer.Option(help="next_cursor of the previous page.")] = None,
    follow_all: Annotated[
        bool, typer.Option("--all", help="Follow next_cursor to the last page.")
    ] = False,
    include_expired: Annotated[
        bool, typer.Option("--include-expired", help="Show expired memories too.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """List a user's memories, newest first."""
    state = _state(ctx, as_json)
    command = ListMemoriesCommand(
        **_given(
            user_id=user_id,
            kind=kind,
            status=status,
            category=category,
            scope=scope,
            session_id=session_id,
            since=since,
            until=until,
            limit=limit,
            cursor=cursor,
            include_expired=include_expired,
        )
    )
    service, principal = _open(state)
    results: list[dict[str, Any]] = []
    last: ListResult | None = None
    for page in _pages(service, principal, command, follow_all):
        results.extend(page.results)
        last = page
    next_cursor = last.next_cursor if last is not None and not follow_all else None
    if state.json_output:
        emit_json(
            {
                "status": "success",
                "results": results,
                "has_more": next_cursor is not None,
                "next_cursor": next_cursor,
            }
        )
        return
    console = make_console()
    if not results:
        console.print("no memories")
        return
    rows = [
        (
            memory.get("memory_id"),
            memory.get("kind"),
            memory.get("status") or "",
            when(memory.get("occurred_at")),
            memory.get("category"),
            memory.get("speaker") or "",
            shorten(memory.get("content")),
        )
        for memory in results
    ]
    console.print(
        table(None, ["memory_id", "kind", "status", "when", "category", "speaker", "content"], rows)
    )
    console.print(f"{len(results)} shown", markup=False)
    if next_cursor:
        console.print(f"more: --cursor {next_cursor}", markup=False)


def _memory_table(memory: dict[str, Any]) -> None:
    console = make_console()
    console.print(table(None, ["field", "value"], list(memory.items())))


@app.command()
@_handles_errors
def show(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Show one memory with every field."""
    state = _state(ctx, as_json)
    service, principal = _open(state)
    result = service.get_memory(principal, memory_id)
    if state.json_output:
        emit_json(result)
        return
    _memory_table(result.get("memory", result))


def _review(ctx: typer.Context, memory_id: str, as_json: bool, approve: bool) -> None:
    state = _state(ctx, as_json)
    service, principal = _open(state)
    if approve:
        result = service.approve(principal, memory_id)
    else:
        result = service.reject(principal, memory_id)
    if state.json_output:
        emit_json(result)
        return
    verb = "approved" if approve else "rejected"
    content = shorten(result.get("memory", {}).get("content"))
    make_console().print(f"[green]{verb}[/green] {memory_id}: ", Text(content), sep="")


@app.command()
@_handles_errors
def approve(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="A pending fact's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Approve a pending fact so that retrieval and context use it."""
    _review(ctx, memory_id, as_json, approve=True)


@app.command()
@_handles_errors
def reject(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="A pending fact's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Reject a pending fact; it is never used."""
    _review(ctx, memory_id, as_json, approve=False)


@app.command()
@_handles_errors
def forget(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Delete one memory."""
    state = _state(ctx, as_json)
    service, principal = _open(state)
    result = service.delete_memory(principal, memory_id)
    if state.json_output:
        emit_json(result)
        return
    note = ""
    if result.get("deleted_facts") or result.get("updated_facts"):
        note = (
            f" (facts derived only from it deleted: {len(result.get('deleted_facts', []))}, "
            f"facts updated: {len(result.get('updated_facts', []))})"
        )
    make_console().print(f"[green]forgot[/green] {memory_id}{note}")


@app.command("erase-user")
@_handles_errors
def erase_user(
    ctx: typer.Context,
    user_id: Annotated[str, typer.Argument(help="The user to erase.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Erase a user and everything derived from them (cannot be undone)."""
    state = _state(ctx, as_json)
    if not yes and not typer.confirm(
        f"Erase every memory of user {user_id!r}? This cannot be undone", err=True
    ):
        fail("not erased (confirm, or pass --yes)", 1, as_json=state.json_output)
    service, principal = _open(state)
    result = service.erase_user(principal, user_id)
    if state.json_output:
        emit_json(result)
        return
    details = summary_line(result, skip=("status", "user_id"))
    make_console().print(
        f"[green]erased[/green] user {user_id}" + (f": {details}" if details else "")
    )


@app.command()
@_handles_errors
def health(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Show the embedding model, reflector and index size."""
    state = _state(ctx, as_json)
    service, _ = _open(state)
    result = service.health()
    if state.json_output:
        emit_json(result)
        return
    _memory_table(result)


def main() -> None:
    """Entry point of the ``hindsight`` script."""
    app(prog_name="hindsight")


@app.command()
@_handles_errors
def reindex(
    ctx: typer.Context,
    re_embed: Annotated[
        bool,
        typer.Option(
            "--re-embed",
            help="recompute every vector with the configured embedding model first "
            "(after changing HINDSIGHT_EMBEDDER)",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Rebuild the search index from the record store (the source of truth)."""
    state = _state(ctx, as_json)
    service, _ = _open(state)
    err_console = make_console(stderr=True)
    progress = Progress(
        TextColumn("reindexing"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err_console,
        disable=state.json_output or not err_console.is_terminal,
    )
    with progress:
        task = progress.add_task("reindex", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        result = service.reindex(re_embed=re_embed, progress=advance)
    if state.json_output:
        emit_json(result)
        return
    _memory_table(result)


bench_app = typer.Typer(
    help="Run a benchmark of a source checkout (bench/*.py): prints numbers, writes "
    "bench/results/. Options after the name go to the script (see --help there).",
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")
# every option, --help included, goes to the script
_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _bench_script(name: str) -> Path:
    """bench/<name>.py of the checkout this package or the working directory belongs to."""
    here = Path(__file__).resolve()
    for root in (Path.cwd(), *here.parents):
        script = root / "bench" / f"{name}.py"
        if script.is_file():
            return script
    raise typer.BadParameter(
        f"bench/{name}.py not found: the benchmarks ship with the source checkout, not the "
        "package; run this from the repository (git clone, then `make install`)"
    )


def _run_bench(name: str, args: list[str]) -> None:
    script = _bench_script(name)
    completed = subprocess.run([sys.executable, str(script), *args], check=False)
    raise typer.Exit(completed.returncode)


@bench_app.command("scale", context_settings=_PASS_THROUGH)
def bench_scale(ctx: typer.Context) -> None:
    """Latency, throughput, memory and disk at 10k, 100k and 1M memories (bench/scale.py)."""
    _run_bench("scale", list(ctx.args))


@bench_app.command("locomo", context_settings=_PASS_THROUGH)
def bench_locomo(ctx: typer.Context) -> None:
    """LoCoMo evidence recall against dense and BM25 baselines (bench/locomo.py)."""
    _run_bench("locomo", list(ctx.args))
