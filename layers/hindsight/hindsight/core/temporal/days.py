"""Day ranges ``[start, end)`` and the calendar arithmetic both languages resolve with."""

from __future__ import annotations

import calendar
from datetime import date, timedelta

Span = tuple[date, date]  # [start, end) in days


def day_span(d: date) -> Span:
    return d, d + timedelta(days=1)


def monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def week_span(d: date, offset: int) -> Span:
    start = monday(d) + timedelta(weeks=offset)
    return start, start + timedelta(days=7)


def weekend_span(d: date, offset: int) -> Span:
    start = monday(d) + timedelta(weeks=offset, days=5)
    return start, start + timedelta(days=2)


def add_months(d: date, months: int) -> date:
    index = d.year * 12 + (d.month - 1) + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(d.day, last))


def month_span(year: int, month: int) -> Span:
    start = date(year, month, 1)
    return start, add_months(start, 1)


def relative_month_span(d: date, offset: int) -> Span:
    start = add_months(date(d.year, d.month, 1), offset)
    return start, add_months(start, 1)


def year_span(year: int) -> Span:
    return date(year, 1, 1), date(year + 1, 1, 1)


# the seasons by meteorological months (northern hemisphere): a year's winter is its
# December and the next year's January and February
SEASON_MONTHS = {"spring": 3, "summer": 6, "autumn": 9, "winter": 12}


def season_span(year: int, season: str) -> Span:
    start = date(year, SEASON_MONTHS[season], 1)
    return start, add_months(start, 3)


def relative_season_span(ref: date, season: str, offset: int) -> Span:
    """Last (-1), this (0) or next (1) such season: the latest one over by ``ref``; the one
    ``ref`` is in, else the nearer of the one just over and the coming one ("this winter"
    said on 1 March is the one that just ended, "this summer" the coming one); the first
    one starting after ``ref``."""
    spans = [season_span(y, season) for y in range(ref.year - 2, ref.year + 2)]
    over = max((s for s in spans if s[1] <= ref), key=lambda s: s[0])
    coming = min((s for s in spans if s[0] > ref), key=lambda s: s[0])
    if offset < 0:
        return over
    if offset > 0:
        return coming
    current = [s for s in spans if s[0] <= ref < s[1]]
    if current:
        return current[0]
    return over if (ref - over[1]).days <= (coming[0] - ref).days else coming


# a part of a year: its first or last four months, its middle four, or a half
YEAR_PARTS = {
    "early": (1, 4),
    "mid": (5, 4),
    "late": (9, 4),
    "first half": (1, 6),
    "second half": (7, 6),
}


def year_part_span(year: int, part: str) -> Span:
    month, length = YEAR_PARTS[part]
    start = date(year, month, 1)
    return start, add_months(start, length)


def safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def guess_year(ref: date, month: int, day: int) -> date | None:
    """A month/day without a year: its nearest occurrence to ``ref``, before or after.

    "On December 31st" asked on 1 March is the one two months ago, not ten months ahead;
    "on March 3" said on New Year's Eve is the coming one.
    """
    found = [d for y in (ref.year - 1, ref.year, ref.year + 1) if (d := safe_date(y, month, day))]
    return min(found, key=lambda d: (abs((d - ref).days), d < ref)) if found else None


def guess_month_year(ref: date, month: int) -> int:
    """A month without a year: the year of its nearest occurrence (by the month's middle)."""

    def distance(year: int) -> int:
        return abs((date(year, month, 15) - ref).days)

    return min((ref.year - 1, ref.year, ref.year + 1), key=lambda y: (distance(y), y < ref.year))


def plausible_year(year: int) -> bool:
    return 1900 <= year <= 2200


def shift(ref: date, amount: int, unit: str) -> date:
    """``ref`` moved by ``amount`` days, weeks, months or years (``unit`` singular)."""
    if unit == "day":
        return ref + timedelta(days=amount)
    if unit == "week":
        return ref + timedelta(weeks=amount)
    if unit == "month":
        return add_months(ref, amount)
    return add_months(ref, 12 * amount)


# --- weekdays (0 is Monday) ------------------------------------------------------------


def upcoming(ref: date, weekday: int) -> date:
    """The next such weekday, today included."""
    return ref + timedelta(days=(weekday - ref.weekday()) % 7)


def previous(ref: date, weekday: int) -> date:
    """The last such weekday before today."""
    back = (ref.weekday() - weekday) % 7 or 7
    return ref - timedelta(days=back)


def in_week(ref: date, offset: int, weekday: int) -> date:
    """That weekday of the week ``offset`` weeks from ``ref``'s."""
    return monday(ref) + timedelta(weeks=offset, days=weekday)
