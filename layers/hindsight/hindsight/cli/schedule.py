"""``hindsight schedule``: the local schedules ``hindsight serve`` runs, and their next runs.

Read from the settings alone (``HINDSIGHT_SCHEDULES``, ``HINDSIGHT_REFLECTION_SCHEDULE``,
``HINDSIGHT_MAINTENANCE_SCHEDULE``, ``HINDSIGHT_SCHEDULE_TIMEZONE``); the store is not
opened, so it answers while a server holds the data directory.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json, make_console, table
from hindsight.cli.state import JsonFlag, cli_state
from hindsight.server.scheduler import configured_schedules
from hindsight.settings import Settings


@handles_errors
def schedule(
    ctx: typer.Context,
    count: Annotated[int, typer.Option(min=1, max=100, help="Runs shown per schedule.")] = 5,
    as_json: JsonFlag = False,
) -> None:
    """Show the schedules `hindsight serve` runs itself and when they run next."""
    state = cli_state(ctx, as_json)
    settings = Settings.from_env(data_dir=state.data_dir)
    schedules = configured_schedules(settings)
    now = datetime.now(UTC)
    listing = [
        {
            "job": name,
            "expression": plan.expression,
            "timezone": plan.timezone,
            "next_runs": [
                run.astimezone(plan.zone).isoformat() for run in plan.upcoming(now, count)
            ],
        }
        for name, plan in schedules.items()
    ]
    if state.json_output:
        emit_json({"status": "success", "enabled": bool(listing), "schedules": listing})
        return
    console = make_console()
    if not listing:
        console.print(
            "no local schedules: HINDSIGHT_SCHEDULES is off, or every schedule is set to off"
        )
        return
    rows = [
        (item["job"], item["expression"], item["timezone"], run)
        for item in listing
        for run in item["next_runs"]
    ]
    console.print(table("next runs", ["job", "expression", "time zone", "run at"], rows))
