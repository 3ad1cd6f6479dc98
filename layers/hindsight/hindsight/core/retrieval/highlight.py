"""Where a long memory matched a query: highlights, and contents cut around the match.

A chunked memory is found by one of its chunks (``core/chunking.py``); the index reports
which (``SearchHit.chunk``/``span``). A highlight is that chunk's span plus a short excerpt
inside it: the window of at most ``EXCERPT_CHARS`` characters holding the most query words
(the chunk's start when none occurs, as for a match by meaning alone). An agent with a
small context takes the excerpt instead of the whole memory; ``cut_around`` returns a long
content cut to a length, centred on the match.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from hindsight.core.models import Span
from hindsight.core.text import ENGLISH_STOPWORDS, tokenize

EXCERPT_CHARS = 300
ELLIPSIS = "…"
_WORD = re.compile(r"[^\W_]{3,}")


@dataclass(frozen=True)
class Match:
    """How a search found a chunk of a memory."""

    chunk: int
    span: Span
    by: str  # "keyword" or "vector"


def query_words(query: str) -> list[str]:
    """Casefolded words of the query to look for in a content: its latin words (3+ letters,
    not stopwords) and its Chinese terms as the keyword index segments them."""
    folded = unicodedata.normalize("NFKC", query).casefold()
    words = [w for w in _WORD.findall(folded) if w not in ENGLISH_STOPWORDS and w.isascii()]
    words += [t for t in tokenize(query) if not t.isascii() and len(t) >= 2]
    return list(dict.fromkeys(words))


def best_window(content: str, span: Span, words: list[str], width: int) -> Span:
    """The ``width``-character window within ``span`` that holds the most query words."""
    start, end = span
    if end - start <= width:
        return span
    folded = content[start:end].casefold()
    hits = sorted(
        position for word in words for position in _positions(folded, word) if position >= 0
    )
    if not hits:
        return start, _snap(content, start + width, start, end, -1)
    best, best_count = hits[0], 0
    for first in hits:  # windows starting a little before each hit
        count = sum(1 for position in hits if first <= position < first + width * 3 // 4)
        if count > best_count:
            best, best_count = first, count
    window_start = max(start, start + best - width // 4)
    window_end = min(end, window_start + width)
    window_start = max(start, window_end - width)
    return (
        _snap(content, window_start, window_start, window_end, 1),
        _snap(content, window_end, window_start, window_end, -1),
    )


def _positions(text: str, word: str) -> list[int]:
    out: list[int] = []
    position = text.find(word)
    while position >= 0 and len(out) < 50:
        out.append(position)
        position = text.find(word, position + len(word))
    return out


def _snap(content: str, position: int, low: int, high: int, step: int) -> int:
    """Move a cut off the middle of a latin word, by ``step``, staying within [low, high]
    (at most 20 characters; else the cut stays where it was)."""
    moved = position
    for _ in range(20):
        inside = 0 < moved < len(content)
        if not inside or not (content[moved - 1].isalnum() and content[moved].isalnum()):
            return moved
        if not (content[moved - 1].isascii() and content[moved].isascii()):
            return moved
        moved += step
        if not low <= moved <= high:
            break
    return position


def highlight(content: str, match: Match, words: list[str]) -> dict[str, object]:
    """The highlight of one match: chunk number, span, and an excerpt inside it."""
    start, end = best_window(content, match.span, words, EXCERPT_CHARS)
    return {
        "chunk": match.chunk,
        "start": match.span[0],
        "end": match.span[1],
        "matched_by": match.by,
        "excerpt": content[start:end].strip(),
        "excerpt_start": start,
        "excerpt_end": end,
    }


def cut_around(content: str, span: Span | None, words: list[str], limit: int) -> tuple[str, Span]:
    """At most ``limit`` characters of ``content`` around ``span`` (the whole content's
    start when None), with an ellipsis where it was cut; and the span kept."""
    if len(content) <= limit:
        return content, (0, len(content))
    within = span or (0, len(content))
    start, end = best_window(content, within, words, limit)
    if end - start < limit:  # widen to the limit around the window
        spare = limit - (end - start)
        start = max(0, start - spare // 2)
        end = min(len(content), start + limit)
        start = max(0, end - limit)
    text = content[start:end]
    return (ELLIPSIS if start > 0 else "") + text + (ELLIPSIS if end < len(content) else ""), (
        start,
        end,
    )
