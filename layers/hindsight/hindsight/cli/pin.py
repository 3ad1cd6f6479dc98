"""``hindsight pin`` and ``hindsight unpin``: keep a memory out of the archive, or stop.

A pinned memory is never archived for lack of use (what ``PATCH /v1/memories/{id}`` with
``{"pinned": true}`` does over HTTP).
"""

from __future__ import annotations

from typing import Annotated

import typer

from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json
from hindsight.cli.state import JsonFlag, cli_state, open_service
from hindsight.core.usecases.pin import PatchMemoryCommand

MemoryId = Annotated[str, typer.Argument(help="The memory's id.")]


def _set_pin(ctx: typer.Context, memory_id: str, pinned: bool, as_json: bool) -> None:
    state = cli_state(ctx, as_json)
    service, principal = open_service(state)
    result = service.patch_memory(principal, memory_id, PatchMemoryCommand(pinned=pinned))
    if state.json_output:
        emit_json(result)
        return
    memory = result["memory"]
    verb = ("pinned" if pinned else "unpinned") if result["changed"] else "unchanged"
    typer.echo(f"{memory['memory_id']} {verb}: {memory['content'][:80]}")


@handles_errors
def pin(ctx: typer.Context, memory_id: MemoryId, as_json: JsonFlag = False) -> None:
    """Pin a memory: it is never archived for lack of use."""
    _set_pin(ctx, memory_id, True, as_json)


@handles_errors
def unpin(ctx: typer.Context, memory_id: MemoryId, as_json: JsonFlag = False) -> None:
    """Unpin a memory: archived like any other once unused."""
    _set_pin(ctx, memory_id, False, as_json)
