"""Expected errors of a command become one red line and an exit code, never a traceback.

A ``HindsightError`` exits 1 with its message; invalid input (a pydantic
``ValidationError``) exits 2, naming the argument or option the user typed.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import ValidationError
from typer.models import ArgumentInfo

from hindsight.cli.output import fail, validation_messages
from hindsight.cli.state import CliState
from hindsight.core.errors import HindsightError

F = TypeVar("F", bound=Callable[..., Any])

# command fields whose option is named differently (plural field, repeatable option)
_FIELD_OPTIONS = {
    "scopes": "--scope",
    "kinds": "--kind",
    "categories": "--category",
    "emotions": "--emotion",
    "statuses": "--status",
}


def _cli_names(command: Callable[..., Any]) -> Callable[[str], str]:
    """Map a command field to what the user typed: ``USER_ID`` or ``--top-k``."""
    hints = typing.get_type_hints(command, include_extras=True)
    arguments = {
        name
        for name, hint in hints.items()
        if any(isinstance(extra, ArgumentInfo) for extra in getattr(hint, "__metadata__", ()))
    }

    def name_of(field: str) -> str:
        if field in arguments:
            return field.upper()
        return _FIELD_OPTIONS.get(field, "--" + field.replace("_", "-"))

    return name_of


def handles_errors(command: F) -> F:
    """Wrap a command so that expected errors print one line and exit 1 (or 2)."""
    name_of = _cli_names(command)

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx: Any = kwargs.get("ctx")
        state = ctx.find_object(CliState) if hasattr(ctx, "find_object") else None
        as_json = bool(kwargs.get("as_json")) or (state is not None and state.json_output)
        try:
            return command(*args, **kwargs)
        except HindsightError as exc:
            fail(exc.message, 1, as_json=as_json)
        except ValidationError as exc:
            messages = validation_messages(exc, name_of)
            fail("invalid input: " + "; ".join(messages), 2, as_json=as_json)

    return wrapper  # type: ignore[return-value]
