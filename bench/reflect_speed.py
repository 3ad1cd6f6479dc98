"""Reflection speed: 100 real turns stored through the service, then reflected offline by
the learned reflector, with the stored vectors reused and without them.

    nice -n 5 .venv/bin/python bench/reflect_speed.py [--repeat 3]

Sets: the first 100 utterances of the MSC test dialogues (``extraction_data.test_split``)
and the first 100 turns of LoCoMo conversation 1 (``/work/shared/data/locomo10.json``),
each stored as one user's episodes (in-memory record store and index, the bundled
multilingual-e5-small), once without a session (an episode's search text is its content)
and once with one (its search text starts with the turn before it:
``StoreMemory.with_session_context``, so no stored vector is a statement's vector).

Timed, each on a fresh reflector (nothing cached), wall and CPU seconds (CPU of every
thread of this process: the embedder runs on background threads):

- ``reflector``: ``LearnedReflector.reflect`` (embeds every statement) against
  ``reflect_with_vectors`` (the stored vectors given): the extraction alone;
- ``use_case``: ``POST /v1/reflect`` with ``dry_run`` through the service, which also
  embeds every fact it would write (their vectors are stored with them) and reads the
  stored vectors; without vectors = the same reflector behind an adapter that does not
  take them;
- ``static``: the ``learned`` reflector, the default (mean word embeddings, no transformer
  for statements), alone and through the use case (which still embeds the facts).

The static word table is loaded once a process (timed apart, ``static_word_table_load``).
The median of ``--repeat`` runs is reported, with the 1-minute load average before each
set (other work on the machine slows the embedder). Writes
``bench/results/reflect_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "hindsight"))

from extraction_data import REPO, test_split
from locomo_data import load_locomo

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.adapters.reflectors.learned import LearnedReflector
from hindsight.adapters.reflectors.learned.static import StaticStatementVectors
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.commands import ReflectCommand, StoreMemoryCommand
from hindsight.core.list_all import list_all
from hindsight.core.models import (
    EpisodicMemory,
    ListQuery,
    MemoryKind,
    Principal,
    SemanticMemory,
    StoredVector,
)
from hindsight.core.policy import Policy
from hindsight.core.service import MemoryService

OUT = REPO / "bench" / "results" / "reflect_speed.json"
LOCOMO = Path("/work/shared/data/locomo10.json")
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
PRINCIPAL = Principal(tenant_id="bench")


class CountingEmbedder:
    """The real embedder, counting the passages it embeds."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.passages = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.passages += len(texts)
        return self.inner.embed_documents(texts)  # type: ignore[no-any-return]


class WithoutVectors:
    """The learned reflector behind an adapter that does not take stored vectors."""

    def __init__(self, inner: LearnedReflector) -> None:
        self.inner = inner
        self.label = inner.label

    def reflect(
        self, user_id: str, episodes: Sequence[EpisodicMemory], existing: Sequence[SemanticMemory]
    ) -> Any:
        return self.inner.reflect(user_id, episodes, existing)

    def summarize(self, episodes: Sequence[EpisodicMemory]) -> Any:
        return self.inner.summarize(episodes)


def texts_of(name: str) -> list[str]:
    if name == "msc":
        return [u.text for d in test_split() for u in d.utterances][:100]
    return [t.text for t in load_locomo(LOCOMO)[0].turns if t.text][:100]


def stored_service(embedder: CountingEmbedder, texts: list[str], session: bool) -> MemoryService:
    """A service (in-memory stores) holding the texts as user u's episodes, a minute apart."""
    records, index = InMemoryRecordStore(), InMemorySearchIndex()
    service = assemble(
        local_ports(records, index, embedder, LearnedReflector(embedder)),  # type: ignore[arg-type]
        Policy(),
    )
    for n, text in enumerate(texts):
        command = StoreMemoryCommand(
            user_id="u",
            content=text,
            session_id="s1" if session else None,
            occurred_at=T0 + timedelta(minutes=n),
        )
        service.store(PRINCIPAL, command)
    return service


def timed(run: Callable[[], object], embedder: CountingEmbedder) -> dict[str, float]:
    embedder.passages = 0
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return {
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "passages_embedded": embedder.passages,
    }


def median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.median(r[key] for r in runs), 3) for key in runs[0]}


def measure(name: str, session: bool, embedder: CountingEmbedder, repeat: int) -> dict[str, Any]:
    texts = texts_of(name)
    service = stored_service(embedder, texts, session)
    records = service.ports.records
    memories: list[EpisodicMemory] = list_all(
        records,
        PRINCIPAL.tenant_id,
        "u",
        ListQuery(kinds=frozenset({MemoryKind.EPISODIC}), now=datetime.now(UTC), oldest_first=True),
    )
    vectors: dict[str, StoredVector] = records.get_vectors(
        PRINCIPAL.tenant_id, [m.memory_id for m in memories]
    )
    probe = LearnedReflector(embedder)  # type: ignore[arg-type]
    found = probe.statements_of(memories, "u")
    out: dict[str, Any] = {
        "episodes": len(memories),
        "statements": len(found),
        "statements_that_are_a_whole_episode": sum(s.whole for s in found),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    runs: dict[str, list[dict[str, float]]] = {}

    def reflector_run(with_vectors: bool) -> object:
        fresh = LearnedReflector(embedder)  # type: ignore[arg-type]
        if with_vectors:
            return fresh.reflect_with_vectors("u", memories, [], vectors)
        return fresh.reflect("u", memories, [])

    def use_case_run(with_vectors: bool) -> object:
        fresh = LearnedReflector(embedder)  # type: ignore[arg-type]
        reflect = service.use_cases.reflect
        reflect.reflector = fresh if with_vectors else WithoutVectors(fresh)  # type: ignore[assignment]
        return service.reflect(PRINCIPAL, ReflectCommand(user_id="u", dry_run=True))

    def static_run(through_use_case: bool) -> object:
        fresh = LearnedReflector(embedder, static=True)  # type: ignore[arg-type]
        if not through_use_case:
            return fresh.reflect("u", memories, [])
        service.use_cases.reflect.reflector = fresh
        return service.reflect(PRINCIPAL, ReflectCommand(user_id="u", dry_run=True))

    for _ in range(repeat):
        runs.setdefault("reflector_static", []).append(timed(lambda: static_run(False), embedder))
        runs.setdefault("use_case_static", []).append(timed(lambda: static_run(True), embedder))
        for with_vectors in (False, True):
            suffix = "with_vectors" if with_vectors else "without_vectors"
            runs.setdefault(f"reflector_{suffix}", []).append(
                timed(lambda v=with_vectors: reflector_run(v), embedder)
            )
            runs.setdefault(f"use_case_{suffix}", []).append(
                timed(lambda v=with_vectors: use_case_run(v), embedder)
            )
    out.update({key: median(value) for key, value in runs.items()})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from hindsight.adapters.embedders.factory import build_embedder

    embedder = CountingEmbedder(build_embedder("e5"))
    embedder.embed_documents(["warm up: the model loaded before timing"])
    results: dict[str, Any] = {"sets": {}}
    started, cpu = time.perf_counter(), time.process_time()
    StaticStatementVectors().get(["the word table loads once a process"])
    results["static_word_table_load"] = {
        "wall_s": round(time.perf_counter() - started, 3),
        "cpu_s": round(time.process_time() - cpu, 3),
    }
    for name in ("msc", "locomo"):
        for session in (False, True):
            how = "with a session: the turn before in the vector" if session else "no session"
            key = f"{name} ({how})"
            results["sets"][key] = measure(name, session, embedder, args.repeat)
            print(key, json.dumps(results["sets"][key]))
    results["cpu_count"] = os.cpu_count()
    results["command"] = "nice -n 5 .venv/bin/python bench/reflect_speed.py"
    results["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
