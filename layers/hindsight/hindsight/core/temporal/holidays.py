"""Holidays a question or a memory dates itself by ("last Christmas", "去年国庆", "过年那阵").

A holiday is a rule for its first day in a given year (a fixed date, the nth weekday of a
month, Easter, or a day of the Chinese lunar calendar) and how many days it lasts. Its span
is those days and two more: what happened at a holiday is often told a day or two after
("back from the coast", stored on the 27th). Which year's holiday is meant follows the other
expressions: a named year (2024, 去年, "last year") picks that year's; "last"/"this"/"next"
the latest one begun before the reference, this year's, the first one after; none the
nearest (the one under way, else the nearer of the last and the next). "Before"/"after"
(之前/之后) a holiday is the three weeks before its first day or after it.

Mother's and Father's Day are the US (and Chinese) ones, the second Sunday of May and the
third of June; Thanksgiving the US one. The lunar dates come from ``lunar_python`` (MIT).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from hindsight.core.temporal.days import Span

AFTER_DAYS = 2  # a holiday's span runs this many days past its last day
AROUND_DAYS = 21  # "before"/"after" a holiday: this many days on that side of it

FirstDay = Callable[[int], date | None]


def on(month: int, day: int) -> FirstDay:
    return lambda year: date(year, month, day)


def nth_weekday(month: int, weekday: int, n: int) -> FirstDay:
    """The ``n``th ``weekday`` (0 is Monday) of ``month``; ``n`` -1 is the last."""

    def first(year: int) -> date:
        if n > 0:
            start = date(year, month, 1)
            return start + timedelta(days=(weekday - start.weekday()) % 7 + 7 * (n - 1))
        end = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
        return end - timedelta(days=(end.weekday() - weekday) % 7)

    return first


def easter(year: int) -> date:
    """Western Easter Sunday (the anonymous Gregorian computus)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = divmod(b, 4)
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    ell = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * ell) // 451
    month, day = divmod(h + ell - 7 * m + 114, 31)
    return date(year, month, day + 1)


def lunar(month: int, day: int, shift: int = 0) -> FirstDay:
    """A day of the Chinese lunar calendar in the lunar year that starts in ``year``."""
    return lambda year: _lunar_day(year, month, day, shift)


@functools.lru_cache(maxsize=1024)
def _lunar_day(year: int, month: int, day: int, shift: int) -> date | None:
    from lunar_python import Lunar  # imported on first use: 14 ms nobody else pays

    try:
        solar = Lunar.fromYmd(year, month, day).getSolar()
    except (ValueError, IndexError, KeyError):
        return None
    return date(solar.getYear(), solar.getMonth(), solar.getDay()) + timedelta(days=shift)


@dataclass(frozen=True)
class Holiday:
    first: FirstDay
    days: int = 1

    def span(self, year: int) -> Span | None:
        if not 1900 <= year <= 2099:
            return None
        start = self.first(year)
        if start is None:
            return None
        return start, start + timedelta(days=self.days + AFTER_DAYS)


def holiday_span(
    holiday: Holiday, ref: date, year: int | None, near: int | None, side: int = 0
) -> Span | None:
    """The span of ``holiday`` meant at ``ref``; ``side`` -1 / 1 for before / after it."""
    if year is not None or near == 0:
        found = holiday.span(ref.year if year is None else year)
    else:
        spans = [s for y in range(ref.year - 1, ref.year + 2) if (s := holiday.span(y))]
        found = _pick(spans, ref, near) if spans else None
    if found is None or side == 0:
        return found
    start = found[0]
    if side < 0:
        return start - timedelta(days=AROUND_DAYS), start
    return start, start + timedelta(days=AROUND_DAYS)


def _pick(spans: list[Span], ref: date, near: int | None) -> Span | None:
    if near is not None and near < 0:
        return max((s for s in spans if s[0] < ref), default=None, key=lambda s: s[0])
    if near is not None and near > 0:
        return min((s for s in spans if s[0] > ref), default=None, key=lambda s: s[0])
    under_way = [s for s in spans if s[0] <= ref < s[1]]
    if under_way:
        return under_way[0]
    return min(spans, key=lambda s: (min(abs((s[0] - ref).days), abs((s[1] - ref).days)), s[0]))


CHRISTMAS = Holiday(on(12, 25))
THANKSGIVING = Holiday(nth_weekday(11, 3, 4))
EASTER = Holiday(easter)
HALLOWEEN = Holiday(on(10, 31))
MOTHERS_DAY = Holiday(nth_weekday(5, 6, 2))
FATHERS_DAY = Holiday(nth_weekday(6, 6, 3))
VALENTINES = Holiday(on(2, 14))
NEW_YEARS_DAY = Holiday(on(1, 1))

ENGLISH_HOLIDAYS: dict[str, Holiday] = {
    "christmas eve": Holiday(on(12, 24)),
    "christmas day": CHRISTMAS,
    "christmas": CHRISTMAS,
    "xmas": CHRISTMAS,
    "boxing day": Holiday(on(12, 26)),
    "new year's eve": Holiday(on(12, 31)),
    "new years eve": Holiday(on(12, 31)),
    "new year's day": NEW_YEARS_DAY,
    "new year's": NEW_YEARS_DAY,
    "valentine's day": VALENTINES,
    "valentine's": VALENTINES,
    "valentines day": VALENTINES,
    "halloween": HALLOWEEN,
    "thanksgiving": THANKSGIVING,
    "easter": EASTER,
    "mother's day": MOTHERS_DAY,
    "mothers day": MOTHERS_DAY,
    "father's day": FATHERS_DAY,
    "fathers day": FATHERS_DAY,
    "independence day": Holiday(on(7, 4)),
    "fourth of july": Holiday(on(7, 4)),
    "memorial day": Holiday(nth_weekday(5, 0, -1)),
    "labor day": Holiday(nth_weekday(9, 0, 1)),
    "labour day": Holiday(nth_weekday(9, 0, 1)),
    # the Christmas and New Year holidays
    "the holidays": Holiday(on(12, 20), days=15),
    "the christmas holidays": Holiday(on(12, 20), days=15),
    "the festive season": Holiday(on(12, 20), days=15),
}

SPRING_FESTIVAL = Holiday(lunar(1, 1, shift=-7), days=15)  # home the week before, back after
NATIONAL_DAY = Holiday(on(10, 1), days=7)
MAY_DAY = Holiday(on(5, 1), days=5)

CHINESE_HOLIDAYS: dict[str, Holiday] = {
    "春节": SPRING_FESTIVAL,
    "过年": SPRING_FESTIVAL,
    "新春": SPRING_FESTIVAL,
    "大年初一": Holiday(lunar(1, 1)),
    "除夕": Holiday(lunar(1, 1, shift=-1)),
    "年三十": Holiday(lunar(1, 1, shift=-1)),
    "元宵": Holiday(lunar(1, 15)),
    "端午": Holiday(lunar(5, 5), days=3),
    "七夕": Holiday(lunar(7, 7)),
    "中秋": Holiday(lunar(8, 15), days=3),
    "重阳": Holiday(lunar(9, 9)),
    "元旦": Holiday(on(1, 1), days=3),
    "情人节": VALENTINES,
    "妇女节": Holiday(on(3, 8)),
    "清明": Holiday(on(4, 4), days=3),
    "劳动节": MAY_DAY,
    "五一": MAY_DAY,
    "母亲节": MOTHERS_DAY,
    "父亲节": FATHERS_DAY,
    "儿童节": Holiday(on(6, 1)),
    "六一": Holiday(on(6, 1)),
    "国庆": NATIONAL_DAY,
    "十一假期": NATIONAL_DAY,
    "十一长假": NATIONAL_DAY,
    "十一黄金周": NATIONAL_DAY,
    "双十一": Holiday(on(11, 11)),
    "平安夜": Holiday(on(12, 24)),
    "圣诞": CHRISTMAS,
    "跨年": Holiday(on(12, 31), days=2),
    "感恩节": THANKSGIVING,
    "复活节": EASTER,
    "万圣节": HALLOWEEN,
}
