"""The bench modules' literal tables live in bench/datasets/tables/<module>.json.

Each file is a JSON object of table name to value, read by the bench module of that name
(in bench/, bench/datasets/ or training/), and each of its tables is used there; a module asking for
tables that are not there gets an error naming the file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from datasets.tables import TABLES_DIR, load_tables  # noqa: E402

TABLE_FILES = sorted(TABLES_DIR.glob("*.json"))


def _module_source(name: str) -> str:
    for folder in (BENCH, BENCH / "datasets", BENCH.parent / "training"):
        path = folder / f"{name}.py"
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise AssertionError(f"no bench module {name}.py for {name}.json")


def test_there_are_tables() -> None:
    assert len(TABLE_FILES) >= 10


@pytest.mark.parametrize("path", TABLE_FILES, ids=lambda p: p.stem)
def test_each_table_file_is_read_by_its_module_and_every_table_is_used(path: Path) -> None:
    tables = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(tables, dict) and tables
    assert load_tables(path.stem) == tables
    source = _module_source(path.stem)
    assert f'load_tables("{path.stem}")' in source
    unused = [name for name in tables if f'"{name}"' not in source]
    assert not unused, f"{path.name}: tables no code reads: {unused}"


def test_the_chinese_text_is_stored_as_is() -> None:
    text = (TABLES_DIR / "updates_data.json").read_text(encoding="utf-8")
    assert "\\u" not in text
    assert "用户" in text


def test_a_missing_table_file_is_a_clear_error() -> None:
    with pytest.raises(FileNotFoundError, match=r"no_such_module\.json is missing"):
        load_tables("no_such_module")


def test_a_table_file_that_is_not_an_object_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datasets.tables as tables_module

    (tmp_path / "listy.json").write_text("[1, 2]", encoding="utf-8")
    monkeypatch.setattr(tables_module, "TABLES_DIR", tmp_path)
    with pytest.raises(ValueError, match="must hold a JSON object"):
        load_tables("listy")


def test_every_slot_of_the_synthetic_templates_is_a_word_list_or_a_range() -> None:
    import synthetic

    for text, category in synthetic.ZH_TEMPLATES + synthetic.EN_TEMPLATES:
        assert category in {"constraint", "preference", "task", "mood", "fact"}
        slots = synthetic._SLOT.findall(text)
        assert slots, text
        for slot in slots:
            if slot[0].isdigit():
                low, high = map(int, slot.split("-"))
                assert 0 < low < high, text
            else:
                assert isinstance(synthetic.TABLES[slot], list) and synthetic.TABLES[slot], text
        leftover = synthetic._SLOT.sub("", text)
        assert "{" not in leftover and "}" not in leftover, text
