"""Time expressions resolved against fixed reference dates (English and Chinese)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from hindsight.core.temporal import parse_query_time, resolve_time_expressions

WEDNESDAY = datetime(2026, 6, 3, 15, 30, tzinfo=UTC)
SUNDAY = datetime(2026, 6, 7, 23, 0, tzinfo=UTC)
MONDAY = datetime(2026, 6, 8, 0, 5, tzinfo=UTC)
NEW_YEARS_EVE = datetime(2026, 12, 31, 12, 0, tzinfo=UTC)
FIRST_OF_MARCH = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def spans(text: str, reference: datetime) -> list[tuple[str, str]]:
    return [
        (r.start.date().isoformat(), r.end.date().isoformat())
        for r in resolve_time_expressions(text, reference)
    ]


def one(text: str, reference: datetime) -> tuple[str, str]:
    found = spans(text, reference)
    assert len(found) == 1, (text, found)
    return found[0]


def day(iso: str) -> tuple[str, str]:
    start = date.fromisoformat(iso)
    return iso, (start + timedelta(days=1)).isoformat()


# --- the issue's examples ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm going to Beijing next week", ("2026-06-08", "2026-06-15")),
        ("tomorrow I have a dentist appointment", day("2026-06-04")),
        ("我下周要去北京出差", ("2026-06-08", "2026-06-15")),
        ("我明天要开会", day("2026-06-04")),
        ("三天后交报告", day("2026-06-06")),
    ],
)
def test_issue_examples(text: str, expected: tuple[str, str]) -> None:
    assert one(text, WEDNESDAY) == expected


def test_ranges_are_aware_utc_day_boundaries_with_the_words_used() -> None:
    (found,) = resolve_time_expressions("see you tomorrow", WEDNESDAY)
    assert found.start == datetime(2026, 6, 4, tzinfo=UTC)
    assert found.end == datetime(2026, 6, 5, tzinfo=UTC)
    assert found.expression == "tomorrow"


def test_reference_in_another_offset_is_resolved_in_utc() -> None:
    # 2026-06-04 01:00 in UTC+8 is still 2026-06-03 in UTC.
    reference = datetime(2026, 6, 4, 1, 0, tzinfo=timezone(timedelta(hours=8)))
    assert one("tomorrow", reference) == day("2026-06-04")


# --- English ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("today", day("2026-06-03")),
        ("tonight", day("2026-06-03")),
        ("this morning", day("2026-06-03")),
        ("yesterday", day("2026-06-02")),
        ("last night", day("2026-06-02")),
        ("the day after tomorrow", day("2026-06-05")),
        ("the day before yesterday", day("2026-06-01")),
        ("this week", ("2026-06-01", "2026-06-08")),
        ("last week", ("2026-05-25", "2026-06-01")),
        ("this month", ("2026-06-01", "2026-07-01")),
        ("next month", ("2026-07-01", "2026-08-01")),
        ("last month", ("2026-05-01", "2026-06-01")),
        ("this year", ("2026-01-01", "2027-01-01")),
        ("next year", ("2027-01-01", "2028-01-01")),
        ("last year", ("2025-01-01", "2026-01-01")),
        ("next Monday", day("2026-06-08")),
        ("next Friday", day("2026-06-12")),
        ("on Friday", day("2026-06-05")),
        ("this Friday", day("2026-06-05")),
        ("on Wednesday", day("2026-06-03")),
        ("last Saturday", day("2026-05-30")),
        ("last Wednesday", day("2026-05-27")),
        ("Tuesday next week", day("2026-06-09")),
        ("this weekend", ("2026-06-06", "2026-06-08")),
        ("next weekend", ("2026-06-13", "2026-06-15")),
        ("in 3 days", day("2026-06-06")),
        ("in two weeks", day("2026-06-17")),
        ("in a month", day("2026-07-03")),
        ("5 days ago", day("2026-05-29")),
        ("three weeks ago", day("2026-05-13")),
        ("on May 7", day("2026-05-07")),
        ("May 7th, 2027", day("2027-05-07")),
        ("7 May", day("2026-05-07")),
        ("the 9th of July", day("2026-07-09")),
        ("in June", ("2026-06-01", "2026-07-01")),
        ("in September", ("2026-09-01", "2026-10-01")),
        ("2026-05-07", day("2026-05-07")),
        ("2027/01/15", day("2027-01-15")),
    ],
)
def test_english_expressions(text: str, expected: tuple[str, str]) -> None:
    assert one(text, WEDNESDAY) == expected


def test_a_date_without_a_year_is_its_nearest_occurrence() -> None:
    # On New Year's Eve "on March 3" is the coming March, "on December 2" this one.
    assert one("on March 3", NEW_YEARS_EVE) == day("2027-03-03")
    assert one("on December 2", NEW_YEARS_EVE) == day("2026-12-02")
    # On 1 March the last New Year's Eve is two months back, the next ten months on.
    assert one("on December 31st", FIRST_OF_MARCH) == day("2025-12-31")
    assert one("十二月三十一号", FIRST_OF_MARCH) == day("2025-12-31")
    assert one("in November", FIRST_OF_MARCH) == ("2025-11-01", "2025-12-01")
    assert one("in May", FIRST_OF_MARCH) == ("2026-05-01", "2026-06-01")


@pytest.mark.parametrize(
    "text",
    [
        "This may be fine",
        "we march on",
        "nothing to see here",
        "Fridays are busy",  # a habit, not one Friday
        "call 555-1234 or 1234-56",
        "2026-13-45",
    ],
)
def test_english_non_expressions(text: str) -> None:
    assert spans(text, WEDNESDAY) == []


# --- Chinese ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("今天", day("2026-06-03")),
        ("今晚吃火锅", day("2026-06-03")),
        ("明天", day("2026-06-04")),
        ("后天", day("2026-06-05")),
        ("大后天", day("2026-06-06")),
        ("昨天", day("2026-06-02")),
        ("前天", day("2026-06-01")),
        ("本周", ("2026-06-01", "2026-06-08")),
        ("这周", ("2026-06-01", "2026-06-08")),
        ("这个星期", ("2026-06-01", "2026-06-08")),
        ("下周", ("2026-06-08", "2026-06-15")),
        ("下个星期", ("2026-06-08", "2026-06-15")),
        ("下礼拜", ("2026-06-08", "2026-06-15")),
        ("上周", ("2026-05-25", "2026-06-01")),
        ("上个星期", ("2026-05-25", "2026-06-01")),
        ("下下周", ("2026-06-15", "2026-06-22")),
        ("周一", day("2026-06-08")),
        ("周三", day("2026-06-03")),
        ("星期五", day("2026-06-05")),
        ("礼拜天", day("2026-06-07")),
        ("下周一", day("2026-06-08")),
        ("下个星期天", day("2026-06-14")),
        ("上周五", day("2026-05-29")),
        ("这周一", day("2026-06-01")),
        ("本周日", day("2026-06-07")),
        ("这个周末", ("2026-06-06", "2026-06-08")),
        ("周末", ("2026-06-06", "2026-06-08")),
        ("下周末", ("2026-06-13", "2026-06-15")),
        ("本月", ("2026-06-01", "2026-07-01")),
        ("这个月", ("2026-06-01", "2026-07-01")),
        ("下个月", ("2026-07-01", "2026-08-01")),
        ("上个月", ("2026-05-01", "2026-06-01")),
        ("今年", ("2026-01-01", "2027-01-01")),
        ("明年", ("2027-01-01", "2028-01-01")),
        ("去年", ("2025-01-01", "2026-01-01")),
        ("3天后", day("2026-06-06")),
        ("三天后", day("2026-06-06")),
        ("两天之后", day("2026-06-05")),
        ("十天以后", day("2026-06-13")),
        ("十一天后", day("2026-06-14")),
        ("二十五天后", day("2026-06-28")),
        ("五天前", day("2026-05-29")),
        ("两周后", day("2026-06-17")),
        ("一个星期后", day("2026-06-10")),
        ("三个月后", day("2026-09-03")),
        ("2026年5月7日", day("2026-05-07")),
        ("5月7号", day("2026-05-07")),
        ("五月七日", day("2026-05-07")),
        ("十二月二十五号", day("2025-12-25")),  # the nearer one: 160 days back, not 205 on
        ("八月份", ("2026-08-01", "2026-09-01")),
    ],
)
def test_chinese_expressions(text: str, expected: tuple[str, str]) -> None:
    assert one(text, WEDNESDAY) == expected


@pytest.mark.parametrize(
    "text",
    ["吃完饭之后天就黑了", "每周一次", "13月", "我们以前年年都去", "一周"],
)
def test_chinese_non_expressions(text: str) -> None:
    assert spans(text, WEDNESDAY) == []


def test_number_before_day_words_is_not_read_twice() -> None:
    # "两天前" must not also yield "前天"; "三天后" must not also yield "后天".
    assert spans("两天前天气很好", WEDNESDAY) == [day("2026-06-01")]
    assert spans("三天后天晴", WEDNESDAY) == [day("2026-06-06")]


# --- week boundaries and rollovers --------------------------------------------------------


def test_reference_on_a_sunday_belongs_to_the_week_that_started_monday() -> None:
    assert one("this week", SUNDAY) == ("2026-06-01", "2026-06-08")
    assert one("next week", SUNDAY) == ("2026-06-08", "2026-06-15")
    assert one("下周", SUNDAY) == ("2026-06-08", "2026-06-15")
    assert one("last week", SUNDAY) == ("2026-05-25", "2026-06-01")
    assert one("this weekend", SUNDAY) == ("2026-06-06", "2026-06-08")
    assert one("next Monday", SUNDAY) == day("2026-06-08")
    assert one("tomorrow", SUNDAY) == day("2026-06-08")
    assert one("周日", SUNDAY) == day("2026-06-07")


def test_reference_on_a_monday_starts_a_new_week() -> None:
    assert one("this week", MONDAY) == ("2026-06-08", "2026-06-15")
    assert one("本周", MONDAY) == ("2026-06-08", "2026-06-15")
    assert one("last week", MONDAY) == ("2026-06-01", "2026-06-08")
    assert one("上周", MONDAY) == ("2026-06-01", "2026-06-08")
    assert one("yesterday", MONDAY) == day("2026-06-07")
    assert one("on Monday", MONDAY) == day("2026-06-08")
    assert one("last Monday", MONDAY) == day("2026-06-01")
    assert one("next Friday", MONDAY) == day("2026-06-19")


def test_month_and_year_rollover_on_new_years_eve() -> None:
    assert one("next month", NEW_YEARS_EVE) == ("2027-01-01", "2027-02-01")
    assert one("下个月", NEW_YEARS_EVE) == ("2027-01-01", "2027-02-01")
    assert one("tomorrow", NEW_YEARS_EVE) == day("2027-01-01")
    assert one("明年", NEW_YEARS_EVE) == ("2027-01-01", "2028-01-01")
    assert one("next week", NEW_YEARS_EVE) == ("2027-01-04", "2027-01-11")
    assert one("last month", datetime(2026, 1, 15, tzinfo=UTC)) == ("2025-12-01", "2026-01-01")


def test_adding_months_clamps_to_the_last_day() -> None:
    assert one("in 1 month", datetime(2026, 1, 31, tzinfo=UTC)) == day("2026-02-28")
    assert one("一个月后", datetime(2028, 1, 31, tzinfo=UTC)) == day("2028-02-29")


# --- several expressions ---------------------------------------------------------------


def test_several_expressions_in_order_of_appearance_without_duplicates() -> None:
    text = "Tomorrow I fly to Tokyo, back next week; tomorrow again? 明天 and 2026-06-04."
    found = resolve_time_expressions(text, WEDNESDAY)
    assert [(r.start.date().isoformat(), r.expression) for r in found] == [
        ("2026-06-04", "Tomorrow"),
        ("2026-06-08", "next week"),
    ]


def test_mixed_language_text() -> None:
    assert spans("下周一 meeting, then 周五 dinner", WEDNESDAY) == [
        day("2026-06-08"),
        day("2026-06-05"),
    ]


def test_empty_text() -> None:
    assert resolve_time_expressions("", WEDNESDAY) == []


# --- queries -----------------------------------------------------------------------------


def query(text: str, now: datetime = WEDNESDAY) -> tuple[str, str] | None:
    found = parse_query_time(text, now)
    return None if found is None else (found.start.date().isoformat(), found.end.date().isoformat())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("what did I do last week?", ("2026-05-25", "2026-06-01")),
        ("anything planned this week?", ("2026-06-01", "2026-06-08")),
        ("what happened yesterday", day("2026-06-02")),
        ("what's on today", day("2026-06-03")),
        ("what did I eat recently", ("2026-05-27", "2026-06-04")),
        ("how have I been lately", ("2026-05-27", "2026-06-04")),
        ("in the last 3 days", ("2026-05-31", "2026-06-04")),
        ("over the past 2 weeks", ("2026-05-20", "2026-06-04")),
        ("in the past week", ("2026-05-27", "2026-06-04")),
        ("what did I buy last month", ("2026-05-01", "2026-06-01")),
        ("expenses this month", ("2026-06-01", "2026-07-01")),
        ("what do I have next week", ("2026-06-08", "2026-06-15")),
        ("what happened on 2026-05-07", day("2026-05-07")),
        ("我最近吃了什么", ("2026-05-27", "2026-06-04")),
        ("最近三天", ("2026-05-31", "2026-06-04")),
        ("过去7天的会议", ("2026-05-27", "2026-06-04")),
        ("这周有什么安排", ("2026-06-01", "2026-06-08")),
        ("本周", ("2026-06-01", "2026-06-08")),
        ("上周做了什么", ("2026-05-25", "2026-06-01")),
        ("昨天", day("2026-06-02")),
        ("今天", day("2026-06-03")),
        ("上个月花了多少钱", ("2026-05-01", "2026-06-01")),
        ("这个月", ("2026-06-01", "2026-07-01")),
        ("下周要做什么", ("2026-06-08", "2026-06-15")),
    ],
)
def test_query_time(text: str, expected: tuple[str, str]) -> None:
    assert query(text) == expected


def test_query_without_time_is_none() -> None:
    assert query("what am I allergic to?") is None
    assert query("我喜欢吃什么") is None


def test_query_with_two_times_is_merged_into_one_range() -> None:
    assert query("what did I do yesterday and today") == ("2026-06-02", "2026-06-04")
    found = parse_query_time("昨天和今天", WEDNESDAY)
    assert found is not None
    assert "昨天" in found.expression and "今天" in found.expression


def test_query_last_week_on_a_monday() -> None:
    assert query("上周", MONDAY) == ("2026-06-01", "2026-06-08")
    assert query("recently", MONDAY) == ("2026-06-01", "2026-06-09")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the year after "in <month>" is part of the expression: "in October" alone, the
        # longer match at the earlier position, used to win and take the coming October
        ("what did she do in October 2023?", ("2023-10-01", "2023-11-01")),
        ("in May, 2021", ("2021-05-01", "2021-06-01")),
        ("during March 2019", ("2019-03-01", "2019-04-01")),
        ("what happened in 2022?", ("2022-01-01", "2023-01-01")),
        ("back in 1998", ("1998-01-01", "1999-01-01")),
    ],
)
def test_query_names_a_year(text: str, expected: tuple[str, str]) -> None:
    assert query(text) == expected


@pytest.mark.parametrize("text", ["walked in 1500 steps", "in 2022.5 cases", "in 2022,5"])
def test_numbers_after_in_are_not_years(text: str) -> None:
    assert query(text) is None


def test_a_memory_dated_in_a_named_month_and_year() -> None:
    assert spans("I moved there in October 2021", WEDNESDAY) == [("2021-10-01", "2021-11-01")]


# --- a month, day, season or part of a year named with its year ----------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a month or day of a relatively named year is that year's, not the union of "last
        # year" and the nearest such month (the union would be 2025-01-01 to 2026-06-01)
        ("去年五月", ("2025-05-01", "2025-06-01")),
        ("去年七月带孩子去医院查了什么", ("2025-07-01", "2025-08-01")),
        ("前年的12月", ("2024-12-01", "2025-01-01")),
        ("去年的五月三号", day("2025-05-03")),
        ("明年3月8日", day("2027-03-08")),
        ("what did we eat in February of last year", ("2025-02-01", "2025-03-01")),
        ("May last year", ("2025-05-01", "2025-06-01")),
        ("in March this year", ("2026-03-01", "2026-04-01")),
        ("on December 31st last year", day("2025-12-31")),
        ("the 4th of July next year", day("2027-07-04")),
        # seasons (meteorological: a year's winter is its December and the next two months)
        ("去年夏天", ("2025-06-01", "2025-09-01")),
        ("2024年冬季", ("2024-12-01", "2025-03-01")),
        ("今年暑假", ("2026-07-01", "2026-09-01")),
        ("今年寒假", ("2026-01-01", "2026-03-01")),
        ("last summer", ("2025-06-01", "2025-09-01")),
        ("over the past winter", ("2025-12-01", "2026-03-01")),
        ("this winter", ("2025-12-01", "2026-03-01")),  # just over, nearer than the coming one
        ("this summer", ("2026-06-01", "2026-09-01")),
        ("next autumn", ("2026-09-01", "2026-12-01")),
        ("the fall of 2024", ("2024-09-01", "2024-12-01")),
        ("summer 2023", ("2023-06-01", "2023-09-01")),
        ("spring of last year", ("2025-03-01", "2025-06-01")),
        # parts of a year: its first, middle or last four months, or a half
        ("去年年底", ("2025-09-01", "2026-01-01")),
        ("今年初", ("2026-01-01", "2026-05-01")),
        ("2025年上半年", ("2025-01-01", "2025-07-01")),
        ("in late 2025", ("2025-09-01", "2026-01-01")),
        ("at the start of this year", ("2026-01-01", "2026-05-01")),
        ("mid-2023", ("2023-05-01", "2023-09-01")),
        ("the end of last year", ("2025-09-01", "2026-01-01")),
        ("in the second half of 2024", ("2024-07-01", "2025-01-01")),
        ("earlier this year", ("2026-01-01", "2026-03-02")),
    ],
)
def test_named_year_expressions(text: str, expected: tuple[str, str]) -> None:
    assert one(text, FIRST_OF_MARCH) == expected
    assert query(text, FIRST_OF_MARCH) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I had a fall last year", ("2025-01-01", "2026-01-01")),  # a tumble, not autumn
        ("夏天很热", None),  # summers in general
        ("this may be fine next year", ("2027-01-01", "2028-01-01")),  # "may" the verb
    ],
)
def test_words_that_are_not_seasons_or_months(text: str, expected: tuple[str, str] | None) -> None:
    assert query(text, FIRST_OF_MARCH) == expected


@pytest.mark.parametrize(
    ("text", "reference"),
    [
        ("tomorrow", datetime(9999, 12, 31, 23, 59, tzinfo=UTC)),
        ("next year", datetime(9999, 6, 30, tzinfo=UTC)),
        ("明年", datetime(9999, 6, 30, tzinfo=UTC)),
        ("this week", datetime(9999, 12, 31, tzinfo=UTC)),
        ("yesterday", datetime(1, 1, 1, tzinfo=UTC)),
        ("last summer", datetime(1, 6, 1, tzinfo=UTC)),
        ("去年五月", datetime(1, 6, 1, tzinfo=UTC)),
    ],
)
def test_a_time_past_the_calendar_is_no_time(text: str, reference: datetime) -> None:
    # years 1-9999 are all a datetime holds: "tomorrow" on 9999-12-31 raised (a 500)
    assert resolve_time_expressions(text, reference) == []
    assert parse_query_time(text, reference) is None
