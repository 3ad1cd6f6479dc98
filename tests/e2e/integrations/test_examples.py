"""Each example in examples/ runs end to end against the server, as against `make run`."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest
from story import SAFE_ANSWER

from tests.e2e.integrations.conftest import ADMIN_KEY, EXAMPLES, Server


@pytest.mark.parametrize(
    "example",
    ["langgraph_agent", "langchain_agent", "pydantic_ai_agent", "openai_agents_agent"],
)
def test_example_tells_the_peanut_story(server: Server, example: str) -> None:
    env = {**server.env, "HINDSIGHT_URL": server.url, "HINDSIGHT_API_KEY": ADMIN_KEY}
    user = f"{example.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{example}.py"), "--user", user],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("[monday] user: ")
    assert lines[-1] == f"[tuesday] agent: {SAFE_ANSWER}"
