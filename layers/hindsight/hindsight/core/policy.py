"""Tunable behaviour of the use cases, read from settings by the bootstrap.

One flat dataclass so that every knob has one name (the setting ``HINDSIGHT_<NAME>``);
the bootstrap hands each use case the knobs it uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
