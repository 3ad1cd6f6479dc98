"""Long-running servers: the local HTTP API (``serve``) and the MCP stdio server (``mcp``).

Both start their server lazily, so the CLI runs without the gateway's or MCP's optional
dependencies until one of these commands is asked for.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from hindsight import bootstrap
from hindsight.cli.output import fail
from hindsight.cli.state import cli_state
from hindsight.core.errors import HindsightError
from hindsight.core.models import Principal
from hindsight.settings import Settings

logger = logging.getLogger(__name__)


def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65_535, help="TCP port.")] = 8080,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Data directory (overrides the global one).")
    ] = None,
    allow_anonymous: Annotated[
        bool | None,
        typer.Option(
            "--allow-anonymous/--no-allow-anonymous",
            help="Accept requests without an API key. Default: only when bound to loopback.",
        ),
    ] = None,
) -> None:
    """Serve the HTTP API locally (the same handlers as on AWS)."""
    state = cli_state(ctx)
    try:
        settings = Settings.from_env(data_dir=data_dir or state.data_dir)
        from hindsight.gateway.local_gateway import serve as serve_gateway
    except HindsightError as exc:
        fail(exc.message)
    except ImportError as exc:
        fail(f"the local gateway is not available: {exc}")
    try:
        serve_gateway(
            host=host, port=port, data_dir=settings.data_dir, allow_anonymous=allow_anonymous
        )
    except HindsightError as exc:
        fail(exc.message)
    except OSError as exc:
        fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        typer.echo("stopped", err=True)


def _mcp_principal(settings: Settings, api_key: str | None, tenant: str | None) -> Principal:
    """The key's principal, or the local anonymous one when no key is needed."""
    from hindsight.api.auth import UNKNOWN_KEY_MESSAGE, anonymous_principal, load_key_ring

    ring = load_key_ring(settings)
    if api_key:
        if len(ring) == 0:
            fail(
                "--api-key was given but no API keys are configured; set "
                "HINDSIGHT_API_KEYS_FILE (or HINDSIGHT_API_KEYS), or leave the key out"
            )
        principal = ring.lookup(api_key)
        if principal is None:
            fail(UNKNOWN_KEY_MESSAGE)
        return principal
    if len(ring) > 0 and not settings.allow_anonymous:
        fail(
            "API keys are configured: pass --api-key or set HINDSIGHT_API_KEY "
            "(or allow keyless local use with HINDSIGHT_ALLOW_ANONYMOUS=true)"
        )
    principal = anonymous_principal(settings)
    if tenant is not None:
        if not tenant.strip():
            raise typer.BadParameter("must not be empty", param_hint="--tenant")
        principal = principal.model_copy(update={"tenant_id": tenant})
    return principal


def mcp_server(
    ctx: typer.Context,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="HINDSIGHT_API_KEY",
            show_envvar=True,
            help="Act as this API key (its tenant and scopes). Default: the local tenant "
            "with every scope, when no keys are configured.",
        ),
    ] = None,
) -> None:
    """Serve the memory tools to an MCP client over stdio (Claude Desktop, Cursor, ...)."""
    state = cli_state(ctx)
    try:
        from hindsight.mcp.server import run_stdio

        configured = bootstrap.configured_service()
        if configured is not None:
            settings = bootstrap.get_settings()
        else:
            settings = Settings.from_env(data_dir=state.data_dir)
            bootstrap.configure(settings)
        principal = _mcp_principal(settings, api_key, state.tenant)
    except HindsightError as exc:
        fail(exc.message)
    except ImportError as exc:
        fail(f"the MCP server is not available (pip install mcp): {exc}")
    logger.info(
        "mcp stdio server starting tenant=%s key_id=%s", principal.tenant_id, principal.key_id
    )
    try:
        run_stdio(principal, (lambda: configured) if configured is not None else None)
    except KeyboardInterrupt:
        typer.echo("stopped", err=True)
