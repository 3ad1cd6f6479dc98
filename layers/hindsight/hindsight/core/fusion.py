"""Fusion of the dense and keyword evidence of the candidates into one relevance (``own``).

Three methods, chosen by ``Policy.fusion``; each gives 1 to a candidate that is best by
both signals and 0 to one that neither found, so pooling, the factors and the calibration
read the same scale whatever the method:

- ``linear`` (the default): ``w * similarity' + (1 - w) * keyword'`` on the scaled scores
  (``core/ranking.py``), ``w = Policy.vector_weight``.
- ``rrf``: weighted reciprocal-rank fusion. Each signal ranks the candidates it scored
  (1 = best; equal scores share a rank); a candidate gets ``w / (k + rank)`` from the
  dense list and ``(1 - w) / (k + rank)`` from the keyword list (nothing from a list that
  does not hold it), divided by ``1 / (k + 1)`` so that first in both is 1.
  ``k = Policy.rrf_k``. Only ranks count, so a signal whose scores are bunched together
  cannot swamp the other, and one whose scores are spread cannot dominate by its scale.
- ``adaptive``: linear with a per-query weight. How much a signal can tell for this query
  is read from how its best candidate stands out: its clarity is the best scaled score
  less the mean scaled score of the next ``CLARITY_DEPTH`` (missing ones count as 0). The
  query's dense share is ``w * cv / (w * cv + (1 - w) * ck)`` (``w`` when neither is
  clear): a query whose words pick one memory out leans on the keywords, one whose words
  are everywhere leans on the model.

With ``Policy.lexical_strength`` (3 by default; 0 turns it off), the linear dense share is
set per query by how much of the query its best lexical matches hold (``lexical_weight``):
BM25 divided by its best score gives 1 to the best keyword hit however weak it is (a hit
that holds only the name the question asks about, or one common word, of a query whose
other words no memory holds); the largest share of the query's terms that one of its
``lexical_strength`` best keyword hits holds (its text as searched), ``c``, scales the
keyword share: ``w / (w + (1 - w) * c)``, so ``w`` (0.5) for a full match and 0.75 for a
query whose best hits hold a third of its terms. Measured in ``Policy`` and
bench/results/devsets.md.

A query with no keyword hit at all uses the dense evidence alone (and one without
similarities the keyword evidence alone), as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

FUSIONS = ("linear", "rrf", "adaptive")
CLARITY_DEPTH = 10


@dataclass(frozen=True, slots=True)
class Fusion:
    """How one query's candidates are fused: the method, its dense share and the ranks."""

    method: str
    vector_weight: float
    rrf_k: float = 60.0
    vector_ranks: Mapping[str, int] = field(default_factory=dict)
    keyword_ranks: Mapping[str, int] = field(default_factory=dict)
    lexical: float | None = None  # the coverage that set the dense share (lexical_strength)

    def own(self, memory_id: str, similarity_part: float, keyword_part: float) -> float:
        """The fused relevance of one candidate, in [0, 1]."""
        if self.method != "rrf":
            w = self.vector_weight
            return w * similarity_part + (1.0 - w) * keyword_part
        k = self.rrf_k
        total = 0.0
        if memory_id in self.vector_ranks:
            total += self.vector_weight / (k + self.vector_ranks[memory_id])
        if memory_id in self.keyword_ranks:
            total += (1.0 - self.vector_weight) / (k + self.keyword_ranks[memory_id])
        return total * (k + 1.0)

    def why(self, memory_id: str) -> dict[str, Any]:
        """What ``why`` shows of the fusion (nothing for the default linear one)."""
        if self.method == "linear" and self.lexical is None:
            return {}
        out: dict[str, Any] = {"method": self.method, "vector_weight": round(self.vector_weight, 4)}
        if self.lexical is not None:
            out["lexical_coverage"] = round(self.lexical, 4)
        if self.method == "rrf":
            out["vector_rank"] = self.vector_ranks.get(memory_id)
            out["keyword_rank"] = self.keyword_ranks.get(memory_id)
        return out


def plan_fusion(
    method: str,
    vector_weight: float,
    rrf_k: float,
    similarity_parts: Mapping[str, float],
    keyword_parts: Mapping[str, float],
    lexical: float | None = None,
) -> Fusion:
    """The fusion of one query. ``similarity_parts`` holds the scaled similarity of each
    candidate that has one; ``keyword_parts`` the scaled BM25 of those the keyword search
    found (> 0). ``vector_weight`` is already 1 (0) when only the dense (keyword) signal
    exists. ``lexical``: the query's lexical evidence strength (linear fusion only), or
    None."""
    if method not in FUSIONS:
        raise ValueError(f"unknown fusion {method!r}; choose one of {', '.join(FUSIONS)}")
    if method == "linear" and lexical is not None and 0.0 < vector_weight < 1.0:
        return Fusion(method, lexical_weight(vector_weight, lexical), rrf_k, lexical=lexical)
    if method == "rrf":
        return Fusion(
            method,
            vector_weight,
            rrf_k,
            shared_ranks(similarity_parts),
            shared_ranks({i: v for i, v in keyword_parts.items() if v > 0.0}),
        )
    if method == "adaptive" and 0.0 < vector_weight < 1.0:
        vector_weight = adaptive_weight(
            vector_weight, clarity(similarity_parts.values()), clarity(keyword_parts.values())
        )
    return Fusion(method, vector_weight, rrf_k)


def lexical_weight(vector_weight: float, coverage: float) -> float:
    """The dense share for a query whose best keyword hits hold at most ``coverage`` (0 ..
    1) of its terms: ``vector_weight`` when one holds them all, 1 when none holds any."""
    if not 0.0 <= coverage <= 1.0:
        raise ValueError(f"coverage must be within 0 and 1, got {coverage}")
    keyword = (1.0 - vector_weight) * coverage
    return vector_weight / (vector_weight + keyword) if vector_weight + keyword > 0 else 0.0


def adaptive_weight(vector_weight: float, vector_clarity: float, keyword_clarity: float) -> float:
    """The dense share for a query, from each signal's clarity (``vector_weight`` when
    neither signal stands out)."""
    dense = vector_weight * vector_clarity
    keyword = (1.0 - vector_weight) * keyword_clarity
    if dense + keyword <= 1e-9:
        return vector_weight
    return dense / (dense + keyword)


def clarity(scores: Any) -> float:
    """The best score less the mean of the next ``CLARITY_DEPTH`` (0 where missing)."""
    ordered = sorted((s for s in scores if s > 0.0), reverse=True)
    if not ordered:
        return 0.0
    following = ordered[1 : CLARITY_DEPTH + 1]
    return max(0.0, ordered[0] - sum(following) / CLARITY_DEPTH)


def shared_ranks(scores: Mapping[str, float]) -> dict[str, int]:
    """Each id's rank by descending score, 1 for the best; equal scores share the better
    rank (competition ranking: 1, 2, 2, 4)."""
    ranks: dict[str, int] = {}
    previous: float | None = None
    rank = 0
    for position, (memory_id, score) in enumerate(
        sorted(scores.items(), key=lambda item: -item[1]), start=1
    ):
        if previous is None or score < previous:
            rank, previous = position, score
        ranks[memory_id] = rank
    return ranks
