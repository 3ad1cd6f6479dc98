"""bench/ and training/ hold what is maintained: every script is listed in its folder's
README (what it measures or fits, its runtime), every command of ``make bench`` runs a
script that exists, and bench/ stays within its size budget."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _scripts(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("folder", ["bench", "training"])
def test_every_script_is_listed_in_its_readme(folder: str) -> None:
    readme = (REPO / folder / "README.md").read_text(encoding="utf-8")
    unlisted = [
        str(path.relative_to(REPO / folder))
        for path in _scripts(REPO / folder)
        if path.name not in readme
    ]
    assert unlisted == []


def test_every_bench_command_runs_a_script_that_exists() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    target = re.search(r"^bench:.*?\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert target is not None
    scripts = re.findall(r"\b((?:bench|training)/[\w/]+\.py)\b", target.group(1))
    assert len(scripts) > 10
    assert [script for script in scripts if not (REPO / script).is_file()] == []


BENCH_LINE_BUDGET = 10_000  # issue 43: bench/ holds what is maintained, in at most this much


def test_bench_stays_within_its_line_budget() -> None:
    """Lines of Python under bench/ (generators included). A benchmark whose question is
    settled leaves, its figures and the commit holding it recorded in docs/decisions.md."""
    lines = sum(
        len(path.read_text(encoding="utf-8").splitlines()) for path in REPO.glob("bench/**/*.py")
    )
    assert lines <= BENCH_LINE_BUDGET, f"bench/ holds {lines} lines of Python"
