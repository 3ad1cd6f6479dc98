"""``Hindsight.embedded()``: the server package's in-process transport, imported lazily.

The server package (``hindsight``) is optional: importing the client never imports it
(nor numpy, nor the embedding model); only ``embedded()`` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hindsight_client.errors import HindsightError


def in_process_transport(data_dir: str | Path | None, template: str | Path | None) -> Any:
    """The server's ``InProcessTransport`` (sync and async) for ``data_dir``."""
    try:
        from hindsight.core.errors import HindsightError as ServerError
        from hindsight.gateway.in_process import open_in_process
    except ImportError as exc:
        raise HindsightError(
            "Hindsight.embedded() needs the Hindsight server package in this environment "
            f"({exc}); install it from the repository root with `pip install -e .`, or "
            "connect to a running server with Hindsight(base_url=...)"
        ) from exc
    try:
        return open_in_process(data_dir, template)
    except ServerError as exc:  # a setting or the template is wrong: say which
        raise HindsightError(f"cannot start the embedded service: {exc.message}") from exc
