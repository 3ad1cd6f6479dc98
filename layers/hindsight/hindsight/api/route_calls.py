"""What a route function takes and gives, whoever serves it: the request (``RouteRequest``),
the call (``RouteCall``: the parsed input, the caller, the service) and the ``Answer``
(status, body, and the metrics and log line the call produced). ``routes.py`` holds the
route functions."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar

from hindsight.core.errors import UnauthorizedError
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService

JSON = "application/json"
COUNT = "Count"
MILLISECONDS = "Milliseconds"

InputT = TypeVar("InputT")
Metric = tuple[str, str, float]  # name, unit ("Count", "Milliseconds"), value


@dataclass(frozen=True)
class RouteRequest:
    """What a route reads of an HTTP request, however it arrived (proxy event or ASGI).

    ``body_source`` is the body, or a function reading it: a proxy event's body is
    decoded (400 when its base64 is broken) only once the caller is authenticated.
    """

    headers: Mapping[str, str]
    body_source: bytes | Callable[[], bytes] = b""
    query: Mapping[str, str] = field(default_factory=dict)
    path_params: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def body(self) -> bytes:
        source = self.body_source
        return source if isinstance(source, bytes) else source()

    def header(self, name: str) -> str:
        wanted = name.lower()
        for key, value in self.headers.items():
            if key.lower() == wanted:
                return value
        return ""

    def has_header(self, name: str) -> bool:
        """Whether the request carries ``name`` at all (even empty)."""
        wanted = name.lower()
        return any(key.lower() == wanted for key in self.headers)


@dataclass(frozen=True)
class Answer:
    """A route's answer: status and body (a JSON object, or text of ``media_type``), plus
    what it observed (metrics for CloudWatch, one log line)."""

    status: int
    body: Mapping[str, Any] | str
    media_type: str = JSON
    headers: Mapping[str, str] = field(default_factory=dict)
    metrics: tuple[Metric, ...] = ()
    log: tuple[str, Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class RouteCall(Generic[InputT]):
    """One call of a route: its parsed input, the caller (None on public routes) and the
    service (built on first use: the docs routes never need it)."""

    input: InputT
    principal: Principal | None
    services: Callable[[], MemoryService]

    @property
    def service(self) -> MemoryService:
        return self.services()

    @property
    def caller(self) -> Principal:
        if self.principal is None:  # an authenticated route called without a caller
            raise UnauthorizedError("this route needs a caller; send an API key")
        return self.principal
