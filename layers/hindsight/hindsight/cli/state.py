"""What every command shares: the global options, and the service and principal they act as.

A service that is already configured through ``hindsight.bootstrap.configure`` is used as
is; otherwise settings come from the environment (``HINDSIGHT_*``) and ``--data-dir``.
When a ``hindsight serve`` holds that embedded data directory (``server.discovery``), the
commands call it over HTTP (``server.served``) with ``--api-key``/``HINDSIGHT_API_KEY``
instead of opening the files a second time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from hindsight import bootstrap
from hindsight.core.errors import UnauthorizedError, UnavailableError
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from hindsight.server.discovery import ServerRecord, find_server
from hindsight.server.served import MemoryApi, ServedService
from hindsight.settings import Settings


@dataclass
class CliState:
    """Global options, shared by every command through the typer context."""

    json_output: bool = False
    data_dir: Path | None = None
    tenant: str | None = None
    api_key: str | None = None


JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print machine-readable JSON instead of tables.")
]
# filters and paging that list and retrieve both take
SessionOption = Annotated[str | None, typer.Option(help="Only this session.")]
SinceOption = Annotated[str | None, typer.Option(help="Occurred at or after (ISO 8601).")]
UntilOption = Annotated[str | None, typer.Option(help="Occurred before (ISO 8601).")]
CursorOption = Annotated[str | None, typer.Option(help="next_cursor of the previous page.")]


def cli_state(ctx: typer.Context, as_json: bool = False) -> CliState:
    """The global options; a command's own ``--json`` switches JSON on as well."""
    state = ctx.find_object(CliState) or CliState()
    if as_json:
        state.json_output = True
    return state


def serving_server(data_dir: Path | None) -> ServerRecord | None:
    """The ``hindsight serve`` holding the embedded data directory, if one does (never
    when this process has a service configured already: that one is used)."""
    if bootstrap.configured_service() is not None:
        return None
    settings = Settings.from_env(data_dir=data_dir)
    if settings.backend.strip().lower() != "embedded":
        return None
    return find_server(settings.data_dir)


def served_service(record: ServerRecord, api_key: str | None, tenant: str | None) -> ServedService:
    """The running server as the service, or an error saying what is missing."""
    if record.keys_required and not api_key:
        raise UnauthorizedError(
            f"the Hindsight server at {record.url} (pid {record.pid}) serves "
            f"{record.data_dir} and asks for an API key: set HINDSIGHT_API_KEY or pass "
            "--api-key (or stop the server to use the directory directly)"
        )
    if tenant is not None:
        raise UnauthorizedError(
            f"--tenant acts on the files directly, but the Hindsight server at {record.url} "
            f"(pid {record.pid}) serves {record.data_dir}: through it the API key decides "
            "the tenant. Use a key of that tenant (HINDSIGHT_API_KEY), or stop the server"
        )
    return ServedService(record, api_key)


def _settings_and_service(data_dir: Path | None) -> tuple[Settings, MemoryService]:
    """The configured service if there is one, else one built from the environment."""
    configured = bootstrap.configured_service()
    if configured is not None:
        return bootstrap.get_settings(), configured
    settings = Settings.from_env(data_dir=data_dir)
    bootstrap.configure(settings)
    try:
        return settings, bootstrap.get_service()
    except ImportError as exc:  # an adapter or its optional dependency is not installed
        raise UnavailableError(
            f"cannot start the memory service ({settings.backend} backend): {exc}"
        ) from exc


def open_service(state: CliState) -> tuple[MemoryApi, Principal]:
    """The memory service (the serving server's, when one holds the data directory), and
    the principal of the local (or ``--tenant``) tenant."""
    record = serving_server(state.data_dir)
    if record is not None:
        bootstrap.configure(Settings.from_env(data_dir=state.data_dir))  # limits, no service
        served = served_service(record, state.api_key, state.tenant)
        return served, Principal(tenant_id=bootstrap.get_settings().anonymous_tenant, key_id="cli")
    settings, service = _settings_and_service(state.data_dir)
    tenant = state.tenant if state.tenant is not None else settings.anonymous_tenant
    if not tenant.strip():
        raise typer.BadParameter("must not be empty", param_hint="--tenant")
    return service, Principal(tenant_id=tenant, key_id="cli")


def given(**values: Any) -> dict[str, Any]:
    """Only the options the user actually gave, so the commands' defaults apply."""
    return {key: value for key, value in values.items() if value is not None}


def parse_metadata(raw: str | None) -> dict[str, Any] | None:
    """The --metadata option: a JSON object, or a usage error saying what is wrong."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"not valid JSON ({exc.msg})", param_hint="--metadata") from exc
    if not isinstance(value, dict):
        raise typer.BadParameter("must be a JSON object", param_hint="--metadata")
    return value
