"""Finding time expressions in a text: every pattern of both languages, overlaps resolved."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time

from hindsight.core.models import TimeRange, utc
from hindsight.core.temporal.chinese import CHINESE_EXPRESSIONS, CHINESE_QUERY_ONLY
from hindsight.core.temporal.days import Span
from hindsight.core.temporal.english import ENGLISH_EXPRESSIONS, ENGLISH_QUERY_ONLY
from hindsight.core.temporal.patterns import Pattern

# The order matters: at one position the longest match wins, and among equally long ones
# the pattern listed first.
_EXPRESSIONS: list[Pattern] = ENGLISH_EXPRESSIONS + CHINESE_EXPRESSIONS
_QUERY_ONLY: list[Pattern] = ENGLISH_QUERY_ONLY + CHINESE_QUERY_ONLY


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    span: Span
    expression: str


def _scan(text: str, ref: date, patterns: list[Pattern]) -> list[_Found]:
    candidates: list[_Found] = []
    for pattern in patterns:
        for match in pattern.regex.finditer(text):
            if match.end() == match.start():
                continue
            span = _resolved(pattern, match, ref)
            if span is None:
                continue
            candidates.append(_Found(match.start(), match.end(), span, match.group(0).strip()))
    # Earliest first, longest first at one position; drop anything overlapping a kept one.
    candidates.sort(key=lambda f: (f.start, -(f.end - f.start)))
    kept: list[_Found] = []
    for found in candidates:
        if kept and found.start < kept[-1].end:
            continue
        kept.append(found)
    return kept


def _resolved(pattern: Pattern, match: re.Match[str], ref: date) -> Span | None:
    """The span an expression names, or None when it falls outside the calendar (years
    1-9999: "tomorrow" on 9999-12-31, "last year" in year 1) or names no real day."""
    try:
        return pattern.resolve(match, ref)
    except (OverflowError, ValueError):
        return None


def _to_range(found: _Found) -> TimeRange:
    start, end = found.span
    return TimeRange(
        start=datetime.combine(start, time.min, tzinfo=UTC),
        end=datetime.combine(end, time.min, tzinfo=UTC),
        expression=found.expression,
    )


def resolve_time_expressions(text: str, reference: datetime) -> list[TimeRange]:
    """Time expressions in ``text`` resolved against ``reference``, in order, no duplicates."""
    ref = utc(reference).date()
    ranges: list[TimeRange] = []
    seen: set[tuple[datetime, datetime]] = set()
    for found in _scan(text, ref, _EXPRESSIONS):
        time_range = _to_range(found)
        key = (time_range.start, time_range.end)
        if key not in seen:
            seen.add(key)
            ranges.append(time_range)
    return ranges


def parse_query_time(query: str, now: datetime) -> TimeRange | None:
    """The time a question refers to, as one range covering every time it names."""
    ref = utc(now).date()
    found = _scan(query, ref, _QUERY_ONLY + _EXPRESSIONS)
    if not found:
        return None
    start = min(f.span[0] for f in found)
    end = max(f.span[1] for f in found)
    expression = " + ".join(dict.fromkeys(f.expression for f in found))
    return _to_range(_Found(found[0].start, found[-1].end, (start, end), expression))
