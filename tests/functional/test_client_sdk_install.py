"""The client stays light: it depends on httpx alone and importing it loads no server code,
no numpy, no pydantic; ``pip install ./clients/python`` works in a fresh virtualenv."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "python"
HEAVY = {"numpy", "hindsight", "pydantic", "boto3", "botocore", "torch", "jieba", "langgraph"}
HEAVY |= {"aws_lambda_powertools", "langchain_core", "pydantic_ai", "opensearchpy"}
HEAVY |= {"agents", "openai"}
IMPORTED = (
    "import json, sys, hindsight_client; "
    "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
)


def top_level_modules_after_import(python: str) -> set[str]:
    out = subprocess.run([python, "-c", IMPORTED], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def test_importing_the_client_loads_nothing_heavy() -> None:
    loaded = top_level_modules_after_import(sys.executable)
    assert "hindsight_client" in loaded and "httpx" in loaded
    assert not loaded & HEAVY, sorted(loaded & HEAVY)


def test_the_distribution_depends_on_httpx_alone_in_the_servers_range() -> None:
    declared = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]
    (httpx,) = (Requirement(r) for r in declared["dependencies"])
    assert httpx.name == "httpx"
    installed = importlib.metadata.requires("hindsight-client") or []
    required = [Requirement(r) for r in installed]
    assert [r.name for r in required if r.marker is None] == ["httpx"]  # extras aside
    server = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = (Requirement(r) for r in server if Requirement(r).name == "httpx")
    (version,) = (spec.version for spec in pin.specifier)
    assert httpx.specifier.contains(version), (str(httpx.specifier), version)


@pytest.mark.slow
def test_a_fresh_virtualenv_installs_and_imports_it(tmp_path: Path) -> None:
    """pip install ./clients/python in an empty virtualenv (httpx comes from PyPI)."""
    source = tmp_path / "client"
    shutil.copytree(CLIENT, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    pip = [sys.executable, "-m", "pip", "--python", python]
    subprocess.run([*pip, "install", "--quiet", str(source)], check=True, timeout=240)
    listed = subprocess.run([*pip, "list", "--format=json"], capture_output=True, text=True)
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "hindsight-client" in names and "httpx" in names
    assert not names & {"numpy", "pydantic", "hindsight", "boto3"}, sorted(names)
    assert not top_level_modules_after_import(python) & HEAVY
    embedded = subprocess.run(
        [python, "-c", "from hindsight_client import Hindsight; Hindsight.embedded()"],
        capture_output=True,
        text=True,
    )
    assert embedded.returncode != 0
    assert "needs the Hindsight server package" in embedded.stderr
