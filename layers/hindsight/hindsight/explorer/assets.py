"""The explorer's files, read from the package once and served by name."""

from __future__ import annotations

from functools import cache
from importlib import resources

from hindsight.core.errors import NotFoundError

MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
PAGE = "index.html"


@cache
def _files() -> dict[str, str]:
    """Every servable file of ``static/`` by name (the page is served at /explorer)."""
    folder = resources.files("hindsight.explorer").joinpath("static")
    return {
        entry.name: entry.read_text(encoding="utf-8")
        for entry in folder.iterdir()
        if entry.is_file() and (entry.name == PAGE or _suffix(entry.name) in MEDIA_TYPES)
    }


def _suffix(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:] if dot > 0 else ""


def page() -> str:
    """The explorer's HTML page."""
    return _files()[PAGE]


def asset(name: str) -> tuple[str, str]:
    """A script, style sheet or licence of the explorer: its text and media type."""
    text = _files().get(name) if name != PAGE else None
    if text is None:
        known = ", ".join(sorted(n for n in _files() if n != PAGE))
        raise NotFoundError(f"the explorer has no file {name!r}; its files are: {known}")
    return text, MEDIA_TYPES[_suffix(name)]
