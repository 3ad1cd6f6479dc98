"""The pattern table's shape: a regular expression and how a match resolves to days.

Also the resolvers that do not depend on the language (a fixed day, this/next/last week,
weekend, month or year, the recent past).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from hindsight.core.temporal.days import (
    Span,
    day_span,
    relative_month_span,
    week_span,
    weekend_span,
    year_span,
)

Resolver = Callable[[re.Match[str], date], Span | None]


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern[str]
    resolve: Resolver


def pattern(regex: str, resolve: Resolver, flags: int = re.IGNORECASE) -> Pattern:
    return Pattern(re.compile(regex, flags), resolve)


def fixed(offset_days: int) -> Resolver:
    return lambda m, ref: day_span(ref + timedelta(days=offset_days))


def week_of(offset: int) -> Resolver:
    return lambda m, ref: week_span(ref, offset)


def weekend_of(offset: int) -> Resolver:
    return lambda m, ref: weekend_span(ref, offset)


def month_of(offset: int) -> Resolver:
    return lambda m, ref: relative_month_span(ref, offset)


def year_of(offset: int) -> Resolver:
    return lambda m, ref: year_span(ref.year + offset)


def recent(count: int) -> Resolver:
    """The ``count`` days before the reference day, and that day."""
    return lambda m, ref: (ref - timedelta(days=count), ref + timedelta(days=1))
