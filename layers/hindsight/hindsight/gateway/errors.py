"""The local gateway's one error: it cannot start or invoke a function as asked."""

from __future__ import annotations

from hindsight.core.errors import HindsightError


class GatewayConfigError(HindsightError):
    """The gateway cannot start as asked (template missing, unsafe keyless bind...).

    Not a client's error: like any ``HindsightError`` without a status of its own, it
    answers 500 where a status is needed (``hindsight.api.errors.status_for``).
    """
