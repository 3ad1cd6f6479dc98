"""The ``hindsight`` command line: the memory service in-process, tables or JSON out.

Every command parses its options into a core command, calls one MemoryService method as
the local tenant (or ``--tenant``) and renders the result. This module holds the typer
app, its global options and the list of commands; the commands live in modules named
for what they do: serve, store, recall, review, memories and admin.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from hindsight.cli import (
    admin,
    backup,
    check_index,
    documents,
    export,
    maintain,
    memories,
    pin,
    recall,
    replay_dlq,
    review,
    schedule,
    serve,
    store,
)
from hindsight.cli.state import CliState, JsonFlag
from hindsight.cli.suggest import SuggestingGroup

app = typer.Typer(
    name="hindsight",
    cls=SuggestingGroup,
    help="Long-term memory for LLM agents: store, retrieve, reflect, review and forget.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


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
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="HINDSIGHT_API_KEY",
            show_envvar=True,
            help="The key to send when a running `hindsight serve` holds the data directory "
            "(the commands then go through it).",
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log to stderr.")] = False,
) -> None:
    """Long-term memory for LLM agents: store, retrieve, reflect, review and forget."""
    if verbose:
        logging.basicConfig(
            level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
        )
    ctx.obj = CliState(json_output=json_output, data_dir=data_dir, tenant=tenant, api_key=api_key)


# in the order `hindsight --help` lists them
app.command("serve")(serve.serve)
app.command("mcp")(serve.mcp_server)
app.command("store")(store.store)
app.command("import")(store.import_conversation)
app.command("retrieve")(recall.retrieve)
app.command("reflect")(review.reflect)
app.command("context")(recall.context)
app.command("list")(memories.list_memories)
app.command("show")(memories.show)
app.command("approve")(review.approve)
app.command("reject")(review.reject)
app.command("forget")(memories.forget)
app.command("erase-user")(memories.erase_user)
app.command("health")(admin.health)
app.command("reindex")(admin.reindex)
app.command("replay-dlq")(replay_dlq.replay_dlq)
app.command("check-index")(check_index.check_index_command)
app.command("backup")(backup.backup)
app.command("schedule")(schedule.schedule)
app.command("maintain")(maintain.maintain)
app.command("restore")(maintain.restore)
app.command("pin")(pin.pin)
app.command("unpin")(pin.unpin)
app.command("export")(export.export)
app.command("import-export")(export.import_export)
app.add_typer(documents.app, name="document")


def main() -> None:
    """Entry point of the ``hindsight`` script."""
    app(prog_name="hindsight")
