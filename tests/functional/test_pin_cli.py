"""``hindsight pin`` / ``hindsight unpin`` in process, on the in-memory backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import build_memory_service, configure
from hindsight.cli import app
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder
from tests.functional.test_cli import run, run_json, store


@pytest.fixture
def service() -> Iterator[MemoryService]:
    settings = Settings(backend="memory")
    built = build_memory_service(
        settings, embedder=HashingEmbedder(), reflector=RuleBasedReflector()
    )
    configure(settings, built)
    yield built
    configure()


def test_pin_and_unpin(service: MemoryService) -> None:
    runner = CliRunner()
    memory_id = store(runner, "alice", "Alice's passport number is in the blue folder")
    pinned = run(runner, "pin", memory_id)
    assert pinned.exit_code == 0, pinned.output
    assert f"{memory_id} pinned" in pinned.stdout
    assert run_json(runner, "show", memory_id)["memory"]["pinned"] is True
    again = run_json(runner, "pin", memory_id)
    assert again["changed"] is False
    assert run_json(runner, "unpin", memory_id)["memory"]["pinned"] is False
    missing = runner.invoke(app, ["pin", "mem_nothing_here"])
    assert missing.exit_code != 0
    assert "not found" in missing.output
