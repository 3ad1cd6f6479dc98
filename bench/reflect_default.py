"""Reflection's speed end to end in the embedded service: the default reflector beside the
rules', and the stored vectors reused or not; docs/reflection.md ("Speed and size") gives
the setup and figures.

    nice -n 5 .venv/bin/python bench/reflect_default.py [--repeat 5] [--no-vectors]

Each repetition times ``reflect`` (not a dry run) in one service per reflector, the order
alternating; the later ones reflect the same episodes again (``since`` their storing).
CPU seconds count every thread of the process. ``vectors_reused`` dry-runs ``learned-e5``
given the stored vectors and not. Writes ``bench/results/reflect_default.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extraction_data import REPO, Utterance, test_split

from hindsight.adapters.embedders.engine_line import cpu_flags
from hindsight.adapters.reflectors.learned import LearnedReflector
from hindsight.adapters.reflectors.learned.static import StaticStatementVectors
from hindsight.bootstrap import build_embedded_service
from hindsight.core.commands import ReflectCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.ports import Reflector
from hindsight.settings import Settings

OUT = REPO / "bench" / "results" / "reflect_default.json"
PRINCIPAL = Principal(tenant_id="bench")
SPEAKERS = {"bot_0": "user", "bot_1": "Sam"}  # MSC's labels; a "bot" is the assistant's turn
SYSTEMS = ("learned", "rule-based")
SIMD_FLAGS = {"avx512_vnni", "amx_int8", "avx2", "avx_vnni"}  # the ones the engines use


class CountingEmbedder:
    """The service's embedder, counting the passages the reflector has it embed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.passages = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.passages += len(texts)
        return self.inner.embed_documents(texts)  # type: ignore[no-any-return]


class WithoutVectors:
    """A reflector behind an adapter that does not take stored vectors."""

    def __init__(self, inner: Reflector) -> None:
        self.inner = inner
        self.label = inner.label

    def reflect(self, *args: Any) -> Any:
        return self.inner.reflect(*args)

    def summarize(self, episodes: Any) -> Any:
        return self.inner.summarize(episodes)


def vectors_reused(utterances: list[Utterance], root: Path, repeat: int) -> dict[str, Any]:
    """``learned-e5``'s dry-run reflect, stored vectors given and not, without and with a
    session; medians of ``repeat`` alternating runs."""
    service = build_embedded_service(
        Settings(data_dir=root / "learned-e5", reflector="learned-e5", dedup_window_seconds=0)
    )
    users = {"no-session": None, "with-session": "s1"}
    for user, session in users.items():
        for u in utterances:
            command = StoreMemoryCommand(
                user_id=user, content=u.text, speaker=SPEAKERS[u.speaker], session_id=session
            )
            service.store(PRINCIPAL, command)
    runs: dict[str, list[tuple[float, float, int]]] = {}
    for rep in range(repeat):
        for user in users:
            for reuse in (True, False) if rep % 2 == 0 else (False, True):
                counted = CountingEmbedder(service.ports.embedder)
                fresh = LearnedReflector(counted)
                use_case = service.use_cases.reflect
                use_case.reflector = fresh if reuse else WithoutVectors(fresh)  # type: ignore[assignment]
                started, cpu = time.perf_counter(), time.process_time()
                service.reflect(PRINCIPAL, ReflectCommand(user_id=user, dry_run=True))
                key = f"{user}, {'vectors reused' if reuse else 'not reused'}"
                runs.setdefault(key, []).append(
                    (time.perf_counter() - started, time.process_time() - cpu, counted.passages)
                )
    return {
        key: {
            "median_wall_s": round(statistics.median(r[0] for r in rows), 3),
            "median_cpu_s": round(statistics.median(r[1] for r in rows), 3),
            "statements_embedded": rows[0][2],
        }
        for key, rows in runs.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-vectors", action="store_true", help="skip the stored vectors")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    utterances = [u for d in test_split() for u in d.utterances][:100]
    texts = [u.text for u in utterances]
    started = time.perf_counter()
    StaticStatementVectors().get(["the word table loads once a process"])
    table_load = time.perf_counter() - started
    seconds: dict[str, list[float]] = {name: [] for name in SYSTEMS}
    cpu_seconds: dict[str, list[float]] = {name: [] for name in SYSTEMS}
    facts: dict[str, list[int]] = {name: [] for name in SYSTEMS}
    loads: list[float] = []
    considered = 0
    # a fresh directory, left in place: the services close their files when the process ends
    root = tempfile.mkdtemp(prefix="hindsight-reflect-default-")
    services = {
        name: build_embedded_service(
            Settings(data_dir=Path(root) / name, reflector=name, dedup_window_seconds=0)
        )
        for name in SYSTEMS
    }
    stored_from = datetime.now(UTC)
    for service in services.values():
        for text in texts:
            service.store(PRINCIPAL, StoreMemoryCommand(user_id="user", content=text))
    for rep in range(args.repeat):
        loads.append(os.getloadavg()[0])
        order = SYSTEMS if rep % 2 == 0 else SYSTEMS[::-1]
        command = ReflectCommand(user_id="user", since=stored_from if rep else None)
        for name in order:
            started, cpu = time.perf_counter(), time.process_time()
            result = services[name].reflect(PRINCIPAL, command)
            seconds[name].append(time.perf_counter() - started)
            cpu_seconds[name].append(time.process_time() - cpu)
            facts[name].append(len(result.created) + len(result.updated))
            considered = result.episodes_considered
        print(rep, {n: round(s[-1], 3) for n, s in seconds.items()}, flush=True)
    median = {name: statistics.median(s) for name, s in seconds.items()}
    vectors = None if args.no_vectors else vectors_reused(utterances, Path(root), args.repeat)
    results = {
        "episodes": len(texts),
        "repeat": args.repeat,
        "median_wall_s": {n: round(v, 3) for n, v in median.items()},
        "first_wall_s": {n: round(s[0], 3) for n, s in seconds.items()},
        "all_wall_s": {n: [round(v, 3) for v in s] for n, s in seconds.items()},
        "median_cpu_s": {n: round(statistics.median(s), 3) for n, s in cpu_seconds.items()},
        "learned_over_rules": round(median["learned"] / median["rule-based"], 2),
        # the first run creates the facts; the later ones find them again (repeats)
        "facts_written_first_run": {n: f[0] for n, f in facts.items()},
        "episodes_considered_last_run": considered,
        "static_word_table_load_s": round(table_load, 3),
        "vectors": vectors,
        "load_average_1min": [round(v, 2) for v in loads],
        "cpu_flags": sorted(cpu_flags() & SIMD_FLAGS),
        "cores": os.cpu_count(),
        "command": "nice -n 5 .venv/bin/python bench/reflect_default.py " + " ".join(sys.argv[1:]),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
