"""The explorer's files: everything the page loads is served, nothing reaches outside,
every UI string key the scripts use is in the one strings table, and the files ship
as package data."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from hindsight.core.errors import NotFoundError
from hindsight.explorer.assets import asset, page

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ("explorer.js", "api.js", "dom.js", "memories.js", "tools.js", "strings.js")


def test_every_file_the_page_and_its_modules_load_is_served() -> None:
    html = page()
    loaded = set(re.findall(r'explorer/assets/([\w.-]+)"', html))
    assert {"explorer.js", "explorer.css", "uPlot.iife.min.js", "uPlot.min.css"} <= loaded
    for name in SCRIPTS:
        loaded |= set(re.findall(r'from "\./([\w.-]+)"', asset(name)[0]))
    for name in loaded:
        text, media_type = asset(name)
        assert text and media_type.startswith(("text/javascript", "text/css"))


def test_no_file_reaches_another_host() -> None:
    for name in (*SCRIPTS, "explorer.css"):
        assert not re.search(r"https?://", asset(name)[0]), name
    assert not re.search(r"(src|href)=\"https?://", page())


def test_every_string_key_used_is_in_the_table() -> None:
    table = asset("strings.js")[0]
    keys = set(re.findall(r'^\s+"([\w.]+)": ', table, re.MULTILINE))
    used: set[str] = set()
    for name in SCRIPTS:
        used |= set(re.findall(r'\bt\("([\w.]+)"', asset(name)[0]))
    used |= set(re.findall(r'data-t="([\w.]+)"', page()))
    assert used and used <= keys, sorted(used - keys)


def test_an_unknown_name_is_not_found_and_the_page_is_not_an_asset() -> None:
    with pytest.raises(NotFoundError, match=r"explorer\.js"):
        asset("nope.js")
    with pytest.raises(NotFoundError):
        asset("index.html")


def test_the_files_ship_as_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "explorer/static/*" in config["tool"]["setuptools"]["package-data"]["hindsight"]
