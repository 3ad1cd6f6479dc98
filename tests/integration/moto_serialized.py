"""moto in server mode with one request at a time: ``python -m tests.integration.moto_serialized``.

moto's DynamoDB applies a ``TransactWriteItems`` item by item and rolls back by restoring
a copy of the whole table, so two transactions running at once on moto's threaded
server can leave a half-applied transaction behind. Real DynamoDB transactions are
serializable. Handling one request at a time gives moto that isolation (every
DynamoDB call becomes atomic), which the record store contract's race test relies on;
clients may still send concurrently.
"""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple


class SerializedApp:
    """A WSGI app that runs one request at a time through moto's dispatcher."""

    def __init__(self) -> None:
        self._app = DomainDispatcherApplication(create_backend_app)
        self._lock = threading.Lock()

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        with self._lock:
            return list(self._app(environ, start_response))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=5055)
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_PORT", str(args.port))
    run_simple(
        args.host,
        args.port,
        SerializedApp(),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
