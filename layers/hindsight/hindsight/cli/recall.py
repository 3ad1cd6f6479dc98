"""Getting memories out: ``retrieve`` for a query, ``context`` for a session's prompt block."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json, format_why, make_console, shorten, table, when
from hindsight.cli.state import (
    CursorOption,
    JsonFlag,
    SessionOption,
    SinceOption,
    UntilOption,
    cli_state,
    given,
    open_service,
)
from hindsight.core.commands import MAX_PAGE_SIZE, ContextCommand, RetrieveCommand


@handles_errors
def retrieve(
    ctx: typer.Context,
    user_id: Annotated[str, typer.Argument(help="Whose memories to search.")],
    query: Annotated[str, typer.Argument(help="What to look for.")],
    top_k: Annotated[
        int | None, typer.Option(help=f"Results per page (default 10, max {MAX_PAGE_SIZE}).")
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
    session_id: SessionOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    as_of: Annotated[str | None, typer.Option(help="Evaluate as if now were this time.")] = None,
    time_decay: Annotated[
        float | None, typer.Option(help="Daily decay factor (default 0.95; 1 switches it off).")
    ] = None,
    min_similarity: Annotated[float | None, typer.Option(help="Drop weaker matches.")] = None,
    cursor: CursorOption = None,
    why: Annotated[bool, typer.Option("--why", help="Show the parts of each score.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Find the memories that matter for a query, best score first."""
    state = cli_state(ctx, as_json)
    command = RetrieveCommand(
        **given(
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
    service, principal = open_service(state)
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
    if not rows and result.unknown_names:
        console.print(f"no memory mentions {', '.join(result.unknown_names)}")
    elif not rows:
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


@handles_errors
def context(
    ctx: typer.Context,
    user_id: Annotated[str, typer.Argument(help="Whose working memory.")],
    session_id: Annotated[str, typer.Argument(help="The current session.")],
    query: Annotated[str | None, typer.Option(help="What the next turn is about.")] = None,
    budget_tokens: Annotated[int | None, typer.Option(help="Token budget (default 1500).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Print the working-memory prompt block for a session."""
    state = cli_state(ctx, as_json)
    command = ContextCommand(
        **given(user_id=user_id, session_id=session_id, query=query, budget_tokens=budget_tokens)
    )
    service, principal = open_service(state)
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
