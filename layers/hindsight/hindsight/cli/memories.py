"""Browsing and forgetting what is stored: ``list``, ``show``, ``forget``, ``erase-user``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import typer

from hindsight.cli.errors import handles_errors
from hindsight.cli.output import (
    emit_json,
    fail,
    make_console,
    print_fields,
    shorten,
    summary_line,
    table,
    when,
)
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
from hindsight.core.commands import MAX_LIST_ITEMS, ListMemoriesCommand
from hindsight.core.models import Principal
from hindsight.core.results import ListResult
from hindsight.server.served import MemoryApi


def _pages(
    service: MemoryApi, principal: Principal, command: ListMemoriesCommand, follow: bool
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


@handles_errors
def list_memories(
    ctx: typer.Context,
    user_id: Annotated[str, typer.Argument(help="Whose memories.")],
    kind: Annotated[str | None, typer.Option(help="episodic or semantic.")] = None,
    status: Annotated[
        str | None, typer.Option(help="pending, approved, rejected or superseded.")
    ] = None,
    category: Annotated[str | None, typer.Option(help="Only this category.")] = None,
    scope: Annotated[str | None, typer.Option(help="Only this scope.")] = None,
    session_id: SessionOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    limit: Annotated[
        int | None, typer.Option(help=f"Per page (default 20, max {MAX_LIST_ITEMS}).")
    ] = None,
    cursor: CursorOption = None,
    follow_all: Annotated[
        bool, typer.Option("--all", help="Follow next_cursor to the last page.")
    ] = False,
    include_expired: Annotated[
        bool, typer.Option("--include-expired", help="Show expired memories too.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """List a user's memories, newest first."""
    state = cli_state(ctx, as_json)
    command = ListMemoriesCommand(
        **given(
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
    service, principal = open_service(state)
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


@handles_errors
def show(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Show one memory with every field."""
    state = cli_state(ctx, as_json)
    service, principal = open_service(state)
    result = service.get_memory(principal, memory_id)
    if state.json_output:
        emit_json(result)
        return
    print_fields(result.get("memory", result))


@handles_errors
def forget(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Delete one memory."""
    state = cli_state(ctx, as_json)
    service, principal = open_service(state)
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


@handles_errors
def erase_user(
    ctx: typer.Context,
    user_id: Annotated[str, typer.Argument(help="The user to erase.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Erase a user and everything derived from them (cannot be undone)."""
    state = cli_state(ctx, as_json)
    if not yes and not typer.confirm(
        f"Erase every memory of user {user_id!r}? This cannot be undone", err=True
    ):
        fail("not erased (confirm, or pass --yes)", 1, as_json=state.json_output)
    service, principal = open_service(state)
    result = service.erase_user(principal, user_id)
    if state.json_output:
        emit_json(result)
        return
    details = summary_line(result, skip=("status", "user_id"))
    make_console().print(
        f"[green]erased[/green] user {user_id}" + (f": {details}" if details else "")
    )
