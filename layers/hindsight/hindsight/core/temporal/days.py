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


def safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def guess_year(ref: date, month: int, day: int) -> date | None:
    """A month/day without a year: this year's, or next year's if long past."""
    candidate = safe_date(ref.year, month, day)
    if candidate is None:
        return safe_date(ref.year + 1, month, day)
    if (ref - candidate).days > 183:
        return safe_date(ref.year + 1, month, day) or candidate
    return candidate


def guess_month_year(ref: date, month: int) -> int:
    first = date(ref.year, month, 1)
    return ref.year + 1 if (ref - add_months(first, 1)).days > 183 else ref.year


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
