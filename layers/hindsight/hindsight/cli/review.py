"""The review queue: ``reflect`` distils episodes into facts; ``approve`` or ``reject`` them."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.text import Text

from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json, make_console, shorten, table
from hindsight.cli.state import JsonFlag, cli_state, given, open_service
from hindsight.core.commands import ReflectCommand

_CHANGES = ("created", "updated", "superseded", "pending")


@handles_errors
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
    state = cli_state(ctx, as_json)
    command = ReflectCommand(**given(user_id=user_id, since=since, dry_run=dry_run))
    service, principal = open_service(state)
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


def _review(ctx: typer.Context, memory_id: str, as_json: bool, approve: bool) -> None:
    state = cli_state(ctx, as_json)
    service, principal = open_service(state)
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


@handles_errors
def approve(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="A pending fact's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Approve a pending fact so that retrieval and context use it."""
    _review(ctx, memory_id, as_json, approve=True)


@handles_errors
def reject(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="A pending fact's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Reject a pending fact; it is never used."""
    _review(ctx, memory_id, as_json, approve=False)
