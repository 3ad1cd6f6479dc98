"""Local gateway: serves template.yaml's API routes through the real Lambda handlers.

Like ``sam local start-api`` without Docker: it reads the SAM template (``template``),
imports each function's handler by file path, turns every HTTP request into an API
Gateway REST proxy event plus a minimal Lambda context (``lambda_emulation``), invokes
``lambda_handler`` in-process (``dispatch``) and writes the proxy response back
(``http_server``). The service behind the handlers is the embedded default (SQLite +
in-process index + local model) unless settings say otherwise.

    python -m hindsight.gateway.local_gateway --port 8080

This module holds the gateway's lifecycle (``LocalGateway``) and its command line:
the keyless-safety check, the banner, ``serve`` and ``main``.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import socket
import sys
import threading
from collections.abc import Mapping
from http.server import ThreadingHTTPServer
from pathlib import Path

from hindsight.api.auth import load_key_ring
from hindsight.bootstrap import configure, get_service
from hindsight.core.errors import HindsightError
from hindsight.gateway.dispatch import Dispatcher
from hindsight.gateway.errors import GatewayConfigError
from hindsight.gateway.http_server import request_handler_class
from hindsight.gateway.template import find_template, routes_from_template, stage_name
from hindsight.settings import Settings

__all__ = [
    "KEYLESS_WARNING",
    "GatewayConfigError",
    "LocalGateway",
    "banner",
    "is_loopback",
    "main",
    "prepare_settings",
    "serve",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
KEYLESS_WARNING = "no API keys configured: serving keyless on {host} — do not expose this port"


class GatewayHTTPServer(ThreadingHTTPServer):
    """One thread per connection, with a listen backlog for many agents connecting at once
    (the standard library's 5 resets connections beyond a handful of simultaneous ones)."""

    request_queue_size = socket.SOMAXCONN
    daemon_threads = True


class LocalGateway:
    """An HTTP server in a background thread serving the template's routes.

    ``LocalGateway(port=0).start()`` picks a free port; ``.url`` is where it listens.
    Settings must be configured (``hindsight.bootstrap.configure``) before start, or
    are taken from the environment on the first request.
    """

    def __init__(
        self,
        host: str = DEFAULT_HOST,
        port: int = 0,
        template: str | Path | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.settings = settings
        self.template_path = find_template(template)
        self.routes = routes_from_template(self.template_path)
        self.stage = stage_name(self.template_path)
        self.dispatcher = Dispatcher(self.routes, self.stage)
        self._server = GatewayHTTPServer((host, port), request_handler_class(self.dispatcher))
        self._thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = self.host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}"

    def load_functions(self) -> None:
        """Import every handler now, so that import errors show at start, not per request."""
        self.dispatcher.load_all()

    def warm(self) -> None:
        """Configure the given settings (if any), import the handlers, build the service
        and load its embedding model."""
        if self.settings is not None:
            configure(self.settings)
        self.load_functions()
        get_service().warm_up()  # load the model now, not on the first request

    def start(self) -> LocalGateway:
        self.warm()
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="hindsight-gateway", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (the CLI's foreground mode)."""
        try:
            self._server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self._server.server_close()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> LocalGateway:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


# --- command line ----------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` keeps the port private to this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def prepare_settings(
    host: str,
    data_dir: str | Path | None = None,
    allow_anonymous: bool | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Settings, bool]:
    """Settings for the gateway and whether it serves keyless.

    Keyless (no keys configured) is allowed only on a loopback host; there anonymous
    access is on unless switched off explicitly (flag or HINDSIGHT_ALLOW_ANONYMOUS).
    """
    env = os.environ if environ is None else environ
    settings = Settings.from_env(env, data_dir=data_dir, allow_anonymous=allow_anonymous)
    if len(load_key_ring(settings)) > 0:
        return settings, False
    if not is_loopback(host):
        raise GatewayConfigError(
            f"refusing to serve without API keys on {host}: anyone who can reach the port "
            "could read every memory. Configure keys (HINDSIGHT_API_KEYS_FILE) or bind to "
            "127.0.0.1"
        )
    if allow_anonymous is None and "HINDSIGHT_ALLOW_ANONYMOUS" not in env:
        settings = Settings.from_env(env, data_dir=data_dir, allow_anonymous=True)
    return settings, settings.allow_anonymous


def banner(gateway: LocalGateway, settings: Settings, keyless: bool) -> str:
    lines = [
        f"Hindsight local gateway listening on {gateway.url}",
        f"  template : {gateway.template_path}",
        f"  backend  : {settings.backend}",
        f"  data dir : {Path(settings.data_dir).resolve()}",
        f"  routes   : {len(gateway.routes)}",
    ]
    auth = "" if keyless else ' -H "Authorization: Bearer $HINDSIGHT_KEY"'
    if keyless:
        lines.append("WARNING: " + KEYLESS_WARNING.format(host=gateway.host))
    elif not settings.allow_anonymous:
        lines.append("  auth     : API keys required (Authorization: Bearer <key>)")
    lines += [
        "Try:",
        f"  curl -s -X POST {gateway.url}/v1/memories{auth} -H 'Content-Type: application/json' "
        '-d \'{"user_id": "u1", "content": "用户对花生过敏", "category": "constraint"}\'',
        f"  curl -s -X POST {gateway.url}/v1/retrieve{auth} -H 'Content-Type: application/json' "
        '-d \'{"user_id": "u1", "query": "饮食禁忌"}\'',
    ]
    return "\n".join(lines)


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    data_dir: str | Path | None = None,
    allow_anonymous: bool | None = None,
    template: str | Path | None = None,
) -> None:
    """Run the gateway in the foreground until interrupted."""
    settings, keyless = prepare_settings(host, data_dir, allow_anonymous)
    gateway = LocalGateway(host, port, template, settings=settings)
    gateway.warm()  # open the store, load the index and model before the first request
    print(banner(gateway, settings, keyless), flush=True)
    gateway.serve_forever()
    print("stopped", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve template.yaml's routes locally.")
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--template", default=None)
    parser.add_argument(
        "--allow-anonymous",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve without keys when none are configured (default on 127.0.0.1)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        serve(args.host, args.port, args.data_dir, args.allow_anonymous, args.template)
    except HindsightError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
