"""Loopback proxies a test owns, to inject faults in front of the shared local engines.

The OpenSearch node and moto are shared by every test running on the machine, so they are
never stopped; a test points the backend at one of these proxies instead and breaks the
proxy:

- ``TcpFaultProxy`` relays bytes to the engine. ``stop()`` closes its listening socket
  (new connections are refused, as by a stopped node) and resets every open connection;
  ``start()`` listens again on the same port.
- ``ThrottlingHttpProxy`` relays HTTP requests (moto speaks HTTP/1.1) one by one and,
  while ``throttle(n)`` has requests left, answers them as DynamoDB does when it throttles:
  HTTP 400 with the JSON error shape of ``ProvisionedThroughputExceededException`` or
  ``ThrottlingException``, so botocore's own retry logic runs against it.
"""

from __future__ import annotations

import http.client
import json
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

DYNAMODB_ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
THROTTLE_MESSAGES = {
    "ProvisionedThroughputExceededException": (
        "The level of configured provisioned throughput for the table was exceeded. "
        "Consider increasing your provisioning level with the UpdateTable API."
    ),
    "ThrottlingException": "Rate of requests exceeds the allowed throughput.",
}


def _reset(sock: socket.socket) -> None:
    """Close with an RST (linger 0), as a crashed peer does, instead of a clean FIN."""
    with suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class TcpFaultProxy:
    """A byte relay on 127.0.0.1 to ``upstream`` (``http://host:port``) that can be stopped."""

    def __init__(self, upstream: str) -> None:
        parsed = urlparse(upstream)
        self.upstream = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self.port = 0
        self.connections = 0  # accepted while up
        self._listener: socket.socket | None = None
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> TcpFaultProxy:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Refuse new connections and reset the open ones (the node went away)."""
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._open = list(self._open), set()
        if listener is not None:
            listener.close()
        for sock in sockets:
            _reset(sock)

    @contextmanager
    def down(self) -> Iterator[None]:
        self.stop()
        try:
            yield
        finally:
            self.start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by stop()
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _reset(client)
                continue
            server.settimeout(None)
            with self._lock:
                if self._listener is not listener:  # stopped meanwhile
                    _reset(client)
                    server.close()
                    return
                self._open.update((client, server))
                self.connections += 1
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(source, target), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(source)
                self._open.discard(target)
            for sock in (source, target):
                with suppress(OSError):
                    sock.close()


class ThrottlingHttpProxy:
    """An HTTP relay to ``upstream`` that answers DynamoDB throttling errors on demand."""

    def __init__(self, upstream: str) -> None:
        parsed = urlparse(upstream)
        self.upstream = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self._lock = threading.Lock()
        self._left = 0
        self._code = "ProvisionedThroughputExceededException"
        self.throttled = 0  # requests answered with a throttling error
        self.relayed = 0
        self._server = _ProxyServer(("127.0.0.1", 0), _RelayHandler)
        self._server.proxy = self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> ThrottlingHttpProxy:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def throttle(self, requests: int, code: str = "ProvisionedThroughputExceededException") -> None:
        """Answer the next ``requests`` requests with ``code`` (0: relay everything)."""
        if code not in THROTTLE_MESSAGES:
            raise ValueError(f"unknown throttling code {code!r}")
        with self._lock:
            self._left, self._code = requests, code

    def take_throttle(self) -> str | None:
        with self._lock:
            if self._left <= 0:
                self.relayed += 1
                return None
            self._left -= 1
            self.throttled += 1
            return self._code


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    proxy: ThrottlingHttpProxy


class _RelayHandler(BaseHTTPRequestHandler):
    """Answers one request: a throttling error while the proxy has some left, else the
    engine's own answer."""

    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        proxy = self.server.proxy
        code = proxy.take_throttle()
        if code is not None:
            self._answer(400, _throttle_body(code), {})
            return
        status, headers, payload = _relay(proxy.upstream, self, body)
        self._answer(status, payload, headers)

    def _answer(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        headers.setdefault("Content-Type", "application/x-amz-json-1.0")
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


def _throttle_body(code: str) -> bytes:
    return json.dumps(
        {"__type": DYNAMODB_ERROR_PREFIX + code, "message": THROTTLE_MESSAGES[code]}
    ).encode()


def _relay(
    upstream: tuple[str, int], request: BaseHTTPRequestHandler, body: bytes
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection(*upstream, timeout=30)
    try:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        connection.request(request.command, request.path, body=body, headers=headers)
        response = connection.getresponse()
        payload = response.read()
        kept = {k: v for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP}
        return response.status, kept, payload
    finally:
        connection.close()
