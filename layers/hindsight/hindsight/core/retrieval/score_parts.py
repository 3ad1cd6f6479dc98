"""The parts of one result's score, and ``why``, which presents them.

A result's ``score`` is the value the results are ordered by:

    score = fused x state x echo
    fused = relevance x every factor of ``core/retrieval/ranking.py`` (recency, use, the kind's
            boost and the fact's confidence, the speaker, the assistant's weight, time)
    state = the factor a group of states of one attribute gives its members
            (``core/retrieval/state_factor.py``): 1 for every other memory
    echo  = the factor that puts a user's own statement above an assistant's echo of it
            (``core/retrieval/echoes.py``): 1 for every other memory

so a memory is placed by its score and by nothing else, across pages too. The calibrated
probability that the memory answers the query (``policy.Calibration``) is kept apart in
``why["probability"]``: ``min_score`` compares it (it compares across queries; the score
only within one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# the factors that apply to some memories only, as ``why`` names them
FACTORS = ("use_weight", "speaker_boost", "assistant_weight", "time_boost")


@dataclass(slots=True)
class Parts:
    """The numbers behind one candidate's score, each computed once while scoring; ``why``
    only presents them."""

    similarity: float | None
    similarity_scaled: float
    keyword: float
    keyword_bm25: float
    own: float
    pooled: float | None
    relevance: float
    age: float | None = None
    decay: float | None = None
    recency: float | None = None
    kind_boost: float | None = None
    confidence_weight: float | None = None
    time_boost: float | None = None
    speaker_boost: float | None = None
    assistant_weight: float | None = None  # set when an assistant's turn weighs less
    use_weight: float | None = None  # set when an unused episode weighs less
    score: float = 0.0  # what the results are ordered by: fused x state x echo
    # the calibration's inputs beyond the above, and its output
    floor: float = 0.0  # the query's similarity to an empty text
    margin: float = 0.0  # similarity less the floor
    coverage: float = 0.0
    log_factor: float = 0.0
    fact: bool = False
    fused: float = 0.0  # relevance x every factor
    few: float = 0.0  # 1 for a lone candidate, down to 0 at FEW_CANDIDATES candidates
    chinese: bool = False  # the query is written mostly in Chinese
    logit: float = 0.0
    probability: float = 0.0
    calibrated: bool = False  # logit and probability are set (``calibrate``)
    fusion: dict[str, Any] | None = None  # the dense share lexical strength set (``fusion.py``)
    state: dict[str, Any] | None = None  # the state factor and why (``state_factor.py``)
    echo: dict[str, Any] | None = None  # the echo factor and why (``echoes.py``)

    def features(self) -> dict[str, float]:
        """The calibration's inputs (``policy.Calibration``), by name."""
        return {
            "similarity_floor": self.floor,
            # a memory without a similarity (the budget ran out) counts as an empty text
            "similarity_margin": self.margin,
            "similarity_relative": self.similarity_scaled,
            "keyword_relative": self.keyword,
            "keyword_coverage": self.coverage,
            "keyword_found": 1.0 if self.keyword_bm25 > 0.0 else 0.0,
            "session": self.pooled if self.pooled is not None else self.own,
            "log_factor": self.log_factor,
            "fused": self.fused,
            "fact": 1.0 if self.fact else 0.0,
            "few": self.few,
            "few_margin": self.few * self.margin,
            "few_coverage": self.few * self.coverage,
            "few_chinese": self.few if self.chinese else 0.0,
        }

    def _set(self, names: tuple[str, ...]) -> dict[str, Any]:
        """The named parts that apply (those set), by name."""
        return {name: value for name in names if (value := getattr(self, name)) is not None}

    def why(self) -> dict[str, Any]:
        why: dict[str, Any] = {
            "similarity": round(self.similarity, 4) if self.similarity is not None else None,
            "similarity_scaled": round(self.similarity_scaled, 4),
            "keyword": round(self.keyword, 4),
            "keyword_bm25": round(self.keyword_bm25, 4),
        }
        if self.fusion:
            why["fusion"] = self.fusion
        if self.pooled is not None:
            why.update(own_relevance=round(self.own, 4), session_relevance=round(self.pooled, 4))
        why["relevance"] = round(self.relevance, 4)
        if self.age is not None and self.decay is not None and self.recency is not None:
            why.update(
                age_days=round(self.age, 2),
                decay=round(self.decay, 4),
                recency=round(self.recency, 4),
            )
        elif self.kind_boost is not None:
            why.update(kind_boost=self.kind_boost, confidence_weight=self.confidence_weight)
        why.update(self._set(FACTORS))
        why["fused_score"] = round(self.fused, 6)
        why.update(self._set(("state", "echo")))
        why["calibration"] = {
            **{name: round(value, 4) for name, value in self.features().items()},
            "logit": round(self.logit, 4),
        }
        why["probability"] = round(self.probability, 6)
        why["score"] = round(self.score, 6)
        return why
