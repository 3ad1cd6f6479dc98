"""The SAM CLI accepts the template and builds every zip function (no Docker needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.infrastructure.sam_cli import (
    ROOT,
    load_template,
    python312_dir,
    run_sam,
    zip_build_template,
)


def test_sam_validate_lint_passes() -> None:
    result = run_sam(["validate", "--lint", "--region", "us-east-1", "-t", "template.yaml"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is a valid SAM Template" in result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_sam_build_succeeds_for_the_zip_functions(tmp_path: Path) -> None:
    # The image functions need Docker, so the build template holds the layer and the zip
    # functions only. Lambda runs python3.12; when no python3.12 exists here, the build
    # falls back to python3.11 (same code and wheels policy, a different ABI tag).
    python_dir = python312_dir()
    runtime = "python3.12" if python_dir else "python3.11"
    template = load_template(ROOT / "template.yaml")
    build_template = zip_build_template(template, runtime)
    zip_functions = [
        n for n, r in build_template["Resources"].items() if "CodeUri" in r["Properties"]
    ]
    assert len(zip_functions) >= 9, zip_functions
    path = tmp_path / "template.json"
    path.write_text(json.dumps(build_template))
    build_dir = tmp_path / "build"
    result = run_sam(
        [
            "build",
            "--template-file",
            str(path),
            "--base-dir",
            str(ROOT),
            "--build-dir",
            str(build_dir),
            "--cached",
            "--cache-dir",
            str(ROOT / ".services" / "sam-build-cache"),
        ],
        path_prefix=python_dir or "",
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    for name in zip_functions:
        assert (build_dir / name / "app.py").is_file(), name
    layer = build_dir / "HindsightLayer" / "python"
    assert (layer / "hindsight" / "bootstrap.py").is_file()
    assert (layer / "pydantic").is_dir() and (layer / "aws_lambda_powertools").is_dir()
