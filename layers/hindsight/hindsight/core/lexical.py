"""How much of a query a memory holds (``coverage``), each term weighed by how rare it is.

With ``Policy.lexical_cues`` the coverage leaves out the query's terms another factor of
the ranking reads: a named speaker's words (the speaker boost rewards that speaker's
turns) and the words of a time cue (the time-cue boost rewards memories of that time);
the turns do not hold a date they were said on, so "in October 2023" made a query look
half unmatched.

``Policy.lexical_strength`` scales the keyword share of the fused relevance by the share
of the query's terms that one of its best keyword hits holds (``core/fusion.py``). Every
term counts alike there, so a hit that holds a word most memories hold ("like", "live")
looks like a match. With ``Policy.lexical_idf`` each term weighs its inverse document
frequency among the user's memories, read from the keyword search itself (the term asked
alone: how many memories hold it, up to the candidate pool): ``log(1 + (n - df + 0.5) /
(df + 0.5))`` with ``n`` the pool, as BM25 weighs it. A term held by the whole pool or
more weighs almost nothing, so a best hit holding only common words is a weak match.

Both are off (bench/results/devsets.md, recall@10 / hit@5 against the default): rarity
wins MSC +0.016 / +0.032 and long-memory hit@5 (en +0.051, zh +0.026) but loses LoCoMo
0.013 / 0.012, mostly adversarial questions (0.886 -> 0.859 recall@10): a date or a word
no turn holds weighs most and leans the query on the model; with the cues left out as
well LoCoMo loses 0.009 / 0.008 (MSC +0.016 / +0.036). The cues alone lose LoCoMo 0.003 /
0.004 and MSC recall@10 0.012. A term no memory holds weighing 0 instead lost MSC
(0.395 / 0.488 against 0.440 / 0.544), and weighing the mean of the held terms' weights
lost MSC too (0.419 / 0.532): the words no turn holds are what mark a paraphrase.
Weights that only lower common terms (scaled so that a term one memory holds, or none,
weighs 1) still lost LoCoMo 0.011 / 0.010 (MSC +0.008 / +0.024): LoCoMo's keyword
evidence is worth its common words too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache

from hindsight.core.models import TimeRange
from hindsight.core.text import normalize, tokenize


def uncued(
    query_terms: frozenset[str], names: frozenset[str], query_time: TimeRange | None
) -> frozenset[str]:
    """The query's terms that other factors read, left out of the lexical coverage
    (``Policy.lexical_cues``): the named speakers' words (the speaker boost) and the words
    of the query's time cue (the time-cue boost); none when they are every term."""
    cues = names | (frozenset(tokenize(query_time.expression)) if query_time else frozenset())
    cues &= query_terms
    return frozenset() if cues >= query_terms else cues


def rarity(held_by: int, pool: int) -> float:
    """A term's weight from how many memories hold it (``held_by``, up to ``pool``)."""
    if pool <= 0 or held_by < 0:
        raise ValueError(f"need a positive pool and a count >= 0, got {pool}, {held_by}")
    held_by = min(held_by, pool)
    return math.log(1.0 + (pool - held_by + 0.5) / (held_by + 0.5))


def term_weights(
    terms: Iterable[str], held_by: Callable[[str], int], pool: int
) -> dict[str, float]:
    """Each term's weight, ``held_by(term)`` telling how many memories hold it."""
    return {term: rarity(held_by(term), pool) for term in terms}


def weighted_coverage(weights: Mapping[str, float], content: str) -> float:
    """The share of the terms' total weight the content holds; 0 without weight."""
    total = math.fsum(weights.values())
    if total <= 0.0:
        return 0.0
    held = _held(frozenset(weights), content)
    return math.fsum(w for term, w in weights.items() if term in held) / total


def coverage(query_terms: frozenset[str], content: str) -> float:
    """The share of the query's terms the content holds (0 for a query without terms).

    A short content is tokenized as the index does; a long one (a pasted document) is
    searched as text for each term (a latin stem less its last letter, so that "hike"
    meets "hiking"): segmenting 100,000 characters would cost tens of milliseconds.
    """
    if not query_terms:
        return 0.0
    return len(_held(query_terms, content)) / len(query_terms)


def _held(query_terms: frozenset[str], content: str) -> frozenset[str]:
    if len(content) <= TOKENIZED_CHARS:
        return query_terms & _content_terms(content)
    text = _folded(content)
    return frozenset(term for term in query_terms if _stem_prefix(term) in text)


TOKENIZED_CHARS = 2_000


@lru_cache(maxsize=1_024)
def _content_terms(content: str) -> frozenset[str]:
    return frozenset(tokenize(content))


@lru_cache(maxsize=64)
def _folded(content: str) -> str:
    return normalize(content)


def _stem_prefix(term: str) -> str:
    return term[:-1] if term.isascii() and term.isalpha() and len(term) > 3 else term
