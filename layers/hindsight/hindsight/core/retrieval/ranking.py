"""Ranking: fuse vector and keyword relevance, weigh by time and kind, explain every score.

Score of a candidate =
    relevance          (1 - session_pooling) * own + session_pooling * session_best
                       own = vector_weight * similarity' + (1 - vector_weight) * keyword'
                       (core/retrieval/fusion.py)
  x recency            decay_floor + (1 - decay_floor) * decay   (episodic only)
                       decay = time_decay ** age_days, age relative to as_of
  x use_weight         policy.unused_weight for an episode unused (not hit, not stored)
                       for policy.unused_after_days (core/lifecycle.py), else 1
  x kind_boost         policy.semantic_boost for approved facts, 1 for episodes
  x confidence_weight  by the fact's confidence (high 1.0, medium 0.85, low 0.6)
  x speaker_boost      policy.speaker_boost when the query names the episode's speaker
  x assistant_weight   policy.assistant_weight for an assistant's turn in a session when
                       the query does not ask for the assistant's words (core/retrieval/speakers.py)
  x time_boost         policy.time_cue_boost when the query names a time the memory matches

A fact outranks an episode by its kind's boost alone: it comes first when it is about as
relevant to the query (within that boost), never when it is far less relevant than the
best episode, however reviewed it is.

similarity' is the cosine similarity scaled from the query's similarity to an empty text
(what "unrelated" looks like for the model) up to the best candidate, and keyword'
the BM25 score divided by the best one, so both live in [0, 1]. session_best is the best
``own`` among the candidates of the episode's session (episodes without a session keep
their own): evidence clusters in sessions, so a turn of the session that answers the
query is lifted even when its own words do not match. The recency floor keeps decay a
tie-breaker between similarly relevant memories instead of burying relevant old ones
(with the default 0.95 a day and floor 0.9, a year-old episode keeps 0.9 of its score).
Both defaults (``Policy.decay_floor`` 0.9, ``Policy.session_pooling`` 0.5) were chosen on
the LoCoMo benchmark (bench/locomo.py). Each result's ``why`` holds every part.

Each result's ``score`` is that fused score, times the state factor retrieve gives the
members of a group of states (``core/retrieval/state_factor.py``): the order is the score
(``core/retrieval/score_parts.py``). The calibrated probability that the memory answers the query
(``policy.Calibration``, a logistic over query-comparable evidence: the query's
empty-text floor and the cosine's margin over it, the share of the query's terms the
memory holds, the relative parts above, the factors, the fused score, and how few the
candidates are), fitted by training/calibrate.py with every weight of more evidence at 0 or
above, is ``why["probability"]``; results less probable than ``min_score`` are left out
(a state of the same attribute as a result stays with it: ``core/retrieval/score_cut.py``).
Without a ``min_score``, only the results shown are calibrated (``calibrate``).

Records are read lazily: relevance needs only the index's hits (score, kind, session);
the other factors are bounded (recency <= 1, the largest confidence weight, the
time-cue boost), so the record store is asked only for candidates whose bound can still
reach the requested page. At 100k memories of one user that cut the records read per
query from ~160 to ~55 with the same ranking (tests/unit/test_retrieve_reads_few_records.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from hindsight.core.commands import RetrieveCommand
from hindsight.core.indexing import searched_text
from hindsight.core.lifecycle import use_weight
from hindsight.core.models import (
    EpisodicMemory,
    HitFacts,
    Memory,
    MemoryKind,
    TimeRange,
)
from hindsight.core.policy import (
    CALIBRATION,
    FEW_CANDIDATES,
    Calibration,
    Policy,
    sigmoid,
)
from hindsight.core.retrieval.fusion import plan_fusion
from hindsight.core.retrieval.lexical import coverage
from hindsight.core.retrieval.score_parts import Parts
from hindsight.core.retrieval.speakers import assistant_weight, names_speaker

SECONDS_PER_DAY = 86_400.0
SCORE_DIGITS = 6  # scores are shown rounded to this; min_score compares the shown score
# with a min_score, this many of the candidates it never reads (their most favourable
# probability is under it) are read and held all the same, best fused bound first: a state
# of the same attribute as a result may come back with it (core/retrieval/score_cut.py)
HELD = 10


class Row(NamedTuple):
    """One ranked candidate: its score, its memory and the parts of its score.

    Lists of rows are kept best first (``order_key``). ``score`` is ``parts.score`` when
    the row is made; a step that changes a score (states, echoes) makes a new row.
    """

    score: float
    memory: Memory
    parts: Parts


@dataclass(frozen=True, slots=True)
class Candidate:
    """A hit as ranking sees it before (or without) reading its record."""

    memory_id: str
    kind: MemoryKind
    session: str | None  # the pooling key: an episode's session

    @classmethod
    def of_hit(cls, memory_id: str, facts: HitFacts) -> Candidate:
        session = facts.session_id if facts.kind == MemoryKind.EPISODIC else None
        return cls(memory_id, facts.kind, session or None)

    @classmethod
    def of_memory(cls, memory: Memory) -> Candidate:
        return cls(memory.memory_id, memory.kind, _session_key(memory))


@dataclass(frozen=True, slots=True)
class Scoring:
    """The per-query inputs of scoring."""

    similarities: dict[str, float]
    keyword_hits: dict[str, float]
    as_of: datetime
    command: RetrieveCommand
    query_time: TimeRange | None
    floor: float
    query_terms: frozenset[str]
    calibration: Calibration = CALIBRATION
    min_score: float = 0.0  # results less probable than this are not returned
    centred: Centred | None = None  # what the dense part is scaled from (``centering.py``)


@dataclass(frozen=True, slots=True)
class Centred:
    """The candidates' similarities to the centred query vector and its floor: the dense
    part of relevance is scaled from these; the cosines stay what the calibration reads."""

    similarities: dict[str, float]
    floor: float


def rank(
    policy: Policy,
    candidates: list[Candidate],
    scoring: Scoring,
    fetched: dict[str, Memory | None],
    fetch: Callable[[list[str]], None],
    wanted: int,
    held: list[Row] | None = None,
) -> tuple[list[Row], int]:
    """The best ``wanted`` candidates as ``Row``s, best first, and how many rank.

    Relevance (similarity, keyword, session pooling) needs only what the index returned;
    the other factors (recency from event times, a fact's confidence, time cues matched
    by event times, the words a memory holds) need the record. Every
    factor has an upper bound, so candidates are read best bound first, and reading stops
    once no unread candidate's bound can beat the ``wanted``-th exact score: the result
    equals scoring every candidate. Candidates less probable than ``scoring.min_score``
    are dropped (never read when even their probability's bound is under it); those never
    read are counted as ranking (the index already filtered them), unless fewer than
    ``wanted + 1`` reached it, when the count is exact. Rows read but less probable, and
    the ``HELD`` best of those never read, are added to ``held`` (if given): a state of
    the same attribute as a result may follow it (``core/retrieval/score_cut.py``).

    The probability is computed here only for what needs it (a ``min_score``); otherwise
    ``calibrate`` computes it for the results shown.
    """
    if not candidates or wanted <= 0:
        return [], len(candidates)
    lexical = _lexical_strength(policy, candidates, scoring, fetched, fetch)
    parts = _relevance(policy, candidates, scoring, lexical)
    ordered, pruned = _read_order(policy, candidates, parts, scoring)
    cutting = scoring.min_score > 0.0
    scored: list[Row] = []
    position = 0  # ordered[:position] have been scored (or found gone)
    # records already read (an index without facts) are all scored: nothing to save
    everything_read = all(c.memory_id in fetched for c in candidates)
    # one more than wanted is ranked exactly: whether more results exist is then exact
    target = wanted + 1
    batch = ordered if everything_read else _next_batch(ordered, [], target)
    while batch:
        unread = [memory_id for _, memory_id in batch if memory_id not in fetched]
        if unread:
            fetch(unread)
        for _, memory_id in batch:
            memory = fetched.get(memory_id)
            if memory is not None:
                row = _score(policy, memory, parts[memory_id], scoring)
                if not cutting or round(row.parts.probability, SCORE_DIGITS) >= scoring.min_score:
                    scored.append(row)
                elif held is not None:
                    held.append(row)
        position += len(batch)
        scored.sort(key=order_key)
        batch = _next_batch(ordered[position:], scored, target)
    if held is not None and pruned:  # the best of those the cut never read, held too
        held += _scored_anyway(policy, pruned[:HELD], parts, scoring, fetched, fetch)
    if len(scored) < target:  # every candidate that could reach min_score was read
        return scored, len(scored)
    return scored[:wanted], len(scored) + len(ordered) - position


def _scored_anyway(
    policy: Policy,
    ids: list[tuple[float, str]],
    parts: dict[str, Parts],
    scoring: Scoring,
    fetched: dict[str, Memory | None],
    fetch: Callable[[list[str]], None],
) -> list[Row]:
    """Candidates read and scored though they cannot reach the cut."""
    unread = [memory_id for _, memory_id in ids if memory_id not in fetched]
    if unread:
        fetch(unread)
    read = [(fetched.get(memory_id), memory_id) for _, memory_id in ids]
    return [_score(policy, m, parts[i], scoring) for m, i in read if m is not None]


def _scaled(
    policy: Policy, candidates: list[Candidate], scoring: Scoring
) -> tuple[dict[str, float], dict[str, float], float]:
    """Each candidate's scaled similarity (those that have one) and scaled keyword score,
    and the dense share of relevance (1 without keyword hits, 0 without similarities)."""
    similarities, keyword_hits, floor = scoring.similarities, scoring.keyword_hits, scoring.floor
    if scoring.centred is not None:
        similarities, floor = scoring.centred.similarities, scoring.centred.floor
    sims = [similarities[c.memory_id] for c in candidates if c.memory_id in similarities]
    # similarity is scaled from the query's similarity to an empty text (or the weakest
    # candidate, if lower) up to the best candidate
    low, high = (min([*sims, floor]), max(sims)) if sims else (0.0, 1.0)
    # all alike (one candidate, say): each is the best there is
    spread = high - low if high - low > 1e-6 else 0.0
    best_keyword = max((keyword_hits.get(c.memory_id, 0.0) for c in candidates), default=0.0)
    vector_weight = policy.vector_weight if sims else 0.0
    if best_keyword <= 0.0 and sims:
        vector_weight = 1.0
    sim_parts = {
        c.memory_id: (similarities[c.memory_id] - low) / spread if spread else 1.0
        for c in candidates
        if c.memory_id in similarities
    }
    keyword_parts = {
        c.memory_id: keyword_hits.get(c.memory_id, 0.0) / best_keyword if best_keyword else 0.0
        for c in candidates
    }
    return sim_parts, keyword_parts, vector_weight


def _lexical_strength(
    policy: Policy,
    candidates: list[Candidate],
    scoring: Scoring,
    fetched: dict[str, Memory | None],
    fetch: Callable[[list[str]], None],
) -> float | None:
    """The most of the query's terms one of its n best keyword hits holds as searched, or None."""
    if policy.lexical_strength <= 0 or not scoring.query_terms:
        return None
    hits = scoring.keyword_hits
    found = sorted((-hits[c.memory_id], c.memory_id) for c in candidates if hits.get(c.memory_id))
    best = [memory_id for _, memory_id in found[: policy.lexical_strength]]
    if unread := [memory_id for memory_id in best if memory_id not in fetched]:
        fetch(unread)
    read = [searched_text(m) for m in map(fetched.get, best) if m is not None]
    return max((coverage(scoring.query_terms, text) for text in read), default=None)


def _relevance(
    policy: Policy, candidates: list[Candidate], scoring: Scoring, lexical: float | None = None
) -> dict[str, Parts]:
    """Each candidate's relevance and its parts, from what the index returned (and the
    query's lexical evidence strength, if measured)."""
    similarities, keyword_hits = scoring.similarities, scoring.keyword_hits
    sim_parts, keyword_parts, vector_weight = _scaled(policy, candidates, scoring)
    fusion = plan_fusion(vector_weight, lexical)
    parts: dict[str, Parts] = {}
    session_best: dict[str, float] = {}
    few = max(0.0, (FEW_CANDIDATES - len(candidates)) / (FEW_CANDIDATES - 1))
    chinese = few > 0.0 and mostly_chinese(scoring.command.query)
    for c in candidates:
        similarity = similarities.get(c.memory_id)
        sim_part, keyword_part = sim_parts.get(c.memory_id, 0.0), keyword_parts[c.memory_id]
        own = fusion.own(sim_part, keyword_part)
        keyword = keyword_hits.get(c.memory_id, 0.0)
        part = Parts(similarity, sim_part, keyword_part, keyword, own, None, own)
        part.fusion = fusion.why()
        part.floor = scoring.floor
        if similarity is not None:
            part.margin = similarity - scoring.floor
        part.fact = c.kind == MemoryKind.SEMANTIC
        part.few = few
        part.chinese = chinese
        parts[c.memory_id] = part
        if c.session is not None:
            session_best[c.session] = max(session_best.get(c.session, 0.0), own)
    pooling = policy.session_pooling
    if pooling > 0.0:
        for c in candidates:
            if c.session is not None:
                part = parts[c.memory_id]
                part.pooled = session_best[c.session]
                part.relevance = (1.0 - pooling) * part.own + pooling * part.pooled
    return parts


def _read_order(
    policy: Policy, candidates: list[Candidate], parts: dict[str, Parts], scoring: Scoring
) -> tuple[list[tuple[float, str]], list[tuple[float, str]]]:
    """(-bound, id) of every candidate that can reach ``scoring.min_score``, best bound
    first: the order records are read; and those that cannot, best fused bound first.

    The bound is the largest score the record-dependent parts (recency, confidence, time
    cue, the words held) can give.
    """
    time_bound = max(1.0, policy.time_cue_boost) if scoring.query_time is not None else 1.0
    time_least = min(1.0, policy.time_cue_boost) if scoring.query_time is not None else 1.0
    episode_bound = max(1.0, policy.decay_floor) * time_bound * max(1.0, policy.speaker_boost)
    episode_least = policy.decay_floor * time_least * min(1.0, policy.speaker_boost)
    episode_least *= min(1.0, policy.assistant_weight)
    episode_bound *= max(1.0, policy.assistant_weight)
    episode_least *= min(1.0, policy.unused_weight)
    weights = [1.0, *policy.confidence_weights.values()]
    fact_bound = policy.semantic_boost * max(weights) * time_bound
    fact_least = policy.semantic_boost * min(weights) * time_least
    ordered, pruned = [], []
    for c in candidates:
        part = parts[c.memory_id]
        fact = c.kind == MemoryKind.SEMANTIC
        high, low = (fact_bound, fact_least) if fact else (episode_bound, episode_least)
        bound = part.relevance * high
        if scoring.min_score > 0.0:
            probable = _probability_bound(scoring.calibration, part, fact, (low, high))
            if probable < scoring.min_score - 10.0**-SCORE_DIGITS:
                pruned.append((-bound, c.memory_id))
                continue  # cannot reach min_score: not read to rank
        ordered.append((-bound, c.memory_id))
    ordered.sort()
    pruned.sort()
    return ordered, pruned


def _probability_bound(
    calibration: Calibration, part: Parts, fact: bool, factors: tuple[float, float]
) -> float:
    """The largest probability a candidate can reach once its record is read: the
    record-dependent features (the words held, the factor) at their most favourable."""
    features = part.features()
    features["fact"] = 1.0 if fact else 0.0
    # a memory the keyword search did not find holds none of the query's terms
    if part.keyword_bm25 > 0.0:
        features["keyword_coverage"] = 1.0
        features["few_coverage"] = part.few
    low, high = factors
    logs = (math.log(max(low, 1e-9)), math.log(max(high, 1e-9)))
    features["log_factor"] = logs[1] if calibration.log_factor >= 0.0 else logs[0]
    features["fused"] = part.relevance * (high if calibration.fused >= 0.0 else low)
    return calibration.probability(features)


def _next_batch(
    rest: list[tuple[float, str]],
    scored: list[Row],
    wanted: int,
) -> list[tuple[float, str]]:
    """The unread candidates that can still beat the ``wanted``-th exact score so far."""
    if len(scored) < wanted:
        return rest[: wanted - len(scored) + 10]
    last_score = scored[wanted - 1].score
    # rest is sorted by -bound: the candidates that can still beat the wanted-th come
    # first; the margin absorbs rounding of the bound
    count = 0
    for negative_bound, _ in rest:
        if -negative_bound * (1 + 1e-9) + 1e-12 < last_score:
            break
        count += 1
    return rest[:count]


def order_key(row: Row) -> tuple[float, float, str]:
    """Best score first; among equal scores the newer memory, then by id (stable paging)."""
    return (-row.score, -row.memory.occurred_at.timestamp(), row.memory.memory_id)


def _score(policy: Policy, memory: Memory, parts: Parts, scoring: Scoring) -> Row:
    """The exact score of a read memory; ``parts`` gain age, time boost and score."""
    relevance = parts.relevance
    if isinstance(memory, EpisodicMemory):
        parts.age = _age_days(memory, scoring.as_of)
        parts.decay = scoring.command.time_decay**parts.age
        parts.recency = policy.decay_floor + (1.0 - policy.decay_floor) * parts.decay
        factor = parts.recency
        weight = use_weight(memory, scoring.as_of, policy)  # forgetting by use (lifecycle)
        if weight != 1.0:
            parts.use_weight = weight
            factor *= weight
        if policy.speaker_boost != 1.0 and names_speaker(memory, scoring.query_terms):
            parts.speaker_boost = policy.speaker_boost
            factor *= policy.speaker_boost
        role = assistant_weight(memory, scoring.command.query, policy.assistant_weight)
        if role != 1.0:
            parts.assistant_weight = role
            factor *= role
    else:
        parts.kind_boost = policy.semantic_boost
        parts.confidence_weight = policy.confidence_weights.get(memory.confidence.value, 1.0)
        factor = parts.kind_boost * parts.confidence_weight
    if scoring.query_time is not None:
        parts.time_boost = policy.time_cue_boost if _time_match(memory, scoring.query_time) else 1.0
        factor *= parts.time_boost
    parts.fused = relevance * factor
    parts.log_factor = math.log(max(factor, 1e-9))
    if scoring.min_score > 0.0:
        calibrate(memory, parts, scoring)
    parts.score = parts.fused
    return Row(parts.score, memory, parts)


def calibrate(memory: Memory, parts: Parts, scoring: Scoring) -> Parts:
    """``parts`` with the calibrated probability (and the share of the query's terms the
    memory holds, its one input that needs the content); computed once."""
    if not parts.calibrated:
        if parts.keyword_bm25 > 0.0:  # a memory the keyword search missed holds none
            parts.coverage = coverage(scoring.query_terms, memory.content)
        parts.logit = scoring.calibration.logit(parts.features())
        parts.probability = sigmoid(parts.logit)
        parts.calibrated = True
    return parts


def mostly_chinese(text: str) -> bool:
    """Whether at least half of the text's letters are CJK ideographs."""
    letters = [ch for ch in text if ch.isalnum()]
    cjk = sum(1 for ch in letters if "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf")
    return bool(letters) and 2 * cjk >= len(letters)


def _session_key(memory: Memory) -> str | None:
    if isinstance(memory, EpisodicMemory) and memory.session_id:
        return memory.session_id
    return None


def _age_days(memory: EpisodicMemory, as_of: datetime) -> float:
    """Days since the memory mattered: an upcoming or ongoing event does not age."""
    if any(r.end > as_of for r in memory.event_time):
        return 0.0
    reference = memory.occurred_at
    past_events = [r.end for r in memory.event_time if r.end <= as_of]
    if past_events:
        reference = max(reference, max(past_events))
    return max(0.0, (as_of - reference).total_seconds() / SECONDS_PER_DAY)


def _time_match(memory: Memory, query_time: TimeRange) -> bool:
    if query_time.contains(memory.occurred_at):
        return True
    if isinstance(memory, EpisodicMemory):
        return any(r.overlaps(query_time) for r in memory.event_time)
    return False
