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

from pathlib import Path
from typing import Annotated

import typer

from hindsight import bootstrap
from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json
from hindsight.cli.state import cli_state, serving_server
from hindsight.core.usecases.index_check import IndexCheck, check_index
from hindsight.server.served import ServedService
from hindsight.settings import Settings

UserOption = Annotated[
    str | None,
    typer.Option("--user", help="Check only this user (of --tenant, default the local tenant)."),
]


def _check(data_dir: Path | None, tenant: str | None, user: str | None) -> IndexCheck:
    """Compare the stores: a configured service's, the AWS backend's, or the embedded data
    directory's as it is on disk (``_check_on_disk``)."""
    configured = bootstrap.configured_service()
    if configured is not None:
        return configured.check_index(_tenant(tenant, user, bootstrap.get_settings()), user)
    settings = Settings.from_env(data_dir=data_dir)
    if settings.backend.strip().lower() != "embedded":
        bootstrap.configure(settings)
        return bootstrap.get_service().check_index(_tenant(tenant, user, settings), user)
    record = serving_server(data_dir)
    if record is not None:
        raise ServedService(record).refusal("check-index")
    return _check_on_disk(Path(settings.data_dir), settings, _tenant(tenant, user, settings), user)


def _tenant(tenant: str | None, user: str | None, settings: Settings) -> str | None:
    """A user is always one tenant's: the local tenant's unless --tenant names another."""
    return settings.anonymous_tenant if user is not None and tenant is None else tenant


def _check_on_disk(
    directory: Path, settings: Settings, tenant: str | None, user: str | None
) -> IndexCheck:
    from hindsight.adapters.embedded.generations import GenerationalSearchIndex
    from hindsight.adapters.embedded.sqlite_record_store import SqliteRecordStore

    if not (directory / "hindsight.db").exists():
        raise typer.BadParameter(
            f"{directory.resolve()} holds no Hindsight data (no hindsight.db); give the data "
            "directory of the store to check (--data-dir or HINDSIGHT_DATA_DIR)",
            param_hint="--data-dir",
        )
    records = SqliteRecordStore(directory / "hindsight.db")
    try:
        index = GenerationalSearchIndex(directory, records, ann_threshold=settings.ann_threshold)
        try:
            return check_index(records, index, tenant, user)
        finally:
            index.close()
    finally:
        records.close()


@handles_errors
def check_index_command(ctx: typer.Context, user: UserOption = None) -> None:
    """Compare the search index with the record store; JSON out, exit 1 if they disagree."""
    state = cli_state(ctx)
    result = _check(state.data_dir, state.tenant, user)
    emit_json(result.as_dict())
    if not result.agrees:
        raise typer.Exit(1)
