"""``hindsight check-index``: does the search index agree with the record store?

Prints one JSON document (``core/usecases/index_check.py``: counts, and the ids stored but
not indexed, indexed but not stored) and exits 1 when they disagree, 0 when they agree.

On the embedded backend the data directory is opened as it is on disk, without the repair
every service start runs (``rebuild_from``), so the check sees what a crash or a bug left
behind; like any other writer it is refused while ``hindsight serve`` holds the directory
(stop the server first). On AWS it compares DynamoDB with OpenSearch; there the stream
indexer applies writes a moment late, so run it once writes have stopped.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from hindsight import bootstrap
from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json
from hindsight.cli.state import cli_state
from hindsight.core.ports import RecordStore, SearchIndex
from hindsight.core.usecases.index_check import check_index
from hindsight.settings import Settings

UserOption = Annotated[
    str | None,
    typer.Option("--user", help="Check only this user (of --tenant, default the local tenant)."),
]


@contextmanager
def _stores(data_dir: Path | None) -> Iterator[tuple[RecordStore, SearchIndex, Settings]]:
    """The record store and search index to compare (a configured service's, if any)."""
    configured = bootstrap.configured_service()
    if configured is not None:
        yield configured.ports.records, configured.ports.index, bootstrap.get_settings()
        return
    settings = Settings.from_env(data_dir=data_dir)
    if settings.backend.strip().lower() != "embedded":
        bootstrap.configure(settings)
        service = bootstrap.get_service()
        yield service.ports.records, service.ports.index, settings
        return
    from hindsight.adapters.embedded.generations import GenerationalSearchIndex
    from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore

    directory = Path(settings.data_dir)
    if not (directory / "hindsight.db").exists():
        raise typer.BadParameter(
            f"{directory.resolve()} holds no Hindsight data (no hindsight.db); give the data "
            "directory of the store to check (--data-dir or HINDSIGHT_DATA_DIR)",
            param_hint="--data-dir",
        )
    records = SqliteRecordStore(directory / "hindsight.db")
    try:
        index = GenerationalSearchIndex(directory, records, ann_threshold=settings.ann_threshold)
    except BaseException:
        records.close()
        raise
    try:
        yield records, index, settings
    finally:
        index.close()
        records.close()


@handles_errors
def check_index_command(ctx: typer.Context, user: UserOption = None) -> None:
    """Compare the search index with the record store; JSON out, exit 1 if they disagree."""
    state = cli_state(ctx)
    with _stores(state.data_dir) as (records, index, settings):
        tenant = state.tenant
        if user is not None and tenant is None:
            tenant = settings.anonymous_tenant
        result = check_index(records, index, tenant, user)
    emit_json(result.as_dict())
    if not result.agrees:
        raise typer.Exit(1)
