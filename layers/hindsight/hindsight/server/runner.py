"""Serving the ASGI application with uvicorn: in the foreground (``serve``, what
``hindsight serve`` runs) or in a background thread (``LocalServer.start``, for tests,
benchmarks and notebooks).

Shutdown is graceful: on SIGTERM or Ctrl-C the server stops accepting connections,
closes idle ones, lets the requests in flight finish however long they take (a second
Ctrl-C, or the service manager's stop timeout, cuts that short), runs the application's
shutdown, and returns normally, so the process exits 0 and the embedded store is
closed by its exit hook (``bootstrap``: the HNSW graphs saved, the databases closed).
Nothing acknowledged is lost: the SQLite store commits every write before the request
is answered. uvicorn's own habit of re-raising the signal after a graceful shutdown is
left out, as it would kill the process before those exit hooks run.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import uvicorn

from hindsight.adapters.embedders.engine_line import describe
from hindsight.bootstrap import configure, get_service
from hindsight.server.app import DEFAULT_THREADS, DEFAULT_WRITE_THREADS, create_app
from hindsight.server.discovery import SERVER_FILE, client_url, remove_record, write_record
from hindsight.server.logs import configure_logging
from hindsight.server.scheduler import LocalScheduler, scheduled_jobs
from hindsight.server.startup import (
    DataDirLock,
    ServerStartError,
    banner,
    data_details,
    lock_data_dir,
    prepare_settings,
)
from hindsight.settings import Settings

logger = logging.getLogger("hindsight.server")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
BACKLOG = 2048
_held_locks: list[DataDirLock] = []  # held until the process ends (after the exit hooks)


class _Server(uvicorn.Server):
    """uvicorn's server, without re-raising the caught signal after shutting down."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto given explicitly: asyncio switches Nagle's algorithm off (TCP_NODELAY) only on
    # connections whose socket says IPPROTO_TCP, and a response's headers and body are two
    # writes; with Nagle on, every answer after the first on a kept-alive connection
    # waited ~40 ms for the client's delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


class LocalServer:
    """The ASGI application on a socket of its own.

    ``LocalServer(port=0).start()`` serves from a background thread (``.url`` says
    where); ``serve_forever()`` in the calling thread, with signal handling when that is
    the main thread. Settings, when given, are configured (``bootstrap.configure``)
    before the service is built.
    """

    def __init__(
        self,
        host: str = DEFAULT_HOST,
        port: int = 0,
        settings: Settings | None = None,
        threads: int = DEFAULT_THREADS,
        write_threads: int = DEFAULT_WRITE_THREADS,
        grace_seconds: float | None = None,
    ) -> None:
        self.settings = settings
        self.threads = threads
        self.write_threads = write_threads
        self.app = create_app(threads, self.write_threads)
        self._socket = bind_socket(host, port)
        config = uvicorn.Config(
            self.app,
            lifespan="on",
            log_config=None,
            access_log=False,  # the application logs every request itself
            server_header=False,
            # None: in-flight requests finish, however long (a store cut short would
            # answer 500 while its worker thread still commits it)
            timeout_graceful_shutdown=None if grace_seconds is None else int(grace_seconds),
            backlog=BACKLOG,
        )
        self._server = _Server(config)
        self._thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        return str(self._socket.getsockname()[0])

    @property
    def port(self) -> int:
        return int(self._socket.getsockname()[1])

    @property
    def url(self) -> str:
        host = self.host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}"

    def warm(self) -> None:
        """Configure the given settings (if any), build the service, load the model."""
        if self.settings is not None:
            configure(self.settings)
        get_service().warm_up()

    def start(self, timeout: float = 60.0) -> LocalServer:
        """Warm up, then serve from a background thread; returns once it accepts."""
        self.warm()
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="hindsight-server"
        )
        self._thread.daemon = True
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ServerStartError("the server did not start; see the log for why")
            time.sleep(0.01)
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until SIGTERM / Ctrl-C (or ``stop``)."""
        try:
            self._server.run(sockets=[self._socket])
        finally:
            self._socket.close()

    def stop(self, timeout: float = 300.0) -> None:
        """Stop accepting, let requests in flight finish, shut the application down."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            self._thread = None
        self._socket.close()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    data_dir: str | Path | None = None,
    allow_anonymous: bool | None = None,
    threads: int = DEFAULT_THREADS,
    log_format: str = "text",
    write_threads: int = DEFAULT_WRITE_THREADS,
) -> None:
    """``hindsight serve``: check, lock the data directory, warm up, serve until told
    to stop."""
    configure_logging(log_format)
    settings, keyless = prepare_settings(host, data_dir, allow_anonymous)
    lock = lock_data_dir(settings)
    if lock is not None:
        _held_locks.append(lock)
    server = LocalServer(
        host, port, settings=settings, threads=threads, write_threads=write_threads
    )
    server.warm()  # open the store, load the index and the model before the first request
    details = [
        *data_details(settings),
        (
            "requests",
            f"{threads} reads (--threads) and {server.write_threads} writes (--write-threads) "
            "at once; the rest wait their turn",
        ),
        ("embedding", describe(get_service().ports.embedder)),
        ("MCP", f"{server.url}/mcp"),
        ("docs", f"{server.url}/docs"),
        ("CLI", "`hindsight` and `hindsight mcp` on this data dir go through this server"),
    ]
    scheduler = start_schedules(settings)
    print(banner("Hindsight", server.url, host, settings, keyless, details), flush=True)
    announced = announce(settings, host, server.port, keyless)
    try:
        server.serve_forever()
    finally:
        if announced:
            remove_record(settings.data_dir)
        if scheduler is not None:
            scheduler.stop()
    logger.info("server stopped")


def announce(settings: Settings, host: str, port: int, keyless: bool) -> bool:
    """Write ``server.json`` in the embedded data directory, so that the CLI and ``hindsight
    mcp`` on it call this server instead of opening the files (``discovery``). The socket
    listens already: a client's first request waits in its backlog until uvicorn serves."""
    if settings.backend.strip().lower() != "embedded":
        return False
    keys_required = not keyless and not settings.allow_anonymous
    record = write_record(settings.data_dir, client_url(host, port), keys_required)
    logger.info("server file written path=%s", Path(record.data_dir) / SERVER_FILE)
    return True


def start_schedules(settings: Settings) -> LocalScheduler | None:
    """The local schedules (reflection, maintenance) in a background thread; on the AWS
    backend EventBridge runs them, so the server does not."""
    if settings.backend.strip().lower() == "aws":
        logger.info("local schedules off: on the aws backend EventBridge Scheduler runs them")
        return None
    return LocalScheduler(get_service(), scheduled_jobs(settings, get_service())).start()
