"""``Hindsight.embedded()`` and ``AsyncHindsight.embedded()``: the embedded service in the
caller's process, behind the same interface and errors as over HTTP.

Run in a child process: ``embedded()`` configures the process's service, which must not
replace the one the e2e gateway of this test session serves.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import asyncio, sys
from hindsight_client import AsyncHindsight, Hindsight, InvalidRequestError, NotFoundError

data_dir = sys.argv[1]
with Hindsight.embedded(data_dir=data_dir) as memory:
    stored = memory.store("nb-user", "用户对花生过敏", session_id="s1", category="constraint")
    assert stored.status == "success", stored
    assert memory.store("nb-user", "用户对花生过敏", session_id="s1").duplicate
    memory.store_many("nb-user", [f"第{n}天的天气记录" for n in range(150)])
    page = memory.retrieve("nb-user", "饮食禁忌", top_k=3)
    assert page.results[0].memory_id == stored.memory_id, page
    assert len(list(memory.iter_memories("nb-user", page_size=50))) == 151
    try:
        memory.get("mem_missing")
    except NotFoundError as exc:
        assert exc.status == 404 and "mem_missing" in exc.message
    else:
        raise AssertionError("no NotFoundError")
    try:
        memory.retrieve("nb-user", "x", top_k=0)
    except InvalidRequestError as exc:
        assert "top_k" in exc.message
    else:
        raise AssertionError("no InvalidRequestError")
    assert memory.health().indexed_documents == 151
    assert memory.health().embedding_engine.engine.startswith("multilingual-e5-small")

async def again() -> str:
    async with AsyncHindsight.embedded(data_dir=data_dir) as memory:  # the same files
        hits = [m.content async for m in memory.iter_retrieve("nb-user", "peanut allergy", limit=1)]
        return hits[0]

assert asyncio.run(again()) == "用户对花生过敏"
print("embedded ok")
"""


def test_embedded_sync_and_async_share_the_interface_and_the_data(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(HINDSIGHT_REFLECTOR="rule-based", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "memories")],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=tmp_path,  # not the repository: the template is found from the package
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("embedded ok")
    assert (tmp_path / "memories").is_dir()
