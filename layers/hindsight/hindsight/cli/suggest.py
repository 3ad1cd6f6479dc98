"""An unknown command answers with the nearest real one: ``hindsight recall`` → ``retrieve``.

Click refuses an unknown command with "No such command"; this group adds the command a
person most likely meant: a word people use for it (``recall``, ``search`` → ``retrieve``),
else the closest name by spelling (``retreive`` → ``retrieve``, ``ls`` → ``list``).
"""

from __future__ import annotations

import difflib
from typing import Any

from typer.core import TyperGroup

# words people use for a command the CLI names otherwise
SYNONYMS = {
    "recall": "retrieve",
    "search": "retrieve",
    "query": "retrieve",
    "find": "retrieve",
    "remember": "store",
    "add": "store",
    "save": "store",
    "get": "show",
    "delete": "forget",
    "remove": "forget",
    "rm": "forget",
    "ls": "list",
    "server": "serve",
    "start": "serve",
    "run": "serve",
    "documents": "document",
    "doc": "document",
    "status": "health",
}
SPELLING_CUTOFF = 0.6  # difflib's ratio below which two names are not a misspelling


def nearest_command(name: str, commands: list[str]) -> str | None:
    """The command ``name`` most likely meant, or None."""
    synonym = SYNONYMS.get(name.lower())
    if synonym in commands:
        return synonym
    close = difflib.get_close_matches(name.lower(), commands, n=1, cutoff=SPELLING_CUTOFF)
    return close[0] if close else None


class SuggestingGroup(TyperGroup):
    """Typer's command group, whose "No such command" names the nearest command."""

    # typed loosely: the context and command are typer's vendored click classes
    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            meant = nearest_command(args[0], self.list_commands(ctx))
            if meant is not None:
                ctx.fail(f"No such command {args[0]!r}. Did you mean {meant!r}?")
        return super().resolve_command(ctx, args)
