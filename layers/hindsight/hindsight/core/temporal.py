"""Time expressions in English and Chinese, resolved to absolute day ranges.

``resolve_time_expressions`` finds the times a memory's content talks about
("next week", "三天后", "on May 7") and resolves them against the moment the memory
happened. ``parse_query_time`` finds the time a question is about ("what did I do
last week?", "最近三天") for boosting and narrowing retrieval.

Conventions: day granularity in UTC, ranges are ``[start, end)``, weeks start on
Monday, the weekend is Saturday and Sunday. Ambiguous words are resolved this way:

* "next Friday" / "下周五" is the Friday of next week; "this Friday" / "on Friday" /
  "周五" is the coming Friday (today when today is Friday); "这周五" / "本周五" is the
  Friday of this week even when it has passed; "last Friday" is the most recent
  Friday before today and "上周五" the Friday of last week.
* A month and day without a year ("May 7", "5月7日") is taken in the reference year,
  unless that date lies more than half a year in the past: then it is next year's.
* "recently" / "最近" in a question is the last 7 days; "in the last N days" /
  "最近N天" is the N days before today plus today.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from hindsight.core.models import TimeRange, utc

__all__ = ["parse_query_time", "resolve_time_expressions"]

_Span = tuple[date, date]  # [start, end) in days
_Resolver = Callable[[re.Match[str], date], _Span | None]

# --- numbers -----------------------------------------------------------------

_ZH_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_EN_NUMBERS = {
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
_ZH_NUM = r"(?:\d{1,3}|[一二两三四五六七八九]?十[一二三四五六七八九]?|[一二两三四五六七八九])"
_EN_NUM = (
    r"(?:\d{1,3}|a couple of|a couple|couple of|an|a|one|two|three|four|five|six|seven|"
    r"eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|twenty|thirty)"
)


def _zh_number(text: str) -> int | None:
    """Arabic digits or Chinese numerals up to 99 (一, 两, 十一, 二十五)."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, units = text.partition("十")
        tens_value = _ZH_DIGITS.get(tens) if tens else 1
        units_value = _ZH_DIGITS.get(units) if units else 0
        if tens_value is None or units_value is None:
            return None
        return tens_value * 10 + units_value
    return _ZH_DIGITS.get(text)


def _en_number(text: str) -> int | None:
    lowered = " ".join(text.lower().split())
    if lowered.isdigit():
        return int(lowered)
    return _EN_NUMBERS.get(lowered)


# --- calendar helpers ----------------------------------------------------------


def _day(d: date) -> _Span:
    return d, d + timedelta(days=1)


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _week(d: date, offset: int) -> _Span:
    start = _monday(d) + timedelta(weeks=offset)
    return start, start + timedelta(days=7)


def _weekend(d: date, offset: int) -> _Span:
    start = _monday(d) + timedelta(weeks=offset, days=5)
    return start, start + timedelta(days=2)


def _add_months(d: date, months: int) -> date:
    index = d.year * 12 + (d.month - 1) + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(d.day, last))


def _month(year: int, month: int) -> _Span:
    start = date(year, month, 1)
    return start, _add_months(start, 1)


def _month_offset(d: date, offset: int) -> _Span:
    start = _add_months(date(d.year, d.month, 1), offset)
    return start, _add_months(start, 1)


def _year(year: int) -> _Span:
    return date(year, 1, 1), date(year + 1, 1, 1)


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _guess_year(ref: date, month: int, day: int) -> date | None:
    """A month/day without a year: this year's, or next year's if long past."""
    candidate = _safe_date(ref.year, month, day)
    if candidate is None:
        return _safe_date(ref.year + 1, month, day)
    if (ref - candidate).days > 183:
        return _safe_date(ref.year + 1, month, day) or candidate
    return candidate


def _guess_month_year(ref: date, month: int) -> int:
    first = date(ref.year, month, 1)
    return ref.year + 1 if (ref - _add_months(first, 1)).days > 183 else ref.year


def _shift(ref: date, amount: int, unit: str) -> date:
    if unit == "day":
        return ref + timedelta(days=amount)
    if unit == "week":
        return ref + timedelta(weeks=amount)
    if unit == "month":
        return _add_months(ref, amount)
    return _add_months(ref, 12 * amount)


# --- weekdays --------------------------------------------------------------------

_EN_WEEKDAYS = {
    "monday": 0,
    "tuesday": 1,
    "wednesday": 2,
    "thursday": 3,
    "friday": 4,
    "saturday": 5,
    "sunday": 6,
}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_EN_WEEKDAY = r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"


def _upcoming(ref: date, weekday: int) -> date:
    return ref + timedelta(days=(weekday - ref.weekday()) % 7)


def _previous(ref: date, weekday: int) -> date:
    back = (ref.weekday() - weekday) % 7 or 7
    return ref - timedelta(days=back)


def _in_week(ref: date, offset: int, weekday: int) -> date:
    return _monday(ref) + timedelta(weeks=offset, days=weekday)


# --- months ----------------------------------------------------------------------

_EN_MONTHS = {
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
_EN_MONTH = (
    r"(?P<mon>january|february|march|april|may|june|july|august|september|october|"
    r"november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
)
_EN_MONTH_FULL = (
    r"(?P<mon>january|february|march|april|may|june|july|august|september|october|"
    r"november|december)"
)
_ORD = r"(?:st|nd|rd|th)?"
_ZH_MONTH_NUM = r"(?:1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_ZH_DAY_NUM = r"(?:3[01]|[12]\d|0?[1-9]|三十一?|二?十[一二三四五六七八九]?|[一二三四五六七八九])"


# --- the pattern table -------------------------------------------------------------


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    resolve: _Resolver


def _p(pattern: str, resolve: _Resolver, flags: int = re.IGNORECASE) -> _Pattern:
    return _Pattern(re.compile(pattern, flags), resolve)


def _fixed(offset_days: int) -> _Resolver:
    return lambda m, ref: _day(ref + timedelta(days=offset_days))


def _week_of(offset: int) -> _Resolver:
    return lambda m, ref: _week(ref, offset)


def _weekend_of(offset: int) -> _Resolver:
    return lambda m, ref: _weekend(ref, offset)


def _month_of(offset: int) -> _Resolver:
    return lambda m, ref: _month_offset(ref, offset)


def _year_of(offset: int) -> _Resolver:
    return lambda m, ref: _year(ref.year + offset)


def _en_relative(direction: int) -> _Resolver:
    def resolve(m: re.Match[str], ref: date) -> _Span | None:
        amount = _en_number(m.group("n"))
        if amount is None:
            return None
        return _day(_shift(ref, direction * amount, m.group("unit").lower().rstrip("s")))

    return resolve


_ZH_UNITS = {
    "天": "day",
    "日": "day",
    "周": "week",
    "星期": "week",
    "礼拜": "week",
    "个星期": "week",
    "个礼拜": "week",
    "个月": "month",
    "月": "month",
    "年": "year",
}


def _zh_relative(direction: int) -> _Resolver:
    def resolve(m: re.Match[str], ref: date) -> _Span | None:
        amount = _zh_number(m.group("n"))
        if amount is None:
            return None
        return _day(_shift(ref, direction * amount, _ZH_UNITS[m.group("unit")]))

    return resolve


def _en_weekday_upcoming(m: re.Match[str], ref: date) -> _Span:
    return _day(_upcoming(ref, _EN_WEEKDAYS[m.group("wd").lower()]))


def _en_weekday_next(m: re.Match[str], ref: date) -> _Span:
    return _day(_in_week(ref, 1, _EN_WEEKDAYS[m.group("wd").lower()]))


def _en_weekday_last(m: re.Match[str], ref: date) -> _Span:
    return _day(_previous(ref, _EN_WEEKDAYS[m.group("wd").lower()]))


def _en_weekday_of_week(m: re.Match[str], ref: date) -> _Span:
    offset = {"next": 1, "last": -1, "this": 0}[m.group("rel").lower()]
    return _day(_in_week(ref, offset, _EN_WEEKDAYS[m.group("wd").lower()]))


def _en_month_day(m: re.Match[str], ref: date) -> _Span | None:
    month = _EN_MONTHS[m.group("mon").lower()]
    day = int(m.group("d"))
    year = m.groupdict().get("y")
    found = _safe_date(int(year), month, day) if year else _guess_year(ref, month, day)
    return None if found is None else _day(found)


def _verb_not_month(word: str) -> bool:
    """Lower-case "may" and "march" are verbs far more often than months."""
    return word in {"may", "march"}


def _en_month_only(m: re.Match[str], ref: date) -> _Span | None:
    if _verb_not_month(m.group("mon")):
        return None
    month = _EN_MONTHS[m.group("mon").lower()]
    year = m.groupdict().get("y")
    return _month(int(year) if year else _guess_month_year(ref, month), month)


def _en_month_relative(m: re.Match[str], ref: date) -> _Span | None:
    if _verb_not_month(m.group("mon")):
        return None
    month = _EN_MONTHS[m.group("mon").lower()]
    rel = m.group("rel").lower()
    year = ref.year + {"next": 1, "last": -1, "this": 0}[rel]
    if rel == "next" and month > ref.month:
        year = ref.year  # "next June" said in May is this June
    if rel == "last" and month < ref.month:
        year = ref.year
    return _month(year, month)


def _plausible_year(year: int) -> bool:
    return 1900 <= year <= 2200


def _iso_date(m: re.Match[str], ref: date) -> _Span | None:
    if not _plausible_year(int(m.group("y"))):
        return None
    found = _safe_date(int(m.group("y")), int(m.group("mo")), int(m.group("d")))
    return None if found is None else _day(found)


def _iso_month(m: re.Match[str], ref: date) -> _Span | None:
    month = int(m.group("mo"))
    if not _plausible_year(int(m.group("y"))) or not 1 <= month <= 12:
        return None
    return _month(int(m.group("y")), month)


def _zh_weekday(m: re.Match[str], ref: date) -> _Span:
    weekday = _ZH_WEEKDAYS[m.group("wd")]
    prefix = m.group("pre") or ""
    if prefix.startswith("下"):
        return _day(_in_week(ref, prefix.count("下"), weekday))
    if prefix.startswith("上"):
        return _day(_in_week(ref, -prefix.count("上"), weekday))
    if prefix:  # 这 / 这个 / 本
        return _day(_in_week(ref, 0, weekday))
    return _day(_upcoming(ref, weekday))


def _zh_week(m: re.Match[str], ref: date) -> _Span:
    prefix = m.group("pre")
    if "下" in prefix:
        return _week(ref, prefix.count("下"))
    if "上" in prefix:
        return _week(ref, -prefix.count("上"))
    return _week(ref, 0)


def _zh_weekend(m: re.Match[str], ref: date) -> _Span:
    prefix = m.group("pre") or ""
    if "下" in prefix:
        return _weekend(ref, prefix.count("下"))
    if "上" in prefix:
        return _weekend(ref, -prefix.count("上"))
    return _weekend(ref, 0)


def _zh_month_day(m: re.Match[str], ref: date) -> _Span | None:
    month = _zh_number(m.group("mo"))
    day = _zh_number(m.group("d"))
    if month is None or day is None:
        return None
    year = m.groupdict().get("y")
    found = _safe_date(int(year), month, day) if year else _guess_year(ref, month, day)
    return None if found is None else _day(found)


def _zh_month_only(m: re.Match[str], ref: date) -> _Span | None:
    month = _zh_number(m.group("mo"))
    if month is None or not 1 <= month <= 12:
        return None
    year = m.groupdict().get("y")
    return _month(int(year) if year else _guess_month_year(ref, month), month)


_NO_NUM_BEFORE = r"(?<![\d一二三四五六七八九十两零〇])"
_ZH_WEEK_WORD = r"(?:周|星期|礼拜)"
_ZH_WEEK_NOUN = r"(?:周|个?星期|个?礼拜)"

_EXPRESSIONS: list[_Pattern] = [
    # English, days
    _p(r"\bthe day after tomorrow\b", _fixed(2)),
    _p(r"\bthe day before yesterday\b", _fixed(-2)),
    _p(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", _fixed(0)),
    _p(r"\btomorrow\b", _fixed(1)),
    _p(r"\b(?:yesterday|last night)\b", _fixed(-1)),
    # English, weeks / weekends / months / years
    _p(r"\bthis week\b", _week_of(0)),
    _p(r"\bnext week\b", _week_of(1)),
    _p(r"\blast week\b", _week_of(-1)),
    _p(r"\bthe week after next\b", _week_of(2)),
    _p(r"\b(?:this|the) weekend\b", _weekend_of(0)),
    _p(r"\bnext weekend\b", _weekend_of(1)),
    _p(r"\blast weekend\b", _weekend_of(-1)),
    _p(r"\bthis month\b", _month_of(0)),
    _p(r"\bnext month\b", _month_of(1)),
    _p(r"\blast month\b", _month_of(-1)),
    _p(r"\bthis year\b", _year_of(0)),
    _p(r"\bnext year\b", _year_of(1)),
    _p(r"\blast year\b", _year_of(-1)),
    # English, weekdays
    _p(rf"\b{_EN_WEEKDAY}\s+(?:of\s+)?(?P<rel>next|last|this)\s+week\b", _en_weekday_of_week),
    _p(rf"\bnext\s+{_EN_WEEKDAY}\b", _en_weekday_next),
    _p(rf"\blast\s+{_EN_WEEKDAY}\b", _en_weekday_last),
    _p(rf"\b(?:(?:this|on|coming|this coming)\s+)?{_EN_WEEKDAY}\b", _en_weekday_upcoming),
    # English, relative amounts
    _p(
        rf"\bin\s+(?P<n>{_EN_NUM})\s+(?P<unit>days?|weeks?|months?|years?)(?:'?\s*time)?\b",
        _en_relative(1),
    ),
    _p(
        rf"\b(?P<n>{_EN_NUM})\s+(?P<unit>days?|weeks?|months?|years?)\s+(?:from now|later)\b",
        _en_relative(1),
    ),
    _p(rf"\b(?P<n>{_EN_NUM})\s+(?P<unit>days?|weeks?|months?|years?)\s+ago\b", _en_relative(-1)),
    # English, calendar dates
    _p(r"\b(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})\b", _iso_date),
    _p(r"\b(?P<y>\d{4})/(?P<mo>\d{1,2})/(?P<d>\d{1,2})\b", _iso_date),
    _p(r"\b(?P<y>\d{4})-(?P<mo>\d{2})\b(?![-/]\d)", _iso_month),
    _p(rf"\b{_EN_MONTH}\s+(?P<d>\d{{1,2}}){_ORD}\b(?:,?\s+(?P<y>\d{{4}})\b)?", _en_month_day),
    _p(
        rf"\b(?P<d>\d{{1,2}}){_ORD}\s+(?:of\s+)?{_EN_MONTH}\b(?:,?\s+(?P<y>\d{{4}})\b)?",
        _en_month_day,
    ),
    _p(rf"\b(?P<rel>next|last|this)\s+{_EN_MONTH_FULL}\b", _en_month_relative),
    _p(rf"\b{_EN_MONTH_FULL}\s+(?P<y>\d{{4}})\b", _en_month_only),
    _p(
        rf"\b(?:in|during|since|until|till|by|early|late|mid|of)[\s-]+{_EN_MONTH_FULL}\b",
        _en_month_only,
    ),
    # Chinese, days (大后天 before 后天, 大前天 before 前天: longest match wins anyway)
    _p(r"大后天", _fixed(3)),
    _p(r"大前天", _fixed(-3)),
    _p(r"(?<![之以然最落先背向])后天", _fixed(2)),
    _p(r"(?<![之以提面眼目当从])前天", _fixed(-2)),
    _p(r"今天|今日|今晚|今早|今夜|今儿", _fixed(0)),
    _p(r"明天|明日|明晚|明早|明儿", _fixed(1)),
    _p(r"昨天|昨日|昨晚|昨夜|昨儿", _fixed(-1)),
    # Chinese, weekdays and weeks
    _p(
        rf"(?P<pre>下下个?|上上个?|下个?|上个?|这个?|本)?{_ZH_WEEK_WORD}(?P<wd>[一二三四五六日天])"
        r"(?![次遍回个])",
        _zh_weekday,
    ),
    _p(r"(?P<pre>下下个?|上上个?|下个?|上个?|这个?|本)?周末", _zh_weekend),
    _p(rf"(?P<pre>下下个?|上上个?|下个?|上个?|这个?|本){_ZH_WEEK_NOUN}", _zh_week),
    # Chinese, months and years
    _p(r"本月|这个月|这月", _month_of(0)),
    _p(r"下个月|下月", _month_of(1)),
    _p(r"上个月|上月", _month_of(-1)),
    _p(r"今年", _year_of(0)),
    _p(r"明年", _year_of(1)),
    _p(r"(?<![之以然最落先背向])后年", _year_of(2)),
    _p(r"去年", _year_of(-1)),
    _p(r"(?<![之以提面眼目当从])前年", _year_of(-2)),
    # Chinese, relative amounts
    _p(
        rf"(?P<n>{_ZH_NUM})(?P<unit>天|日|周|个星期|个礼拜|星期|个月|年)(?:之后|以后|后)",
        _zh_relative(1),
    ),
    _p(
        rf"(?P<n>{_ZH_NUM})(?P<unit>天|日|周|个星期|个礼拜|星期|个月|年)(?:之前|以前|前)",
        _zh_relative(-1),
    ),
    _p(rf"过(?P<n>{_ZH_NUM})(?P<unit>天)", _zh_relative(1)),
    # Chinese, calendar dates
    _p(
        rf"{_NO_NUM_BEFORE}(?:(?P<y>\d{{4}})年)?(?P<mo>{_ZH_MONTH_NUM})月(?P<d>{_ZH_DAY_NUM})[日号]",
        _zh_month_day,
    ),
    _p(
        rf"{_NO_NUM_BEFORE}(?:(?P<y>\d{{4}})年)?(?P<mo>{_ZH_MONTH_NUM})月份?(?![\d一二三四五六七八九十])",
        _zh_month_only,
    ),
]


def _recent(days: int) -> _Resolver:
    return lambda m, ref: (ref - timedelta(days=days), ref + timedelta(days=1))


def _en_past(m: re.Match[str], ref: date) -> _Span | None:
    amount = _en_number(m.group("n")) if m.group("n") else 1
    if amount is None:
        return None
    unit = m.group("unit").lower().rstrip("s")
    return _shift(ref, -amount, unit), ref + timedelta(days=1)


def _zh_past(m: re.Match[str], ref: date) -> _Span | None:
    amount = _zh_number(m.group("n"))
    if amount is None:
        return None
    return _shift(ref, -amount, _ZH_UNITS[m.group("unit")]), ref + timedelta(days=1)


_QUERY_ONLY: list[_Pattern] = [
    _p(r"\b(?:recently|lately|these days|of late|the (?:past|last) few days)\b", _recent(7)),
    _p(
        rf"\b(?:(?:in|over|during|within|for)\s+)?(?:the\s+)?(?:past|last)\s+(?P<n>{_EN_NUM})\s+"
        r"(?P<unit>days|weeks|months|years|day|week|month|year)\b",
        _en_past,
    ),
    _p(
        r"\b(?:in|over|during|within)\s+the\s+(?:past|last)\s+(?P<n>)(?P<unit>day|week|month|year)\b",
        _en_past,
    ),
    _p(r"\bthe past (?P<n>)(?P<unit>week|month|year)\b", _en_past),
    _p(r"最近|近来|近期|这几天|这些天|这阵子|这段时间", _recent(7)),
    _p(rf"(?:最近|过去|近|前)(?P<n>{_ZH_NUM})(?P<unit>天|周|个星期|个礼拜|个月|年)", _zh_past),
]


# --- scanning ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    span: _Span
    expression: str


def _scan(text: str, ref: date, patterns: list[_Pattern]) -> list[_Found]:
    candidates: list[_Found] = []
    for pattern in patterns:
        for match in pattern.regex.finditer(text):
            if match.end() == match.start():
                continue
            span = pattern.resolve(match, ref)
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
