"""The public API: every name of ``hindsight.__all__`` imports, is the object of the module
that defines it, is what docs/library.md shows, and costs nothing until it is used."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hindsight

ROOT = Path(__file__).resolve().parents[2]
INIT = ROOT / "layers" / "hindsight" / "hindsight" / "__init__.py"
LIBRARY_DOC = ROOT / "docs" / "library.md"


def documented_names() -> list[str]:
    """The names in the first column of docs/library.md's table of public names."""
    text = LIBRARY_DOC.read_text(encoding="utf-8").split("## The public names", 1)[1]
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    return [name for row in rows for name in re.findall(r"`([A-Za-z_]+)`", row.split("|")[1])]


def example_imports() -> list[str]:
    """The names the example of docs/library.md imports from ``hindsight``."""
    code = LIBRARY_DOC.read_text(encoding="utf-8").split("```python", 1)[1].split("```", 1)[0]
    return [
        alias.name
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.ImportFrom) and node.module == "hindsight"
        for alias in node.names
    ]


def type_checking_imports() -> dict[str, str]:
    """What ``__init__``'s ``TYPE_CHECKING`` block imports: name -> module."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
    )
    return {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


@pytest.mark.parametrize("name", hindsight.__all__)
def test_each_public_name_imports_from_its_home(name: str) -> None:
    value = getattr(hindsight, name)
    home = importlib.import_module(hindsight._HOMES[name])
    assert value is getattr(home, name)


def test_the_public_names_are_declared_once_and_alike_for_type_checkers() -> None:
    assert len(hindsight.__all__) == len(set(hindsight.__all__)) > 30
    assert sorted(hindsight.__all__) == hindsight.__all__
    assert set(hindsight.__all__) == set(hindsight._HOMES)
    assert type_checking_imports() == hindsight._HOMES


def test_the_docs_show_exactly_the_public_names() -> None:
    shown = documented_names()
    assert len(shown) == len(set(shown)), "a name is listed twice in docs/library.md"
    assert sorted(shown) == hindsight.__all__
    assert example_imports() and set(example_imports()) <= set(hindsight.__all__)


def test_a_name_that_is_not_public_is_refused_and_submodules_still_import() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Policy'"):
        hindsight.Policy  # noqa: B018  (internal: not in __all__)
    from hindsight import settings_reference  # a submodule, which __getattr__ leaves alone

    assert settings_reference.__name__ == "hindsight.settings_reference"


def test_importing_the_package_loads_none_of_what_the_names_need() -> None:
    """Every Lambda function imports ``hindsight`` first: it must stay as cheap as before."""
    probe = (
        "import sys, hindsight; "
        "print(sorted(m for m in sys.modules if m.startswith('hindsight.') or m in "
        "('pydantic', 'pydantic_settings', 'numpy')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.strip()
    assert loaded == "[]"
