"""Chinese time expressions: numerals, calendar words, patterns and their resolvers."""

from __future__ import annotations

import re
from datetime import date, timedelta

from hindsight.core.temporal.days import (
    Span,
    add_months,
    day_span,
    guess_month_year,
    guess_year,
    in_week,
    month_span,
    safe_date,
    season_span,
    shift,
    upcoming,
    week_span,
    weekend_span,
    year_part_span,
)
from hindsight.core.temporal.holidays import CHINESE_HOLIDAYS, holiday_span
from hindsight.core.temporal.patterns import (
    Pattern,
    Resolver,
    fixed,
    month_of,
    pattern,
    recent,
    year_of,
)

# --- words ---------------------------------------------------------------------------------

_DIGITS = {
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
_NUM = r"(?:\d{1,3}|[一二两三四五六七八九]?十[一二三四五六七八九]?|[一二两三四五六七八九])"
_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_MONTH_NUM = r"(?:1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_DAY_NUM = r"(?:3[01]|[12]\d|0?[1-9]|三十一?|二?十[一二三四五六七八九]?|[一二三四五六七八九])"
_UNITS = {
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
_NO_NUM_BEFORE = r"(?<![\d一二三四五六七八九十两零〇])"
# a year named by its digits (2025年) or relatively (去年); the guard keeps 之后年 / 以前年 out
_YEARS = {"今年": 0, "去年": -1, "前年": -2, "明年": 1, "后年": 2}
_YEAR = r"(?:(?P<y>\d{4})年|(?<![之以然最落先背向提面眼目当从])(?P<ry>今年|去年|前年|明年|后年)的?)"
_HOLIDAY = "|".join(sorted(CHINESE_HOLIDAYS, key=len, reverse=True))
_SEASONS = {"春": "spring", "夏": "summer", "秋": "autumn", "冬": "winter"}
_PARTS = {
    "年初": "early",
    "初": "early",
    "年中": "mid",
    "年底": "late",
    "年末": "late",
    "底": "late",
    "末": "late",
    "上半年": "first half",
    "下半年": "second half",
}
_WEEK_WORD = r"(?:周|星期|礼拜)"
_WEEK_NOUN = r"(?:周|个?星期|个?礼拜)"


def _number(text: str) -> int | None:
    """Arabic digits or Chinese numerals up to 99 (一, 两, 十一, 二十五)."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, units = text.partition("十")
        tens_value = _DIGITS.get(tens) if tens else 1
        units_value = _DIGITS.get(units) if units else 0
        if tens_value is None or units_value is None:
            return None
        return tens_value * 10 + units_value
    return _DIGITS.get(text)


# --- resolvers -------------------------------------------------------------------------------


def _relative(direction: int) -> Resolver:
    def resolve(m: re.Match[str], ref: date) -> Span | None:
        amount = _number(m.group("n"))
        if amount is None:
            return None
        return day_span(shift(ref, direction * amount, _UNITS[m.group("unit")]))

    return resolve


def _weekday(m: re.Match[str], ref: date) -> Span:
    weekday = _WEEKDAYS[m.group("wd")]
    prefix = m.group("pre") or ""
    if prefix.startswith("下"):
        return day_span(in_week(ref, prefix.count("下"), weekday))
    if prefix.startswith("上"):
        return day_span(in_week(ref, -prefix.count("上"), weekday))
    if prefix:  # 这 / 这个 / 本
        return day_span(in_week(ref, 0, weekday))
    return day_span(upcoming(ref, weekday))


def _week(m: re.Match[str], ref: date) -> Span:
    prefix = m.group("pre")
    if "下" in prefix:
        return week_span(ref, prefix.count("下"))
    if "上" in prefix:
        return week_span(ref, -prefix.count("上"))
    return week_span(ref, 0)


def _weekend(m: re.Match[str], ref: date) -> Span:
    prefix = m.group("pre") or ""
    if "下" in prefix:
        return weekend_span(ref, prefix.count("下"))
    if "上" in prefix:
        return weekend_span(ref, -prefix.count("上"))
    return weekend_span(ref, 0)


def _year(m: re.Match[str], ref: date) -> int | None:
    """The year a match names (2025年, 去年), or None if it names none."""
    groups = m.groupdict()
    if groups.get("y"):
        return int(groups["y"])
    return ref.year + _YEARS[groups["ry"]] if groups.get("ry") else None


def _month_day(m: re.Match[str], ref: date) -> Span | None:
    month = _number(m.group("mo"))
    day = _number(m.group("d"))
    if month is None or day is None:
        return None
    year = _year(m, ref)
    found = safe_date(year, month, day) if year else guess_year(ref, month, day)
    return None if found is None else day_span(found)


def _month_only(m: re.Match[str], ref: date) -> Span | None:
    month = _number(m.group("mo"))
    if month is None or not 1 <= month <= 12:
        return None
    year = _year(m, ref)
    return month_span(year or guess_month_year(ref, month), month)


def _season(m: re.Match[str], ref: date) -> Span | None:
    """去年夏天, 2024年冬季 (meteorological seasons), 今年暑假 (July, August), 寒假 (January,
    February)."""
    year = _year(m, ref)
    if year is None:
        return None
    word = m.group("s")
    if word in ("暑假", "寒假"):
        start = date(year, 7 if word == "暑假" else 1, 1)
        return start, add_months(start, 2)
    return season_span(year, _SEASONS[word[0]])


def _holiday(m: re.Match[str], ref: date) -> Span | None:
    """去年国庆, 过年那阵, 春节前, 2024年中秋节 (core/temporal/holidays.py)."""
    side = m.group("side") or ""
    direction = -1 if "前" in side else 1 if side else 0
    return holiday_span(CHINESE_HOLIDAYS[m.group("h")], ref, _year(m, ref), None, direction)


def _year_part(m: re.Match[str], ref: date) -> Span | None:
    """去年年底, 今年初, 2025年上半年."""
    year = _year(m, ref)
    return None if year is None else year_part_span(year, _PARTS[m.group("part")])


def _past(m: re.Match[str], ref: date) -> Span | None:
    amount = _number(m.group("n"))
    if amount is None:
        return None
    return shift(ref, -amount, _UNITS[m.group("unit")]), ref + timedelta(days=1)


# --- the patterns ----------------------------------------------------------------------------

CHINESE_EXPRESSIONS: list[Pattern] = [
    # days (大后天 before 后天, 大前天 before 前天: longest match wins anyway)
    pattern(r"大后天", fixed(3)),
    pattern(r"大前天", fixed(-3)),
    pattern(r"(?<![之以然最落先背向])后天", fixed(2)),
    pattern(r"(?<![之以提面眼目当从])前天", fixed(-2)),
    pattern(r"今天|今日|今晚|今早|今夜|今儿", fixed(0)),
    pattern(r"明天|明日|明晚|明早|明儿", fixed(1)),
    pattern(r"昨天|昨日|昨晚|昨夜|昨儿", fixed(-1)),
    # weekdays and weeks
    pattern(
        rf"(?P<pre>下下个?|上上个?|下个?|上个?|这个?|本)?{_WEEK_WORD}(?P<wd>[一二三四五六日天])"
        r"(?![次遍回个])",
        _weekday,
    ),
    pattern(r"(?P<pre>下下个?|上上个?|下个?|上个?|这个?|本)?周末", _weekend),
    pattern(rf"(?P<pre>下下个?|上上个?|下个?|上个?|这个?|本){_WEEK_NOUN}", _week),
    # months and years
    pattern(r"本月|这个月|这月", month_of(0)),
    pattern(r"下个月|下月", month_of(1)),
    pattern(r"上个月|上月", month_of(-1)),
    pattern(r"今年", year_of(0)),
    pattern(r"明年", year_of(1)),
    pattern(r"(?<![之以然最落先背向])后年", year_of(2)),
    pattern(r"去年", year_of(-1)),
    pattern(r"(?<![之以提面眼目当从])前年", year_of(-2)),
    # relative amounts
    pattern(
        rf"(?P<n>{_NUM})(?P<unit>天|日|周|个星期|个礼拜|星期|个月|年)(?:之后|以后|后)",
        _relative(1),
    ),
    pattern(
        rf"(?P<n>{_NUM})(?P<unit>天|日|周|个星期|个礼拜|星期|个月|年)(?:之前|以前|前)",
        _relative(-1),
    ),
    pattern(rf"过(?P<n>{_NUM})(?P<unit>天)", _relative(1)),
    # calendar dates
    pattern(
        rf"{_NO_NUM_BEFORE}{_YEAR}?(?P<mo>{_MONTH_NUM})月(?P<d>{_DAY_NUM})[日号]",
        _month_day,
    ),
    pattern(
        rf"{_NO_NUM_BEFORE}{_YEAR}?(?P<mo>{_MONTH_NUM})月份?(?![\d一二三四五六七八九十])",
        _month_only,
    ),
    # seasons and parts of a named year (a bare 夏天 is as often "in summers")
    pattern(rf"{_YEAR}(?P<s>[春夏秋冬](?:天|季)|暑假|寒假)", _season),
    pattern(rf"{_YEAR}(?P<part>年初|年中|年底|年末|上半年|下半年|初|底|末)", _year_part),
    # holidays; 五一 and 六一 not inside a number or a street's name (五一路)
    pattern(
        rf"{_YEAR}?(?<![\d〇零一二三四五六七八九十两])(?P<h>{_HOLIDAY})(?![\d〇零一二三四五六七八九十路街号])"
        r"(?:节|假期|小长假|长假|黄金周)?(?P<side>之前|以前|前夕|前|之后|以后|后)?",
        _holiday,
    ),
]
"""Times a text talks about, in Chinese."""

CHINESE_QUERY_ONLY: list[Pattern] = [
    pattern(r"最近|近来|近期|这几天|这些天|这阵子|这段时间", recent(7)),
    pattern(rf"(?:最近|过去|近|前)(?P<n>{_NUM})(?P<unit>天|周|个星期|个礼拜|个月|年)", _past),
]
"""Spans of the recent past a question may ask about, in Chinese."""
