"""Operating the service: ``health`` and ``reindex`` (rebuild the search index, or migrate
it to another embedding model with ``--re-embed``: ``core/usecases/reembed.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)

from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json, make_console, print_fields
from hindsight.cli.state import JsonFlag, cli_state, open_service
from hindsight.reembedding import reembedding
from hindsight.settings import Settings


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


ReEmbedFlag = Annotated[
    bool,
    typer.Option(
        "--re-embed",
        help="migrate to the configured embedding model (HINDSIGHT_EMBEDDER): every memory "
        "is embedded again into a new index generation, in batches, while the current one "
        "keeps serving; then one atomic switch. Resumes where a stopped run left off. Runs "
        "beside a running `hindsight serve`, which follows the switch.",
    ),
]


def _progress_bar(label: str, quiet: bool) -> Progress:
    err_console = make_console(stderr=True)
    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        disable=quiet or not err_console.is_terminal,
    )


KeepOldFlag = Annotated[
    bool,
    typer.Option(
        "--keep-old-index",
        help="AWS: keep the OpenSearch index served before the switch (unused) instead of "
        "deleting it a minute after; the embedded store always removes the old generation",
    ),
]


@handles_errors
def reindex(
    ctx: typer.Context,
    re_embed: ReEmbedFlag = False,
    keep_old_index: KeepOldFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Rebuild the search index from the record store, or (--re-embed) migrate it to the
    configured embedding model."""
    state = cli_state(ctx, as_json)
    if re_embed:
        result = _re_embed(state.data_dir, state.json_output, keep_old_index)
    else:
        service, _ = open_service(state)
        with _progress_bar("reindexing", state.json_output) as progress:
            task = progress.add_task("reindex", total=None)

            def advance(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            result = service.reindex(progress=advance)
    if state.json_output:
        emit_json(result)
        return
    print_fields(result)


def _re_embed(data_dir: Path | None, quiet: bool, keep_old_index: bool) -> dict[str, Any]:
    """The migration, built apart from the service (it must not open the served index)."""
    settings = Settings.from_env(data_dir=data_dir)
    migration = reembedding(settings, keep_old_index=keep_old_index)
    with migration as migrate, _progress_bar("re-embedding", quiet) as progress:
        task = progress.add_task("re-embed", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        return migrate(progress=advance)
