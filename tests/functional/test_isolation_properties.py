"""Isolation properties on the embedded backend (issue #15): tenants, users and scoped keys
interleaved at random by hypothesis (``tests/isolation_machine.py``), with the real
embedded adapters (SQLite record store, embedded search index with its HNSW graphs) in a
temporary directory, the hashing embedder and the offline reflector.

After every erase-user every SQLite file of the data directory (record store, search
index, idempotency records) is read row by row, every file's bytes are searched for the
user's content (free pages, write-ahead logs), the saved HNSW graphs are listed and the
in-process index is searched: nothing of that user may remain.

Bounded and reproducible: derandomized (the same cases every run), a fixed number of
examples and steps; the test prints how many ran.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import build_embedded_service, configure
from hindsight.core.models import SearchFilter
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder
from tests.isolation_machine import IsolationMachine, key_config
from tests.isolation_run import run_isolation

EXAMPLES = 50
STEPS = 50
ANN_THRESHOLD = 1  # every search goes through an HNSW graph, saved to disk


class EmbeddedIsolation(IsolationMachine):
    def build(self) -> tuple[Settings, MemoryService]:
        self.data_dir = Path(tempfile.mkdtemp(prefix="hindsight-isolation-"))
        config = Settings(
            backend="embedded",
            data_dir=self.data_dir,
            api_keys=key_config(),
            ann_threshold=ANN_THRESHOLD,
        )
        service = build_embedded_service(
            config, embedder=HashingEmbedder(), reflector=RuleBasedReflector()
        )
        configure(config, service)
        return config, service

    def close(self) -> None:
        for adapter in (self.service.ports.index, self.service.ports.records):
            adapter.close()  # type: ignore[attr-defined]
        configure()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def leftovers(self, tenant: str, user: str, erased_ids: set[str], tags: set[str]) -> list[str]:
        found: list[str] = []
        for path in sorted(self.data_dir.rglob("*.db")):
            # idempotency.db too: the records of the user's writes go with the user
            found += rows_of(path, tenant, user, erased_ids, tags)
        found += saved_graphs(self.data_dir, tenant, user, erased_ids)
        found += raw_traces(self.data_dir, tags)
        index = self.service.ports.index
        held = {(tenant, memory_id) for memory_id in erased_ids} & index.keys()  # type: ignore[attr-defined]
        found += [f"in-process index: {key}" for key in sorted(held)]
        for tag in sorted(tags):
            hits = index.keyword_search(SearchFilter(tenant_id=tenant, user_id=user), tag, 5)
            found += [f"keyword search for {tag}: {hit}" for hit in hits]
        if index.vectors.has_graph(tenant, user):  # type: ignore[attr-defined]
            found.append(f"in-process HNSW graph of {tenant}/{user}")
        return found


def rows_of(path: Path, tenant: str, user: str, erased_ids: set[str], tags: set[str]) -> list[str]:
    """Every row of every table of one SQLite file that holds the user, one of their
    memory ids or one of their tags."""
    found: list[str] = []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                reason = _holds(row, tenant, user, erased_ids, tags)
                if reason:
                    found.append(f"{path.name}:{table} {reason}: {str(row)[:160]}")
    finally:
        conn.close()
    return found


def _holds(row: tuple[Any, ...], tenant: str, user: str, ids: set[str], tags: set[str]) -> str:
    values = {value for value in row if isinstance(value, str)}
    if tenant in values and user in values:
        return "the user's row"
    if values & ids:
        return "an erased memory id"
    text = " ".join(values)
    if any(value in text for value in ids):
        return "an erased memory id inside"
    if any(tag in text for tag in tags):
        return "an erased user's content"
    return ""


def raw_traces(data_dir: Path, tags: set[str]) -> list[str]:
    """The user's content in the bytes of any file (a deleted row's free page, an old
    frame of a write-ahead log), not only in its live rows."""
    found: list[str] = []
    for path in sorted(p for p in data_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [
            f"{path.name}: the bytes of {tag}" for tag in sorted(tags) if tag.encode() in data
        ]
    return found


def saved_graphs(data_dir: Path, tenant: str, user: str, erased_ids: set[str]) -> list[str]:
    """HNSW graphs saved under the index's ``ann/`` directories for that user."""
    found: list[str] = []
    for meta_path in sorted(data_dir.rglob("ann/*.json")):
        meta = json.loads(meta_path.read_text())
        if (meta.get("tenant_id"), meta.get("user_id")) == (tenant, user):
            found.append(f"saved graph {meta_path.name} of {tenant}/{user}")
        elif set(meta.get("ids", [])) & erased_ids:
            found.append(f"saved graph {meta_path.name} holds erased ids")
    return found


def test_no_answer_leaks_and_erase_leaves_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    summary = run_isolation(EmbeddedIsolation, "embedded", EXAMPLES, STEPS)
    with capsys.disabled():
        print(summary)
    assert EmbeddedIsolation.erasures > 0
