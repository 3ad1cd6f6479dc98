"""``hindsight export`` and ``hindsight import-export``: a user's memory as JSON lines.

``export`` writes the lines as the store yields them (stdout, or ``--output``), so a
user of any size is exported in bounded memory; ``import-export`` reads a file line by
line into this data directory (or the AWS backend, with ``HINDSIGHT_BACKEND=aws``),
keeping ids, times, statuses and links; run it again to resume one that stopped.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json, print_fields
from hindsight.cli.state import JsonFlag, cli_state, open_service


@handles_errors
def export(
    ctx: typer.Context,
    user_id: Annotated[str, typer.Argument(help="Whose memory to export.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
) -> None:
    """Export a user's memories (episodes, facts, archived ones, counts) as JSON lines."""
    state = cli_state(ctx)
    service, principal = open_service(state)
    lines = service.export_user(principal, user_id)
    if output is None:
        for line in lines:
            sys.stdout.write(line)
        sys.stdout.flush()
        return
    written = 0
    with output.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line)
            written += 1
    typer.echo(f"exported {max(0, written - 2)} memories of {user_id} to {output}", err=True)


@handles_errors
def import_export(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="A file `hindsight export` wrote.")],
    user_id: Annotated[
        str | None, typer.Option("--user-id", help="Import as this user (default: the file's).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Import a `hindsight export` file: ids, times, statuses and links kept."""
    state = cli_state(ctx, as_json)
    service, principal = open_service(state)
    if not path.is_file():
        raise typer.BadParameter(f"{path} is not a file", param_hint="PATH")
    with path.open(encoding="utf-8") as handle:
        result = service.import_export(principal, handle, user_id)
    if state.json_output:
        emit_json(result)
        return
    print_fields(result)
