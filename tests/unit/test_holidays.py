"""Holidays as time expressions (core/temporal/holidays.py), in English and Chinese."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from hindsight.core.temporal import parse_query_time, resolve_time_expressions
from hindsight.core.temporal.holidays import easter, nth_weekday

FIRST_OF_MARCH = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BOXING_DAY = datetime(2026, 12, 26, 9, 0, tzinfo=UTC)


def spans(text: str, reference: datetime = FIRST_OF_MARCH) -> list[tuple[str, str]]:
    return [
        (r.start.date().isoformat(), r.end.date().isoformat())
        for r in resolve_time_expressions(text, reference)
    ]


@pytest.mark.parametrize(
    ("year", "expected"),
    [(2024, date(2024, 3, 31)), (2025, date(2025, 4, 20)), (2026, date(2026, 4, 5))],
)
def test_easter_sunday(year: int, expected: date) -> None:
    assert easter(year) == expected


def test_nth_and_last_weekday_of_a_month() -> None:
    assert nth_weekday(11, 3, 4)(2025) == date(2025, 11, 27)  # Thanksgiving
    assert nth_weekday(5, 6, 2)(2026) == date(2026, 5, 10)  # Mother's Day
    assert nth_weekday(5, 0, -1)(2026) == date(2026, 5, 25)  # Memorial Day
    assert nth_weekday(12, 0, -1)(2026) == date(2026, 12, 28)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the day and the two after it: what happened is often told a day or two later
        ("last Christmas", ("2025-12-25", "2025-12-28")),
        ("at Christmas", ("2025-12-25", "2025-12-28")),  # the nearer: 2 months back
        ("Christmas 2024", ("2024-12-25", "2024-12-28")),
        ("Christmas Eve last year", ("2025-12-24", "2025-12-27")),
        ("Valentine’s Day", ("2026-02-14", "2026-02-17")),
        ("Thanksgiving this year", ("2026-11-26", "2026-11-29")),
        ("on Mother's Day", ("2026-05-10", "2026-05-13")),
        ("Easter last year", ("2025-04-20", "2025-04-23")),
        ("before Easter", ("2026-03-15", "2026-04-05")),  # the three weeks before
        ("over the holidays", ("2025-12-20", "2026-01-06")),
        ("New Year's Eve", ("2025-12-31", "2026-01-03")),
        # the lunar calendar: Spring Festival 2025 was 29 January, 2026 17 February; the
        # festival's span starts the week before (home for it) and runs a week after
        ("去年春节", ("2025-01-22", "2025-02-08")),
        ("今年过年", ("2026-02-10", "2026-02-27")),
        ("春节前", ("2026-01-20", "2026-02-10")),
        ("2024年中秋节", ("2024-09-17", "2024-09-22")),
        ("明年端午", ("2027-06-09", "2027-06-14")),
        ("除夕", ("2026-02-16", "2026-02-19")),
        ("去年五一", ("2025-05-01", "2025-05-08")),
        ("国庆节后", ("2025-10-01", "2025-10-22")),
        ("十一黄金周", ("2025-10-01", "2025-10-10")),
        ("去年圣诞节", ("2025-12-25", "2025-12-28")),
    ],
)
def test_holidays(text: str, expected: tuple[str, str]) -> None:
    assert spans(text) == [expected]


def test_the_holiday_under_way_is_the_one_meant() -> None:
    assert spans("Christmas", BOXING_DAY) == [("2026-12-25", "2026-12-28")]
    assert spans("last Christmas", BOXING_DAY) == [("2026-12-25", "2026-12-28")]
    assert spans("next Christmas", BOXING_DAY) == [("2027-12-25", "2027-12-28")]


@pytest.mark.parametrize(
    "text", ["我住在五一路", "第十五一次", "Easterly winds", "a christmassy jumper", "二〇五一年"]
)
def test_words_that_are_not_holidays(text: str) -> None:
    assert spans(text) == []


def test_a_question_naming_two_holidays_covers_both() -> None:
    found = parse_query_time("去年五一和国庆我分别去了哪里玩？", FIRST_OF_MARCH)
    assert found is not None
    assert (found.start.date(), found.end.date()) == (date(2025, 5, 1), date(2025, 10, 10))
