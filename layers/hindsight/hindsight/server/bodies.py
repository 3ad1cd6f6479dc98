"""Request bodies read from ASGI with the API's limit (``api.http.body_limit``).

A body over the limit is refused with 413 before it is all in memory: a declared
``Content-Length`` over the limit is refused without reading a byte of it, a chunked
body as soon as it passes the limit. What the client is still sending is read and
dropped up to ``DRAIN_FACTOR`` times the limit, so that it sees the answer rather than
a reset connection; the connection is closed after the answer either way.
"""

from __future__ import annotations

from starlette.types import Receive, Scope

from hindsight.core.commands import body_too_large
from hindsight.core.errors import MalformedRequestError, PayloadTooLargeError

DRAIN_FACTOR = 4  # refused bodies up to this many times the limit are read and dropped


class ClientDisconnectedError(Exception):
    """The client went away before its body arrived; there is no one to answer."""


def declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError as exc:
                raise MalformedRequestError(
                    "Content-Length is not a number; send the body's size in bytes"
                ) from exc
    return None


async def _drain(receive: Receive, received: int, budget: int) -> None:
    while received <= budget:
        message = await receive()
        if message["type"] != "http.request":
            return
        received += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The whole body, or ``PayloadTooLargeError`` (413) past ``limit`` bytes."""
    length = declared_length(scope)
    if length is not None and length > limit:
        if length <= DRAIN_FACTOR * limit:
            await _drain(receive, 0, DRAIN_FACTOR * limit)
        raise PayloadTooLargeError(body_too_large(length, limit))
    chunks: list[bytes] = []
    received = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnectedError
        chunk = message.get("body", b"")
        received += len(chunk)
        if received > limit:
            if message.get("more_body", False):
                await _drain(receive, received, DRAIN_FACTOR * limit)
            raise PayloadTooLargeError(body_too_large(received, limit))
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
