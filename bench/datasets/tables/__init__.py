"""The generators' word lists, templates and slot values, kept as data.

Each ``<module>.json`` here holds the literal tables of one bench module (a dataset
generator or a dev-set builder): a JSON object of table name to value, in the order the
module uses them (a generator that walks a dict draws from its random stream in that
order, so the order is part of the data). The module keeps its names:

    TABLES = load_tables("updates_data")
    EN: list[dict[str, Any]] = TABLES["EN"]

JSON has no tuples or sets: a module that needs one (hashable keys, membership tests)
converts on load, e.g. ``tuple(map(tuple, TABLES["PAIRS_EN"]))``. Edit the JSON files by
hand (UTF-8, Chinese as is); every generator's committed output must come out the same,
byte for byte, which their ``--check`` modes and unit tests verify.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TABLES_DIR = Path(__file__).resolve().parent


def load_tables(module: str) -> dict[str, Any]:
    """The tables of ``module`` (its file name without ``.py``), from ``<module>.json``."""
    path = TABLES_DIR / f"{module}.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: the tables of bench module {module!r} live there "
            "(restore it from git, or pass the module's own name)"
        )
    with path.open(encoding="utf-8") as handle:
        tables = json.load(handle)
    if not isinstance(tables, dict):
        raise ValueError(f"{path} must hold a JSON object of table name to value")
    return tables
