"""The SAM CLI of the tests: its own venv under .services/sam (``make sam``).

aws-sam-cli pins an aws-sam-translator that conflicts with the cfn-lint pinned in the
project's ``test`` extra, so it cannot live in .venv.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode_str

ROOT = Path(__file__).resolve().parents[2]
SAM = ROOT / ".services" / "sam" / "bin" / "sam"
MISSING = "the SAM CLI is not installed: run `make sam` (aws-sam-cli into .services/sam)"


def sam_binary() -> Path:
    if not SAM.exists():
        pytest.fail(MISSING)
    return SAM


def run_sam(
    args: list[str], cwd: Path = ROOT, path_prefix: str = ""
) -> subprocess.CompletedProcess:
    env = dict(os.environ, SAM_CLI_TELEMETRY="0", AWS_DEFAULT_REGION="us-east-1")
    if path_prefix:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        [str(sam_binary()), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def python312_dir() -> str | None:
    """A directory holding a working python3.12 (PATH, then pyenv), or None."""
    found = shutil.which("python3.12")
    candidates = [found] if found else []
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")))
    for candidate in candidates:
        probe = subprocess.run([candidate, "--version"], capture_output=True, check=False)
        if probe.returncode == 0:  # a pyenv shim without a 3.12 selected fails here
            return str(Path(candidate).parent)
    return None


def load_template(path: Path) -> dict[str, Any]:
    """The template as CloudFormation JSON (short tags become Fn:: forms)."""
    template, matches = decode_str(path.read_text())
    assert template is not None, matches
    return json.loads(json.dumps(template, default=str))


def zip_build_template(template: dict[str, Any], runtime: str) -> dict[str, Any]:
    """Only the layer and the zip functions, with what `sam build` reads."""
    resources: dict[str, Any] = {}
    for name, resource in template["Resources"].items():
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::Serverless::LayerVersion":
            resources[name] = {
                "Type": resource["Type"],
                "Properties": {
                    "ContentUri": props["ContentUri"],
                    "CompatibleRuntimes": [runtime],
                },
                "Metadata": {"BuildMethod": runtime},
            }
        elif resource["Type"] == "AWS::Serverless::Function" and "CodeUri" in props:
            resources[name] = {
                "Type": resource["Type"],
                "Properties": {
                    "CodeUri": props["CodeUri"],
                    "Handler": props["Handler"],
                    "Runtime": runtime,
                    "Layers": props["Layers"],
                },
            }
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Transform": "AWS::Serverless-2016-10-31",
        "Resources": resources,
    }
