"""Long-running servers: the local HTTP API (``serve``) and the MCP stdio server (``mcp``).

``serve`` runs the ASGI server (``hindsight.server``: many requests at once, graceful
shutdown, one server per data directory) or, with ``--gateway``, the template-driven
gateway (``hindsight.gateway``: the real Lambda handlers, one event at a time). Both
import their server lazily, so other commands do not load them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hindsight import bootstrap
from hindsight.cli.output import fail
from hindsight.cli.state import cli_state, served_service, serving_server
from hindsight.core.errors import HindsightError
from hindsight.core.models import Principal
from hindsight.server.logs import LOG_FORMATS, configure_logging
from hindsight.settings import Settings

if TYPE_CHECKING:
    from hindsight.mcp.tools import ServiceProvider

logger = logging.getLogger(__name__)


def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65_535, help="TCP port (0: a free one, shown at start).")
    ] = 8080,
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
    threads: Annotated[
        int,
        typer.Option(
            min=1,
            max=256,
            help="Reads (retrieve, context, list, get) handled at once; the rest wait.",
        ),
    ] = 8,
    write_threads: Annotated[
        int,
        typer.Option(
            "--write-threads",
            min=1,
            max=256,
            help="Writes (stores, reflection, reviews, forgetting, MCP tools) handled at once; "
            "the rest wait. Reads never wait for them.",
        ),
    ] = 8,
    log_format: Annotated[
        str, typer.Option("--log-format", help="Log lines on stderr: text or json.")
    ] = "text",
    gateway: Annotated[
        bool,
        typer.Option(
            "--gateway",
            help="Serve template.yaml's routes through the real Lambda handlers instead, "
            "one request at a time (the `sam local start-api` stand-in).",
        ),
    ] = False,
    template: Annotated[
        Path | None, typer.Option("--template", help="With --gateway: the SAM template.")
    ] = None,
) -> None:
    """Serve the HTTP API and MCP on this machine, many requests at once."""
    state = cli_state(ctx)
    if log_format not in LOG_FORMATS:
        raise typer.BadParameter("must be text or json", param_hint="--log-format")
    try:
        settings = Settings.from_env(data_dir=data_dir or state.data_dir)
        if gateway:
            from hindsight.gateway.local_gateway import serve as serve_gateway

            configure_logging(log_format)
            serve_gateway(host, port, settings.data_dir, allow_anonymous, template)
        else:
            from hindsight.server.runner import serve as serve_asgi

            serve_asgi(
                host, port, settings.data_dir, allow_anonymous, threads, log_format, write_threads
            )
    except HindsightError as exc:
        fail(exc.message)
    except ImportError as exc:
        fail(f"the server is not available: {exc}")
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
    service: ServiceProvider | None = None
    try:
        from hindsight.mcp.server import run_stdio

        configured = bootstrap.configured_service()
        record = serving_server(state.data_dir)
        if configured is not None:
            settings = bootstrap.get_settings()
            service = lambda: configured  # noqa: E731
        else:
            settings = Settings.from_env(data_dir=state.data_dir)
            bootstrap.configure(settings)
        if record is not None:
            # a server holds the directory: the tools call it, as the key it is sent
            served = served_service(record, api_key or state.api_key, state.tenant)
            principal = Principal(tenant_id=settings.anonymous_tenant, key_id="served")
            service = lambda: served  # noqa: E731
            logger.info("mcp stdio through the server url=%s pid=%s", record.url, record.pid)
        else:
            principal = _mcp_principal(settings, api_key, state.tenant)
    except HindsightError as exc:
        fail(exc.message)
    except ImportError as exc:
        fail(f"the MCP server is not available (pip install mcp): {exc}")
    logger.info(
        "mcp stdio server starting tenant=%s key_id=%s", principal.tenant_id, principal.key_id
    )
    try:
        run_stdio(principal, service)
    except KeyboardInterrupt:
        typer.echo("stopped", err=True)
