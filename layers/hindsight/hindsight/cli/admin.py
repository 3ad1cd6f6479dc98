"""Operating the service: ``health`` and ``reindex`` (rebuild the search index)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json, make_console, print_fields
from hindsight.cli.state import JsonFlag, cli_state, open_service


@handles_errors
def health(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Show the embedding model, reflector and index size."""
    state = cli_state(ctx, as_json)
    service, _ = open_service(state)
    result = service.health()
    if state.json_output:
        emit_json(result)
        return
    print_fields(result)


@handles_errors
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
    state = cli_state(ctx, as_json)
    service, _ = open_service(state)
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
    print_fields(result)
