"""``hindsight backup``: a consistent copy of the embedded store, safe while it serves."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json, print_fields
from hindsight.cli.state import JsonFlag, cli_state
from hindsight.core.errors import ConfigurationError
from hindsight.settings import Settings


@handles_errors
def backup(
    ctx: typer.Context,
    destination: Annotated[
        Path,
        typer.Argument(
            help="The backup file to write, or a directory (the file is named by the time). "
            "An existing file is never overwritten."
        ),
    ],
    as_json: JsonFlag = False,
) -> None:
    """Back up the embedded store (SQLite online backup; `hindsight serve` may keep running).

    The search index is not copied: it is rebuilt from the records at start. To restore,
    stop the server, put the file at <data dir>/hindsight.db, delete <data dir>/index and
    start it again.
    """
    from hindsight.server.backup import backup_embedded_store

    state = cli_state(ctx, as_json)
    settings = Settings.from_env(data_dir=state.data_dir)
    if settings.backend.strip().lower() != "embedded":
        raise ConfigurationError(
            f"backup copies the embedded store; HINDSIGHT_BACKEND={settings.backend} keeps its "
            "data elsewhere (on AWS: DynamoDB point-in-time recovery)"
        )
    report = backup_embedded_store(Path(settings.data_dir), destination)
    if state.json_output:
        emit_json(report.as_dict())
        return
    print_fields(report.as_dict())
