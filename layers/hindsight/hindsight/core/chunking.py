"""Split a long memory into chunks that fit the embedding model's window.

A memory is stored once, whole; for search it is split into chunks, each embedded and
keyword-indexed on its own (``core/indexing.py``), so a fact stated once on page 30 of a
pasted document is found by a question about it, and the memory comes back once, scored
by its best chunk.

How text is cut (``split``):

1. Into units that should not be broken: fenced code blocks (```` ``` ```` ... ```` ``` ````)
   whole, other text into sentences. A sentence ends at ``. ! ?`` followed by white space,
   at Chinese ``。！？；`` (no space follows them), or at a line break. Every unit keeps its
   trailing white space, so the units tile the text exactly.
2. Units are packed greedily into chunks of at most ``max_tokens`` tokens as the model
   counts them (``count_tokens``: the embedder's own tokenizer, prefix and special tokens
   included), starting a new chunk at a paragraph break (blank line) once a chunk is at
   least half full, so chunks follow paragraphs where they can.
3. A unit longer than a whole chunk (a long code block or log line, a paragraph with no
   punctuation) is cut at line breaks, then at spaces, then anywhere, by token count.
4. Consecutive chunks overlap by the last units of the previous chunk, up to
   ``overlap_tokens``, so a sentence on a boundary is whole in at least one chunk.

Spans are ``[start, end)`` character offsets into the text; ``text[start:end]`` is the
chunk. Splitting is deterministic: the same text, window and tokenizer give the same spans.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hindsight.core.models import Span

TokenCounter = Callable[[str], int]

_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*\1[ \t]*$\n?", re.MULTILINE | re.DOTALL)
# the end of a sentence: ASCII terminators before white space, Chinese ones anywhere, or a
# line break; the white space after it belongs to the sentence before
_SENTENCE_END = re.compile(r"(?:[.!?]+[\"')\]]*[ \t]+|[。！？；…]+[”’」』)）]*[ \t]*|\n+)")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_CUT_POINTS = (re.compile(r"\n"), re.compile(r"[ \t]+"))


def split(
    text: str, count_tokens: TokenCounter, max_tokens: int, overlap_tokens: int = 0
) -> list[Span]:
    """Spans of chunks of ``text`` of at most ``max_tokens`` tokens each (see module doc).

    ``count_tokens(piece)`` must include the fixed cost every embedded text pays (prefix,
    special tokens); that cost is measured once as ``count_tokens("")``.
    """
    if not text:
        return [(0, 0)]
    overhead = count_tokens("")
    budget = max_tokens - overhead
    if budget < 8:
        raise ValueError(f"max_tokens={max_tokens} leaves fewer than 8 tokens for text")
    units = [
        (start, end, count_tokens(text[start:end]) - overhead)
        for start, end in _fitting_units(text, count_tokens, overhead, budget)
    ]
    return _pack(text, units, budget, max(0, min(overlap_tokens, budget // 2)))


def _fitting_units(text: str, count_tokens: TokenCounter, overhead: int, budget: int) -> list[Span]:
    """The text's units (code blocks, sentences), each cut further if over the budget."""
    out: list[Span] = []
    for start, end in _units(text):
        if end - start <= budget or count_tokens(text[start:end]) - overhead <= budget:
            out.append((start, end))
        else:
            out.extend(_cut(text, start, end, count_tokens, overhead, budget))
    return out


def _units(text: str) -> list[Span]:
    """Code blocks whole, the text between them in sentences; the units tile ``text``."""
    units: list[Span] = []
    position = 0
    for fence in _FENCE.finditer(text):
        units.extend(_sentences(text, position, fence.start()))
        units.append((fence.start(), fence.end()))
        position = fence.end()
    units.extend(_sentences(text, position, len(text)))
    return [(start, end) for start, end in units if end > start]


def _sentences(text: str, start: int, end: int) -> list[Span]:
    spans: list[Span] = []
    position = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if match.end() > position:
            spans.append((position, match.end()))
            position = match.end()
    if position < end:
        spans.append((position, end))
    return spans


def _cut(
    text: str, start: int, end: int, count_tokens: TokenCounter, overhead: int, budget: int
) -> list[Span]:
    """Cut an over-long unit into pieces within the budget: the longest prefix that fits,
    ending at a line break or a space when there is one in its second half."""
    pieces: list[Span] = []
    while start < end:
        if count_tokens(text[start:end]) - overhead <= budget:
            pieces.append((start, end))
            break
        stop = _longest_fitting(text, start, end, count_tokens, overhead, budget)
        stop = _nicer_stop(text, start, stop)
        pieces.append((start, stop))
        start = stop
    return pieces


def _longest_fitting(
    text: str, start: int, end: int, count_tokens: TokenCounter, overhead: int, budget: int
) -> int:
    """The largest ``stop`` (> start) with ``text[start:stop]`` within the budget."""
    low, high = start + 1, min(end, start + budget * 16)
    if count_tokens(text[start:high]) - overhead <= budget:
        return high
    while high - low > 1:  # invariant: [start, low) fits, [start, high) does not
        middle = (low + high) // 2
        if count_tokens(text[start:middle]) - overhead <= budget:
            low = middle
        else:
            high = middle
    return low


def _nicer_stop(text: str, start: int, stop: int) -> int:
    """Move ``stop`` back to just after a line break or space in the second half, if any."""
    half = start + (stop - start) // 2
    for pattern in _CUT_POINTS:
        found = [m.end() for m in pattern.finditer(text, half, stop)]
        if found:
            return found[-1]
    return stop


def _pack(text: str, units: list[tuple[int, int, int]], budget: int, overlap: int) -> list[Span]:
    """Greedy packing of (start, end, tokens) units into chunks, with overlap."""
    chunks: list[Span] = []
    first = 0  # index of the chunk's first unit
    while first < len(units):
        last, used = first, 0
        while last < len(units) and used + units[last][2] <= budget:
            if last > first and used * 2 >= budget and _starts_paragraph(text, units[last][0]):
                break
            used += units[last][2]
            last += 1
        last = max(last, first + 1)  # every unit fits alone (see _fitting_units)
        chunks.append((units[first][0], units[last - 1][1]))
        if last >= len(units):
            break
        first = _overlap_start(units, first, last, overlap)
    return chunks


def _starts_paragraph(text: str, position: int) -> bool:
    before = text[max(0, position - 8) : position]
    return bool(_PARAGRAPH_BREAK.search(before)) or before.endswith("\n\n")


def _overlap_start(units: list[tuple[int, int, int]], first: int, last: int, overlap: int) -> int:
    """The first unit of the next chunk: the chunk's last units up to ``overlap`` tokens
    (never the whole chunk, so every chunk moves forward)."""
    start, carried = last, 0
    while start - 1 > first and carried + units[start - 1][2] <= overlap:
        start -= 1
        carried += units[start][2]
    return start
