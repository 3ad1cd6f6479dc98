"""The reflector's word tables, shipped as package data: ``en.json`` and ``zh.json``.

Each file maps a table name to ``{"about": ..., "words" | "map" | "characters": ...}``.
A table may have an English part and a Chinese part; asked for without a language, the
two are joined, English first. The files are read on first use and kept.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from types import MappingProxyType
from typing import Any, Literal

Language = Literal["en", "zh"]
_LANGUAGES: tuple[Language, ...] = ("en", "zh")


@cache
def _tables(language: Language) -> dict[str, dict[str, Any]]:
    text = files(__name__).joinpath(f"{language}.json").read_text(encoding="utf-8")
    tables: dict[str, dict[str, Any]] = json.loads(text)
    return tables


def _parts(name: str, language: Language | None, key: str) -> list[Any]:
    languages = _LANGUAGES if language is None else (language,)
    parts = [_tables(lang)[name][key] for lang in languages if name in _tables(lang)]
    if not parts:
        raise KeyError(f"no word table {name!r} ({language or 'any language'})")
    return parts


@cache
def words(name: str, language: Language | None = None) -> frozenset[str]:
    """A word list as a set."""
    return frozenset(word for part in _parts(name, language, "words") for word in part)


@cache
def ordered_words(name: str, language: Language | None = None) -> tuple[str, ...]:
    """A word list in the order the file gives it."""
    return tuple(word for part in _parts(name, language, "words") for word in part)


@cache
def characters(name: str, language: Language | None = None) -> frozenset[str]:
    """A table of single characters, written as runs of characters."""
    return frozenset("".join(run for part in _parts(name, language, "characters") for run in part))


@cache
def mapping(name: str, language: Language | None = None) -> MappingProxyType[str, str]:
    """A word map, read-only, in the order the files give it (English first)."""
    joined: dict[str, str] = {}
    for part in _parts(name, language, "map"):
        joined.update(part)
    return MappingProxyType(joined)
