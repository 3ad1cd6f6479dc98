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
    relative_season_span,
    safe_date,
    season_span,
    shift,
    upcoming,
    year_part_span,
    year_span,
)
from hindsight.core.temporal.holidays import ENGLISH_HOLIDAYS, holiday_span
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
_RELATIVE = {"next": 1, "last": -1, "this": 0, "past": -1}
_REL_YEAR = r"(?P<rel>last|this|next)\s+year"
# what may lead a time expression; part of the match so that the whole expression starts
# where a shorter one would ("in February of last year", not "in February" + "last year")
_LEAD = r"(?:(?:in|during|on|by|since|until|till|over|from|through|at)\s+)?(?:the\s+)?"
_SEASONS = {
    "spring": "spring",
    "summer": "summer",
    "autumn": "autumn",
    "fall": "autumn",
    "winter": "winter",
}
_PARTS = {
    "early": "early",
    "start": "early",
    "beginning": "early",
    "mid": "mid",
    "middle": "mid",
    "late": "late",
    "end": "late",
    "first half": "first half",
    "second half": "second half",
}


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


def _year_of(m: re.Match[str], ref: date) -> int | None:
    """The year a match names: its digits (``y``) or last/this/next year (``rel``)."""
    if m.groupdict().get("y"):
        year = int(m.group("y"))
        return year if plausible_year(year) else None
    return ref.year + _RELATIVE[m.group("rel").lower()]


def _month_of_year(m: re.Match[str], ref: date) -> Span | None:
    """ "February of last year", "in May this year": that month of that year."""
    year = _year_of(m, ref)
    if _verb_not_month(m.group("mon")) or year is None:
        return None
    return month_span(year, _MONTHS[m.group("mon").lower()])


def _day_of_year(m: re.Match[str], ref: date) -> Span | None:
    """ "December 31st last year": that day of that year."""
    year = _year_of(m, ref)
    if year is None:
        return None
    found = safe_date(year, _MONTHS[m.group("mon").lower()], int(m.group("d")))
    return None if found is None else day_span(found)


def _season(m: re.Match[str], ref: date) -> Span | None:
    """ "last summer", "the fall of 2024", "winter this year" (meteorological seasons)."""
    season = _SEASONS[m.group("s").lower()]
    if m.groupdict().get("near"):
        return relative_season_span(ref, season, _RELATIVE[m.group("near").lower()])
    year = _year_of(m, ref)
    return None if year is None else season_span(year, season)


def _year_part(m: re.Match[str], ref: date) -> Span | None:
    """ "late 2025", "the start of this year", "the first half of last year"."""
    year = _year_of(m, ref)
    part = " ".join(m.group("part").lower().split())
    return None if year is None else year_part_span(year, _PARTS[part])


def _earlier_this(m: re.Match[str], ref: date) -> Span:
    """ "earlier this year/month": from its first day to today."""
    start = date(ref.year, 1, 1) if m.group("unit").lower() == "year" else ref.replace(day=1)
    return start, ref + timedelta(days=1)


def _holiday_key(name: str) -> str:
    return " ".join(name.lower().replace("'", "").replace("\u2019", "").split())


_HOLIDAYS = {_holiday_key(name): holiday for name, holiday in ENGLISH_HOLIDAYS.items()}
_HOLIDAY = "|".join(
    sorted(
        {
            re.escape(name).replace("'", "['\u2019]?").replace(r"\ ", r"\s+")
            for name in ENGLISH_HOLIDAYS
        },
        key=len,
        reverse=True,
    )
)


def _holiday(m: re.Match[str], ref: date) -> Span | None:
    """ "last Christmas", "Thanksgiving 2024", "over the holidays", "before Easter"."""
    groups = m.groupdict()
    year = None
    if groups.get("y") or groups.get("rel"):
        year = _year_of(m, ref)
        if year is None:
            return None
    near = _RELATIVE[groups["near"].lower()] if groups.get("near") else None
    side = {"before": -1, "after": 1}.get((groups.get("side") or "").lower(), 0)
    return holiday_span(_HOLIDAYS[_holiday_key(m.group("h"))], ref, year, near, side)


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
    # a month or a day of a year named relatively
    pattern(rf"\b{_LEAD}{_MONTH_FULL}\s+(?:of\s+)?{_REL_YEAR}\b", _month_of_year),
    pattern(
        rf"\b{_LEAD}{_MONTH}\s+(?P<d>\d{{1,2}}){_ORD},?\s+(?:of\s+)?{_REL_YEAR}\b", _day_of_year
    ),
    pattern(
        rf"\b{_LEAD}(?P<d>\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MONTH},?\s+(?:of\s+)?{_REL_YEAR}\b",
        _day_of_year,
    ),
    # seasons: "fall" only beside a year or last/this/next ("a fall last year" is a tumble)
    pattern(
        rf"\b{_LEAD}(?P<near>last|this|next|past)\s+(?P<s>spring|summer|autumn|fall|winter)\b",
        _season,
    ),
    pattern(
        rf"\b{_LEAD}(?P<s>spring|summer|autumn|fall|winter)\s+(?:of\s+)?(?P<y>(?:19|20)\d{{2}})\b",
        _season,
    ),
    pattern(rf"\b{_LEAD}(?P<s>spring|summer|autumn|winter)\s+(?:of\s+)?{_REL_YEAR}\b", _season),
    pattern(rf"\b{_LEAD}(?P<s>fall)\s+of\s+{_REL_YEAR}\b", _season),
    # parts of a year
    pattern(
        r"\b(?:(?:in|during|by|since|until|till|from|at|around)\s+)?"
        r"(?:the\s+)?(?P<part>early|late|mid|start|beginning|middle|end|first\s+half|"
        r"second\s+half)(?:\s+of)?[\s-]+"
        rf"(?:(?P<y>(?:19|20)\d{{2}})|{_REL_YEAR})\b",
        _year_part,
    ),
    pattern(r"\bearlier\s+this\s+(?P<unit>year|month)\b", _earlier_this),
    # holidays (core/temporal/holidays.py)
    pattern(
        r"\b(?:(?P<side>before|after)\s+)?(?:(?:on|at|over|for|during|since|until|by|around)\s+)?"
        rf"(?:(?P<near>last|this|next)\s+)?(?P<h>{_HOLIDAY})"
        rf"(?:,?\s+(?:of\s+)?(?:(?P<y>(?:19|20)\d{{2}})|{_REL_YEAR}))?(?![\w'\u2019])",
        _holiday,
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
