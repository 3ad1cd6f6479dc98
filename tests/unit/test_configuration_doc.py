"""docs/configuration.md is every setting the code accepts, as the settings model says."""

from __future__ import annotations

from pathlib import Path

from hindsight.settings import Settings
from hindsight.settings_reference import ENTRIES, PARTS, render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_every_setting_has_an_entry() -> None:
    missing = sorted(set(Settings.model_fields) - set(ENTRIES))
    assert not missing, f"settings with no entry in hindsight/settings_reference.py: {missing}"


def test_every_entry_is_a_setting_of_a_known_part() -> None:
    assert not sorted(set(ENTRIES) - set(Settings.model_fields)), (
        "entries of settings that are gone"
    )
    assert {part for part, _ in ENTRIES.values()} <= set(PARTS)


def test_the_committed_page_is_what_the_model_renders() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/configuration.md is stale: run `make docs`"
    )


def test_every_variable_appears_once() -> None:
    page = render()
    for name in Settings.model_fields:
        assert page.count(f"| `HINDSIGHT_{name.upper()}` |") == 1
