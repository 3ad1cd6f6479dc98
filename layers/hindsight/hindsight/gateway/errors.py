"""The local gateway's one error: it cannot start or invoke a function as asked."""

from __future__ import annotations

from hindsight.core.errors import ConfigurationError


class GatewayConfigError(ConfigurationError):
    """The gateway cannot start as asked (template missing, unsafe keyless bind...).

    Not a client's error: a ``ConfigurationError``. At start-up it stops the gateway with
    its message; a function that cannot be loaded at request time answers 502, as API
    Gateway would.
    """
