"""How much of a query a memory holds (``coverage``): the share of its terms the memory holds.

``Policy.lexical_strength`` scales the keyword share of the fused relevance by the share
of the query's terms that one of its best keyword hits holds (``core/retrieval/fusion.py``); the
calibration reads the share each result holds (``keyword_coverage``).
"""

from __future__ import annotations

from functools import lru_cache

from hindsight.core.text import normalize, tokenize


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
