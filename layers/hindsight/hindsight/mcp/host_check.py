"""DNS-rebinding protection for ``POST /mcp``: the ``Host`` and ``Origin`` a request may carry.

A web page the user opens can make the browser send requests to a name it controls that
it then points at 127.0.0.1 (DNS rebinding); a keyless local server would answer them.
The browser still sends the attacker's name as ``Host`` and its page as ``Origin``, so
``/mcp`` only answers requests whose ``Host`` is an allowed name and whose ``Origin``
(when a browser sends one) is an allowed page, as the MCP SDK's
``TransportSecuritySettings`` would have it (same patterns). The check is ours rather than
the SDK's middleware so that the refusal is a 403 in the API's error shape with what to
set, given before the key is even looked at, and so that it also runs inside Lambda.

Allowed out of the box: the loopback names (``127.0.0.1``, ``localhost``, ``[::1]``, any
port) as hosts and ``http(s)://`` pages on them as origins. More come from
``HINDSIGHT_MCP_ALLOWED_HOSTS`` and ``HINDSIGHT_MCP_ALLOWED_ORIGINS`` (comma-separated;
``name:*`` allows any port, ``*`` switches that check off, e.g. behind a proxy that
checks it). On AWS the API Gateway domain the request came through is allowed too
(API Gateway routes only its own domains, so that ``Host`` cannot be rebound).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hindsight.core.errors import ForbiddenError
from hindsight.settings import Settings

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
ANY = "*"


def _listed(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def loopback_hosts() -> list[str]:
    return [*LOOPBACK_NAMES, *(f"{name}:*" for name in LOOPBACK_NAMES)]


def loopback_origins() -> list[str]:
    return [
        f"{scheme}://{name}{port}"
        for scheme in ("http", "https")
        for name in LOOPBACK_NAMES
        for port in ("", ":*")
    ]


@dataclass(frozen=True)
class AllowedPeers:
    """The hosts and origins ``/mcp`` answers (``None``: that check is off)."""

    hosts: tuple[str, ...] | None
    origins: tuple[str, ...] | None

    @classmethod
    def from_settings(cls, settings: Settings, extra_hosts: Iterable[str] = ()) -> AllowedPeers:
        hosts = [*loopback_hosts(), *_listed(settings.mcp_allowed_hosts), *extra_hosts]
        origins = [*loopback_origins(), *_listed(settings.mcp_allowed_origins)]
        extra_origins = [f"https://{host}" for host in extra_hosts]
        return cls(
            hosts=None if ANY in hosts else tuple(hosts),
            origins=None if ANY in origins else (*origins, *extra_origins),
        )

    def check(self, headers: Mapping[str, str]) -> None:
        """Raise ``ForbiddenError`` (403) naming the header and the setting to change.

        No ``Host`` at all is not a browser's request (browsers always send one), so only
        a ``Host`` that is there is checked; likewise ``Origin``.
        """
        lowered = {str(k).lower(): str(v) for k, v in headers.items()}
        host = lowered.get("host", "").strip()
        if host and self.hosts is not None and not matches(host, self.hosts):
            raise ForbiddenError(
                f"the Host {host!r} is not allowed on /mcp (DNS-rebinding protection); call "
                "it by an allowed name such as 127.0.0.1, or add this name to "
                "HINDSIGHT_MCP_ALLOWED_HOSTS"
            )
        origin = lowered.get("origin", "").strip()
        if origin and self.origins is not None and not matches(origin, self.origins):
            raise ForbiddenError(
                f"requests from the page {origin!r} are not allowed on /mcp (DNS-rebinding "
                "protection); add that origin to HINDSIGHT_MCP_ALLOWED_ORIGINS if it is yours"
            )


def matches(value: str, allowed: Iterable[str]) -> bool:
    """``value`` is one of ``allowed``, or ``name:*`` allows ``name`` with any port (the
    pattern language of the MCP SDK's ``TransportSecuritySettings``). Names compare
    case-blind, as DNS does."""
    wanted = value.lower()
    for pattern in allowed:
        pattern = pattern.lower()
        if wanted == pattern:
            return True
        if pattern.endswith(":*"):
            base, _, port = wanted.rpartition(":")
            if base == pattern[:-2] and port.isdigit():
                return True
    return False
