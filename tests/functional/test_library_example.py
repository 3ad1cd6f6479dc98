"""docs/library.md's example runs as written: the public API stores and retrieves in process,
on the embedded backend with the bundled model, and its errors carry what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_library_example_runs_as_documented(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    code = text.split("```python", 1)[1].split("```", 1)[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env["HINDSIGHT_EMBED_KERNEL"] = "int8"  # not measured per CPU in a fresh directory
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("success mem_")
    assert "I am allergic to peanuts" in lines[1]
    assert lines[-1] == "memory mem_unknown was not found; check the id"
    assert (tmp_path / "memory").is_dir()  # the data directory the example names
