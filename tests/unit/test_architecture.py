"""The house rules, checked on the source: one-way dependencies, thin edges, small modules.

* the core's modules import each other without a circle (counting imports inside
  functions and under ``TYPE_CHECKING``: a circle hidden there is still a circle);
* the core imports no adapter, entry point, AWS or Lambda code, and no use case imports
  the facade (``core/service.py``) that sits above them;
* entry points never reach through the facade to its adapters (``service.ports``);
* no source module is over 600 lines, no product module (the server, the functions and
  the Python client) over 500 (word lists are data files, not code).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "hindsight" / "hindsight"
CLIENT_SOURCE = ROOT / "clients" / "python" / "src"
MAX_LINES = 600
MAX_PRODUCT_LINES = 500
ENTRY_POINTS = [
    ROOT / "functions",
    PACKAGE / "api",
    PACKAGE / "gateway",
    PACKAGE / "mcp",
    PACKAGE / "cli",
]
FORBIDDEN_IN_CORE = (
    "hindsight.adapters",
    "hindsight.api",
    "hindsight.backends",
    "hindsight.bootstrap",
    "hindsight.composition",
    "hindsight.cli",
    "hindsight.gateway",
    "hindsight.mcp",
    "hindsight.settings",
    "aws_lambda_powertools",
    "boto3",
    "botocore",
    "opensearchpy",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module a file imports, wherever the import statement stands."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def core_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in (PACKAGE / "core").rglob("*.py")}
    return {
        name: {m for m in imports_of(path) if m in files} - {name} for name, path in files.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle, as the list of modules around it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_cycle_finder_finds_a_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_import_circle_among_the_core_modules() -> None:
    graph = core_graph()
    assert len(graph) > 10, "the core's modules were not found"
    assert find_cycle(graph) is None


def test_the_core_imports_no_adapter_entry_point_or_cloud_code() -> None:
    offenders = {
        module_name(path): sorted(m for m in imports_of(path) if m.startswith(FORBIDDEN_IN_CORE))
        for path in (PACKAGE / "core").rglob("*.py")
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_no_use_case_imports_the_facade_above_it() -> None:
    below = [p for p in (PACKAGE / "core").rglob("*.py") if p.name != "service.py"]
    importers = [module_name(p) for p in below if "hindsight.core.service" in imports_of(p)]
    assert importers == []


@pytest.mark.parametrize("folder", ENTRY_POINTS, ids=lambda p: p.name)
def test_entry_points_do_not_reach_through_the_facade(folder: Path) -> None:
    reach = re.compile(
        r"\.ports\b|\bservice\(?\)?\.(records|index|embedder|reflector|clock|ids|policy)\b"
    )
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in folder.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if reach.search(line)
    ]
    assert offenders == []


def test_no_source_module_is_over_600_lines() -> None:
    folders = [PACKAGE, ROOT / "functions", ROOT / "bench", ROOT / "training", ROOT / "tests"]
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for folder in folders
        for path in folder.rglob("*.py")
        if ".venv" not in path.parts
    }
    assert len(sizes) > 50
    assert {name: lines for name, lines in sizes.items() if lines > MAX_LINES} == {}


def test_no_product_module_is_over_500_lines() -> None:
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for folder in (PACKAGE, ROOT / "functions", CLIENT_SOURCE)
        for path in folder.rglob("*.py")
    }
    assert len(sizes) > 50
    assert "clients/python/src/hindsight_client/langgraph.py" in sizes
    assert {name: lines for name, lines in sizes.items() if lines > MAX_PRODUCT_LINES} == {}


def test_every_policy_knob_is_a_setting() -> None:
    import dataclasses

    from hindsight.bootstrap import policy_from
    from hindsight.core.policy import Policy
    from hindsight.settings import Settings

    assert policy_from(Settings()) == Policy()
    changed = policy_from(Settings.from_env({"HINDSIGHT_SPEAKER_BOOST": "1.0"}))
    assert changed == dataclasses.replace(Policy(), speaker_boost=1.0)
