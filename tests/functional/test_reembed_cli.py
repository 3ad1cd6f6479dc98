"""``hindsight reindex --re-embed`` on a data directory: killed with SIGKILL mid-run, run
again, it continues from its checkpoint; the manifest then names the new generation."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hindsight import bootstrap, reembedding
from hindsight.bootstrap import build_embedded_service
from hindsight.cli import app
from hindsight.core.commands import BatchItem, StoreBatchCommand
from hindsight.core.models import Principal
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder, ScriptedReflector

ROOT = Path(__file__).resolve().parents[2]
MEMORIES = 200
SLOW_RUN = """
import sys, time
from tests.fakes import HashingEmbedder
from hindsight.reembedding import reembedding
from hindsight.settings import Settings

class Slow(HashingEmbedder):
    def embed_documents(self, texts):
        time.sleep(0.4)
        return super().embed_documents(texts)

settings = Settings(backend="embedded", data_dir=sys.argv[1], embedder="new-spec")
with reembedding(settings, embedder=Slow(dimension=32, model_name="new-32")) as migrate:
    migrate()
"""


def seed(data_dir: Path) -> None:
    settings = Settings(backend="embedded", data_dir=data_dir, embedder="old-spec")
    service = build_embedded_service(
        settings, embedder=HashingEmbedder(model_name="old-64"), reflector=ScriptedReflector()
    )
    owner = Principal(tenant_id="local")
    for start in range(0, MEMORIES, 100):
        items = [BatchItem(content=f"memory {n} about kites") for n in range(start, start + 100)]
        service.store_batch(owner, StoreBatchCommand(user_id="u1", items=items))
    service.ports.index.close()  # type: ignore[attr-defined]
    service.ports.records.close()  # type: ignore[attr-defined]


def checkpoint(data_dir: Path) -> dict[str, object] | None:
    path = data_dir / "index-2" / "migration.json"
    try:
        return json.loads(path.read_text())  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


def test_a_killed_re_embedding_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(tmp_path)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'layers' / 'hindsight'}"}
    child = subprocess.Popen([sys.executable, "-c", SLOW_RUN, str(tmp_path)], cwd=ROOT, env=env)
    deadline = time.monotonic() + 60
    done = 0
    while time.monotonic() < deadline:
        state = checkpoint(tmp_path)
        done = int(state["done"]) if state else 0  # type: ignore[call-overload]
        if done >= 64:
            break
        assert child.poll() is None, "the migration ended before it could be killed"
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert 64 <= done < MEMORIES
    assert (
        not (tmp_path / "index.json").exists()
        or json.loads((tmp_path / "index.json").read_text())["embedding_model"] == "old-64"
    )  # not switched

    new = HashingEmbedder(dimension=32, model_name="new-32")
    monkeypatch.setattr(reembedding, "build_embedder", lambda settings: new)
    monkeypatch.setenv("HINDSIGHT_EMBEDDER", "new-spec")
    bootstrap.configure()
    result = CliRunner().invoke(
        app, ["--json", "--data-dir", str(tmp_path), "reindex", "--re-embed"]
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["resumed_after"] >= done and body["re_embedded"] == MEMORIES - body["resumed_after"]
    assert body["generation"] == "index-2" and body["embedding_model"] == "new-32"
    manifest = json.loads((tmp_path / "index.json").read_text())
    assert manifest["generation"] == "index-2" and manifest["embedder"] == "new-spec"
    assert not (tmp_path / "index-2" / "migration.json").exists()
