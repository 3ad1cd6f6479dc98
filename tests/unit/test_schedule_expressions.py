"""The template's schedule expressions, evaluated locally (hindsight/server/schedule.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hindsight.server.schedule import ScheduleExpressionError, parse_schedule
from hindsight.server.scheduler import configured_schedules, upcoming_runs
from hindsight.settings import Settings

NOW = datetime(2026, 12, 3, 15, 0, tzinfo=UTC)  # a Thursday


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def test_the_template_default_runs_at_two_every_night() -> None:
    nightly = parse_schedule("cron(0 2 * * ? *)", "UTC")
    assert nightly.upcoming(NOW, 2) == [at(2026, 12, 4, 2), at(2026, 12, 5, 2)]
    assert nightly.at_or_before(NOW) == at(2026, 12, 3, 2)
    assert nightly.at_or_before(at(2026, 12, 3, 2)) == at(2026, 12, 3, 2)  # due on the dot


def test_the_time_zone_moves_the_runs_and_follows_daylight_saving() -> None:
    shanghai = parse_schedule("cron(0 2 * * ? *)", "Asia/Shanghai")
    assert shanghai.next_after(NOW) == at(2026, 12, 3, 18)  # 02:00 at UTC+8
    berlin = parse_schedule("cron(0 2 * * ? *)", "Europe/Berlin")
    assert berlin.next_after(at(2026, 6, 30, 12)) == at(2026, 7, 1, 0)  # CEST, UTC+2
    assert berlin.next_after(at(2026, 11, 30, 12)) == at(2026, 12, 1, 1)  # CET, UTC+1


def test_aws_weekdays_count_from_sunday_as_one() -> None:
    weekdays = parse_schedule("cron(0 9 ? * 2-6 *)", "UTC")  # Monday to Friday
    runs = weekdays.upcoming(NOW, 3)
    assert [run.strftime("%a") for run in runs] == ["Fri", "Mon", "Tue"]
    third_friday = parse_schedule("cron(0 9 ? * 6#3 *)", "UTC")
    assert third_friday.next_after(NOW) == at(2026, 12, 18, 9)
    named = parse_schedule("cron(30 8 ? * MON *)", "UTC")
    assert named.next_after(NOW) == at(2026, 12, 7, 8, 30)


def test_a_year_field_limits_the_runs() -> None:
    next_year = parse_schedule("cron(0 0 1 * ? 2027)", "UTC")
    assert next_year.next_after(NOW) == at(2027, 1, 1)
    assert next_year.upcoming(at(2027, 11, 15), 1) == [at(2027, 12, 1)]
    with pytest.raises(ScheduleExpressionError, match="no run"):
        next_year.next_after(at(2028, 1, 1))


def test_rates_are_counted_from_midnight_of_the_time_zone() -> None:
    four_hourly = parse_schedule("rate(4 hours)", "UTC")
    assert four_hourly.at_or_before(NOW) == at(2026, 12, 3, 12)
    assert four_hourly.upcoming(NOW, 2) == [at(2026, 12, 3, 16), at(2026, 12, 3, 20)]
    assert parse_schedule("rate(1 day)", "Asia/Shanghai").next_after(NOW) == at(2026, 12, 3, 16)
    assert parse_schedule("rate(15 minutes)", "UTC").next_after(NOW) == at(2026, 12, 3, 15, 15)


@pytest.mark.parametrize(
    ("expression", "timezone", "says"),
    [
        ("cron(0 2 * *)", "UTC", "six"),
        ("daily", "UTC", "or rate"),
        ("rate(0 hours)", "UTC", "N ≥ 1"),
        ("rate(2 weeks)", "UTC", "minutes|hours|days"),
        ("cron(0 2 1 * 2 *)", "UTC", "either day-of-month or day-of-week"),
        ("cron(0 2 ? * 9 *)", "UTC", "1 \\(Sunday\\) to 7"),
        ("cron(99 2 * * ? *)", "UTC", "not a valid schedule"),
        ("cron(0 2 * * ? *)", "Mars/Olympus", "IANA"),
    ],
)
def test_bad_expressions_say_what_is_expected(expression: str, timezone: str, says: str) -> None:
    with pytest.raises(ScheduleExpressionError, match=says):
        parse_schedule(expression, timezone)


def test_settings_switch_the_schedules_on_and_off() -> None:
    assert list(configured_schedules(Settings())) == ["reflection", "maintenance"]
    assert configured_schedules(Settings.from_env({"HINDSIGHT_SCHEDULES": "off"})) == {}
    off = Settings.from_env({"HINDSIGHT_REFLECTION_SCHEDULE": "off"})
    assert list(configured_schedules(off)) == ["maintenance"]
    busy = Settings.from_env(
        {"HINDSIGHT_REFLECTION_SCHEDULE": "rate(4 hours)", "HINDSIGHT_SCHEDULE_TIMEZONE": "UTC"}
    )
    assert upcoming_runs(busy, NOW, 1) == {
        "reflection": [at(2026, 12, 3, 16)],
        "maintenance": [at(2026, 12, 4, 3)],
    }
