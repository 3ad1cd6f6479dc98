"""English time expressions: number and calendar words, patterns and their resolvers.

ISO dates (``2024-05-07``, ``2024/05/07``, ``2024-05``) are matched here too.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from hindsight.core.temporal.days import (
    Span,
    day_span,
    guess_month_year,
    guess_year,
    in_week,
    month_span,
    plausible_year,
    previous,
    safe_date,
    shift,
    upcoming,
    year_span,
)
from hindsight.core.temporal.patterns import (
    Pattern,
    Resolver,
    fixed,
    month_of,
    pattern,
    recent,
    week_of,
    weekend_of,
    year_of,
)

# --- words ---------------------------------------------------------------------------------

_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "a couple of": 2,
    "couple of": 2,
    "a couple": 2,
}
_NUM = (
    r"(?:\d{1,3}|a couple of|a couple|couple of|an|a|one|two|three|four|five|six|seven|"
    r"eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|twenty|thirty)"
)
_WEEKDAYS = {
    "monday": 0,
    "tuesday": 1,
    "wednesday": 2,
    "thursday": 3,
    "friday": 4,
    "saturday": 5,
    "sunday": 6,
}
_WEEKDAY = r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
_MONTH = (
    r"(?P<mon>january|february|march|april|may|june|july|august|september|october|"
    r"november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
)
_MONTH_FULL = (
    r"(?P<mon>january|february|march|april|may|june|july|august|september|october|"
    r"november|december)"
)
_ORD = r"(?:st|nd|rd|th)?"


def _number(text: str) -> int | None:
    lowered = " ".join(text.lower().split())
    if lowered.isdigit():
        return int(lowered)
    return _NUMBERS.get(lowered)


# --- resolvers -------------------------------------------------------------------------------


def _relative(direction: int) -> Resolver:
    def resolve(m: re.Match[str], ref: date) -> Span | None:
        amount = _number(m.group("n"))
        if amount is None:
            return None
        return day_span(shift(ref, direction * amount, m.group("unit").lower().rstrip("s")))

    return resolve


def _weekday_upcoming(m: re.Match[str], ref: date) -> Span:
    return day_span(upcoming(ref, _WEEKDAYS[m.group("wd").lower()]))


def _weekday_next(m: re.Match[str], ref: date) -> Span:
    return day_span(in_week(ref, 1, _WEEKDAYS[m.group("wd").lower()]))


def _weekday_last(m: re.Match[str], ref: date) -> Span:
    return day_span(previous(ref, _WEEKDAYS[m.group("wd").lower()]))


def _weekday_of_week(m: re.Match[str], ref: date) -> Span:
    offset = {"next": 1, "last": -1, "this": 0}[m.group("rel").lower()]
    return day_span(in_week(ref, offset, _WEEKDAYS[m.group("wd").lower()]))


def _month_day(m: re.Match[str], ref: date) -> Span | None:
    month = _MONTHS[m.group("mon").lower()]
    day = int(m.group("d"))
    year = m.groupdict().get("y")
    found = safe_date(int(year), month, day) if year else guess_year(ref, month, day)
    return None if found is None else day_span(found)


def _verb_not_month(word: str) -> bool:
    """Lower-case "may" and "march" are verbs far more often than months."""
    return word in {"may", "march"}


def _month_only(m: re.Match[str], ref: date) -> Span | None:
    if _verb_not_month(m.group("mon")):
        return None
    month = _MONTHS[m.group("mon").lower()]
    year = m.groupdict().get("y")
    if year and plausible_year(int(year)):
        return month_span(int(year), month)
    return month_span(guess_month_year(ref, month), month)


def _year_only(m: re.Match[str], ref: date) -> Span | None:
    year = int(m.group("y"))
    return year_span(year) if plausible_year(year) else None


def _month_relative(m: re.Match[str], ref: date) -> Span | None:
    if _verb_not_month(m.group("mon")):
        return None
    month = _MONTHS[m.group("mon").lower()]
    rel = m.group("rel").lower()
    year = ref.year + {"next": 1, "last": -1, "this": 0}[rel]
    if rel == "next" and month > ref.month:
        year = ref.year  # "next June" said in May is this June
    if rel == "last" and month < ref.month:
        year = ref.year
    return month_span(year, month)


def _iso_date(m: re.Match[str], ref: date) -> Span | None:
    if not plausible_year(int(m.group("y"))):
        return None
    found = safe_date(int(m.group("y")), int(m.group("mo")), int(m.group("d")))
    return None if found is None else day_span(found)


def _iso_month(m: re.Match[str], ref: date) -> Span | None:
    month = int(m.group("mo"))
    if not plausible_year(int(m.group("y"))) or not 1 <= month <= 12:
        return None
    return month_span(int(m.group("y")), month)


def _past(m: re.Match[str], ref: date) -> Span | None:
    amount = _number(m.group("n")) if m.group("n") else 1
    if amount is None:
        return None
    unit = m.group("unit").lower().rstrip("s")
    return shift(ref, -amount, unit), ref + timedelta(days=1)


# --- the patterns ----------------------------------------------------------------------------

ENGLISH_EXPRESSIONS: list[Pattern] = [
    # days
    pattern(r"\bthe day after tomorrow\b", fixed(2)),
    pattern(r"\bthe day before yesterday\b", fixed(-2)),
    pattern(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", fixed(0)),
    pattern(r"\btomorrow\b", fixed(1)),
    pattern(r"\b(?:yesterday|last night)\b", fixed(-1)),
    # weeks / weekends / months / years
    pattern(r"\bthis week\b", week_of(0)),
    pattern(r"\bnext week\b", week_of(1)),
    pattern(r"\blast week\b", week_of(-1)),
    pattern(r"\bthe week after next\b", week_of(2)),
    pattern(r"\b(?:this|the) weekend\b", weekend_of(0)),
    pattern(r"\bnext weekend\b", weekend_of(1)),
    pattern(r"\blast weekend\b", weekend_of(-1)),
    pattern(r"\bthis month\b", month_of(0)),
    pattern(r"\bnext month\b", month_of(1)),
    pattern(r"\blast month\b", month_of(-1)),
    pattern(r"\bthis year\b", year_of(0)),
    pattern(r"\bnext year\b", year_of(1)),
    pattern(r"\blast year\b", year_of(-1)),
    # weekdays
    pattern(rf"\b{_WEEKDAY}\s+(?:of\s+)?(?P<rel>next|last|this)\s+week\b", _weekday_of_week),
    pattern(rf"\bnext\s+{_WEEKDAY}\b", _weekday_next),
    pattern(rf"\blast\s+{_WEEKDAY}\b", _weekday_last),
    pattern(rf"\b(?:(?:this|on|coming|this coming)\s+)?{_WEEKDAY}\b", _weekday_upcoming),
    # relative amounts
    pattern(
        rf"\bin\s+(?P<n>{_NUM})\s+(?P<unit>days?|weeks?|months?|years?)(?:'?\s*time)?\b",
        _relative(1),
    ),
    pattern(
        rf"\b(?P<n>{_NUM})\s+(?P<unit>days?|weeks?|months?|years?)\s+(?:from now|later)\b",
        _relative(1),
    ),
    pattern(rf"\b(?P<n>{_NUM})\s+(?P<unit>days?|weeks?|months?|years?)\s+ago\b", _relative(-1)),
    # calendar dates
    pattern(r"\b(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})\b", _iso_date),
    pattern(r"\b(?P<y>\d{4})/(?P<mo>\d{1,2})/(?P<d>\d{1,2})\b", _iso_date),
    pattern(r"\b(?P<y>\d{4})-(?P<mo>\d{2})\b(?![-/]\d)", _iso_month),
    pattern(rf"\b{_MONTH}\s+(?P<d>\d{{1,2}}){_ORD}\b(?:,?\s+(?P<y>\d{{4}})\b)?", _month_day),
    pattern(
        rf"\b(?P<d>\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MONTH}\b(?:,?\s+(?P<y>\d{{4}})\b)?",
        _month_day,
    ),
    pattern(rf"\b(?P<rel>next|last|this)\s+{_MONTH_FULL}\b", _month_relative),
    pattern(rf"\b{_MONTH_FULL}\s+(?P<y>\d{{4}})\b", _month_only),
    pattern(
        # "in October 2023": the year is part of it (else "in October" alone, the longer
        # match at the earlier position, took the coming October)
        rf"\b(?:in|during|since|until|till|by|early|late|mid|of)[\s-]+{_MONTH_FULL}\b"
        rf"(?:,?\s+(?P<y>\d{{4}})\b)?",
        _month_only,
    ),
]
"""Times a text talks about, in English."""

ENGLISH_QUERY_ONLY: list[Pattern] = [
    pattern(r"\b(?:recently|lately|these days|of late|the (?:past|last) few days)\b", recent(7)),
    pattern(
        rf"\b(?:(?:in|over|during|within|for)\s+)?(?:the\s+)?(?:past|last)\s+(?P<n>{_NUM})\s+"
        r"(?P<unit>days|weeks|months|years|day|week|month|year)\b",
        _past,
    ),
    pattern(
        r"\b(?:in|over|during|within)\s+the\s+(?:past|last)\s+(?P<n>)(?P<unit>day|week|month|year)\b",
        _past,
    ),
    pattern(r"\bthe past (?P<n>)(?P<unit>week|month|year)\b", _past),
    # "what did she do in 2022?": the whole year (questions only: in a memory's text a
    # bare year is as often a count or a model name)
    pattern(r"\b(?:in|during|back in)\s+(?P<y>(?:19|20)\d{2})\b(?![-/.,]?\d)", _year_only),
]
"""Spans of the recent past a question may ask about, in English."""
