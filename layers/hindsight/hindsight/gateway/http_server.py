"""The gateway's HTTP/1.1 side: read a request (with body limits), write a response.

``request_handler_class(dispatcher)`` gives the ``BaseHTTPRequestHandler`` subclass a
``ThreadingHTTPServer`` needs; every method is handed to the ``Dispatcher``. Bodies
over 1 MiB are refused with 413 (and drained when not huge, so the client sees the
answer); chunked bodies are read too.
"""

from __future__ import annotations

import logging
from http.server import BaseHTTPRequestHandler
from typing import Any

from hindsight.api.http import body_limit
from hindsight.core.commands import body_too_large
from hindsight.gateway.dispatch import Dispatcher, GatewayResponse, error_response

logger = logging.getLogger(__name__)

DRAIN_FACTOR = 4  # refused bodies up to this many times the limit are read and dropped


class GatewayRequestHandler(BaseHTTPRequestHandler):
    server_version = "HindsightLocalGateway/1"
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    dispatcher: Dispatcher  # set on the subclass made per gateway

    def log_message(self, format: str, *args: Any) -> None:
        logger.info("%s %s", self.address_string(), format % args)

    def _send(self, response: GatewayResponse, close: bool = False) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            if name.lower() not in {"content-length", "connection", "transfer-encoding"}:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def _read_body(self) -> bytes | GatewayResponse:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length_header = self.headers.get("Content-Length")
        if not length_header:
            return b""
        try:
            length = int(length_header)
        except ValueError:
            return error_response(400, "Content-Length is not a number")
        limit = body_limit()
        if length > limit:
            self._discard(length, limit)
            return error_response(413, body_too_large(length, limit))
        return self.rfile.read(length)

    def _discard(self, length: int, limit: int) -> None:
        """Read and drop a refused body (if not huge) so the client sees the answer."""
        remaining = length if length <= DRAIN_FACTOR * limit else 0
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 65_536))
            if not chunk:
                break
            remaining -= len(chunk)

    def _read_chunked(self) -> bytes | GatewayResponse:
        chunks: list[bytes] = []
        total = 0
        limit = body_limit()
        while True:
            size_line = self.rfile.readline(1024).split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                return error_response(400, "malformed chunked body")
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(chunks)
            total += size
            if total > limit:
                return error_response(413, body_too_large(total, limit))
            chunks.append(self.rfile.read(size))
            self.rfile.readline(1024)

    def _handle(self) -> None:
        body = self._read_body()
        if isinstance(body, GatewayResponse):
            self._send(body, close=True)
            return
        headers = [(name, value) for name, value in self.headers.items()]
        response = self.dispatcher.dispatch(
            self.command, self.path, headers, body, self.client_address[0]
        )
        self._send(response)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _handle

    def do_HEAD(self) -> None:
        self._handle()


def request_handler_class(dispatcher: Dispatcher) -> type[GatewayRequestHandler]:
    """A handler class bound to ``dispatcher`` (the server makes one instance per request)."""
    return type("_BoundRequestHandler", (GatewayRequestHandler,), {"dispatcher": dispatcher})
