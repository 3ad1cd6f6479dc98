"""Fusion of the dense and keyword evidence of the candidates into one relevance (``own``).

``w * similarity' + (1 - w) * keyword'`` on the scaled scores (``core/retrieval/ranking.py``), ``w =
Policy.vector_weight``: 1 for a candidate that is best by both signals, 0 for one that
neither found, the scale pooling, the factors and the calibration read.

With ``Policy.lexical_strength`` (3 by default; 0 turns it off), the dense share is set
per query by how much of the query its best lexical matches hold (``lexical_weight``):
BM25 divided by its best score gives 1 to the best keyword hit however weak it is (a hit
that holds only the name the question asks about, or one common word, of a query whose
other words no memory holds); the largest share of the query's terms that one of its
``lexical_strength`` best keyword hits holds (its text as searched), ``c``, scales the
keyword share: ``w / (w + (1 - w) * c)``, so ``w`` (0.5) for a full match and 0.75 for a
query whose best hits hold a third of its terms. The figures that chose the defaults:
docs/decisions.md, "Ranking".

A query with no keyword hit at all uses the dense evidence alone (and one without
similarities the keyword evidence alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Fusion:
    """How one query's candidates are fused: the dense share, and what set it."""

    vector_weight: float
    lexical: float | None = None  # the coverage that set the dense share (lexical_strength)

    def own(self, similarity_part: float, keyword_part: float) -> float:
        """The fused relevance of one candidate, in [0, 1]."""
        w = self.vector_weight
        return w * similarity_part + (1.0 - w) * keyword_part

    def why(self) -> dict[str, Any]:
        """What ``why`` shows of the fusion: the dense share the lexical coverage set."""
        if self.lexical is None:
            return {}
        return {
            "vector_weight": round(self.vector_weight, 4),
            "lexical_coverage": round(self.lexical, 4),
        }


def plan_fusion(vector_weight: float, lexical: float | None = None) -> Fusion:
    """The fusion of one query. ``vector_weight`` is already 1 (0) when only the dense
    (keyword) signal exists. ``lexical``: the query's lexical evidence strength, or None."""
    if lexical is not None and 0.0 < vector_weight < 1.0:
        return Fusion(lexical_weight(vector_weight, lexical), lexical)
    return Fusion(vector_weight)


def lexical_weight(vector_weight: float, coverage: float) -> float:
    """The dense share for a query whose best keyword hits hold at most ``coverage`` (0 ..
    1) of its terms: ``vector_weight`` when one holds them all, 1 when none holds any."""
    if not 0.0 <= coverage <= 1.0:
        raise ValueError(f"coverage must be within 0 and 1, got {coverage}")
    keyword = (1.0 - vector_weight) * coverage
    return vector_weight / (vector_weight + keyword) if vector_weight + keyword > 0 else 0.0
