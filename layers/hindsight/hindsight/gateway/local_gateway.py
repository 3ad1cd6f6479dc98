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
import logging
import signal
import socket
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

from hindsight.bootstrap import configure, get_service
from hindsight.core.errors import HindsightError
from hindsight.gateway.dispatch import Dispatcher
from hindsight.gateway.errors import GatewayConfigError
from hindsight.gateway.http_server import request_handler_class
from hindsight.gateway.template import find_template, routes_from_template, stage_name
from hindsight.server.startup import (
    KEYLESS_WARNING,
    DataDirLock,
    data_details,
    is_loopback,
    lock_data_dir,
    prepare_settings,
)
from hindsight.server.startup import banner as startup_banner
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
_held_locks: list[DataDirLock] = []


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
def banner(gateway: LocalGateway, settings: Settings, keyless: bool) -> str:
    authorized = any(route.authorizer is not None for route in gateway.routes)
    if not authorized:
        authorizer = "none in the template"
    elif keyless:
        authorizer = "skipped: keyless on loopback (it could only refuse every request)"
    else:
        authorizer = "the template's Lambda authorizer runs before each keyed route"
    details = [
        ("template", str(gateway.template_path)),
        *data_details(settings),
        ("routes", str(len(gateway.routes))),
        ("authorizer", authorizer),
        (
            "requests",
            "ONE invocation at a time, like sam local start-api; a request waiting over "
            f"{gateway.dispatcher.wait_seconds:g} s is answered 503. For many agents at once run "
            "`hindsight serve` without --gateway",
        ),
    ]
    return startup_banner(
        "Hindsight local gateway", gateway.url, gateway.host, settings, keyless, details
    )


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    data_dir: str | Path | None = None,
    allow_anonymous: bool | None = None,
    template: str | Path | None = None,
) -> None:
    """Run the gateway in the foreground until interrupted (Ctrl-C or SIGTERM); the
    invocation in progress finishes first."""
    settings, keyless = prepare_settings(host, data_dir, allow_anonymous)
    lock = lock_data_dir(settings)
    gateway = LocalGateway(host, port, template, settings=settings)
    gateway.warm()  # open the store, load the index and model before the first request
    print(banner(gateway, settings, keyless), flush=True)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        gateway.serve_forever()
    finally:
        signal.signal(signal.SIGTERM, previous)
        gateway.dispatcher.drain()
        if lock is not None:
            _held_locks.append(lock)  # released when the process ends, after the exit hooks
    print("stopped", flush=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


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
