"""``hindsight maintain`` and ``hindsight restore``: the memory lifecycle by hand.

``maintain`` runs what the maintenance schedule runs (``hindsight serve`` at 03:00 by
default; on AWS the maintenance function): the archive pass of unused episodes, then
compaction of the embedded store's files. It holds the schedule's lease, so it never runs
beside a scheduled run. ``restore`` brings an archived memory back into search.
"""

from __future__ import annotations

from typing import Annotated

import typer

from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json, fail, print_fields
from hindsight.cli.state import JsonFlag, cli_state, open_service
from hindsight.server.scheduler import MAINTENANCE, maintenance_job
from hindsight.server.served import ServedService


@handles_errors
def maintain(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Archive unused episodes and compact the store (what the maintenance schedule runs)."""
    state = cli_state(ctx, as_json)
    service, _ = open_service(state)
    if isinstance(service, ServedService):
        raise service.refusal("maintain (the server runs it on its schedule)")
    run = service.run_exclusive(MAINTENANCE, maintenance_job(service))
    if run.outcome == "running-elsewhere":
        fail(
            "a maintenance run is already going on (a server's schedule, or another "
            "`hindsight maintain`); wait for it to finish",
            as_json=state.json_output,
        )
    result = {"status": "success", **run.counts}
    if state.json_output:
        emit_json(result)
        return
    print_fields(result)


@handles_errors
def restore(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="The archived memory's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Bring an archived memory back into search."""
    state = cli_state(ctx, as_json)
    service, principal = open_service(state)
    result = service.restore_memory(principal, memory_id)
    if state.json_output:
        emit_json(result)
        return
    memory = result["memory"]
    verb = "restored" if result["restored"] else "was not archived"
    typer.echo(f"{memory['memory_id']} {verb}: {memory['content'][:80]}")
