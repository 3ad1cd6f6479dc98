"""Schedule expressions as EventBridge Scheduler writes them, evaluated on this machine.

``template.yaml`` schedules the reflection fan-out with ``cron(0 2 * * ? *)`` in a time
zone (``ReflectionScheduleTimezone``); ``hindsight serve`` reads the very same forms, so
one expression means the same times in both modes:

- ``cron(minutes hours day-of-month month day-of-week year)``: AWS's six fields. ``?``
  means "any"; day-of-week counts 1-7 from Sunday (or SUN-SAT), ``#`` picks the nth
  weekday of the month (``6#3``: the third Friday) and ``L`` the last day of the month;
  the year is ``*``, one year, a range or a list. The other fields are evaluated by
  croniter (a maintained cron library) in the expression's IANA time zone, so 02:00
  stays 02:00 across daylight-saving changes.
- ``rate(N minutes|hours|days)``: every N units, counted from midnight of 1 January 1970
  in the time zone (``rate(4 hours)`` runs at 00:00, 04:00, 08:00, ...). EventBridge counts
  a rate from the schedule's creation instead; the interval is the same.

A bad expression raises ``ScheduleExpressionError`` saying which form is expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from hindsight.core.errors import ConfigurationError

DEFAULT_REFLECTION_SCHEDULE = "cron(0 2 * * ? *)"
DEFAULT_TIMEZONE = "UTC"
_CRON = re.compile(r"^cron\((?P<body>[^()]*)\)$", re.IGNORECASE)
_RATE = re.compile(r"^rate\(\s*(?P<value>\d+)\s+(?P<unit>[a-z]+)\s*\)$", re.IGNORECASE)
_UNITS = {"minute": 60, "minutes": 60, "hour": 3_600, "hours": 3_600, "day": 86_400, "days": 86_400}
_YEAR_SCAN = 2_000  # fire times examined at most when only some years are allowed
FORMS = "cron(min hour day-of-month month day-of-week year) or rate(N minutes|hours|days)"


class ScheduleExpressionError(ConfigurationError):
    """A schedule expression or time zone that cannot be evaluated."""


def _aws_weekday(token: str) -> str:
    """One day-of-week item from AWS numbering (1 = Sunday) to cron's (0 = Sunday)."""
    match = re.fullmatch(r"(\d+)(.*)", token)
    if match is None:
        return token  # names (MON-FRI), L, *
    number, rest = int(match.group(1)), match.group(2)
    if not 1 <= number <= 7:
        raise ScheduleExpressionError(
            f"day-of-week {number} is out of range: AWS counts 1 (Sunday) to 7 (Saturday)"
        )
    return f"{number - 1}{rest}"


def _weekdays(field_text: str) -> str:
    items = []
    for item in field_text.split(","):
        step = ""
        if "/" in item:
            item, step = item.split("/", 1)
            step = "/" + step
        if "#" in item:
            day, nth = item.split("#", 1)
            items.append(f"{_aws_weekday(day)}#{nth}{step}")
            continue
        items.append("-".join(_aws_weekday(part) for part in item.split("-")) + step)
    return ",".join(items)


def _years(field_text: str) -> frozenset[int] | None:
    """The allowed years (None: any)."""
    if field_text in {"*", "?"}:
        return None
    years: set[int] = set()
    for item in field_text.split(","):
        low, _, high = item.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise ScheduleExpressionError(
                f"year {field_text!r} must be *, 2027, 2027-2030 or a list of those"
            )
        years.update(range(int(low), int(high or low) + 1))
    return frozenset(years)


def _zone(timezone: str) -> ZoneInfo:
    try:
        return ZoneInfo(timezone.strip() or DEFAULT_TIMEZONE)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleExpressionError(
            f"unknown time zone {timezone!r}: give an IANA name such as UTC or Asia/Shanghai"
        ) from exc


@dataclass(frozen=True)
class Schedule:
    """When a job runs: a parsed expression in its time zone."""

    expression: str
    timezone: str
    zone: ZoneInfo = field(repr=False)
    cron: str | None = None  # the 5-field cron text croniter evaluates
    years: frozenset[int] | None = None
    interval: timedelta | None = None  # rate(...)

    def next_after(self, moment: datetime) -> datetime:
        """The first run strictly after ``moment`` (aware, UTC)."""
        if self.interval is not None:
            return self.at_or_before(moment) + self.interval
        runs = croniter(self.cron, moment.astimezone(self.zone))
        for _ in range(_YEAR_SCAN):
            candidate: datetime = runs.get_next(datetime)
            if self.years is None or candidate.year in self.years:
                return candidate.astimezone(UTC)
        raise ScheduleExpressionError(f"{self.expression} has no run in the years it allows")

    def at_or_before(self, moment: datetime) -> datetime:
        """The latest run at or before ``moment`` (aware, UTC): the one that is due."""
        if self.interval is not None:
            anchor = datetime(1970, 1, 1, tzinfo=self.zone).astimezone(UTC)
            periods = (moment - anchor) // self.interval
            return anchor + periods * self.interval
        runs = croniter(self.cron, (moment + timedelta(seconds=1)).astimezone(self.zone))
        for _ in range(_YEAR_SCAN):
            candidate: datetime = runs.get_prev(datetime)
            if self.years is None or candidate.year in self.years:
                return candidate.astimezone(UTC)
        raise ScheduleExpressionError(f"{self.expression} had no run in the years it allows")

    def upcoming(self, moment: datetime, count: int) -> list[datetime]:
        """The next ``count`` runs after ``moment``."""
        runs: list[datetime] = []
        for _ in range(count):
            moment = self.next_after(moment)
            runs.append(moment)
        return runs


def parse_schedule(expression: str, timezone: str = DEFAULT_TIMEZONE) -> Schedule:
    """A ``cron(...)`` or ``rate(...)`` expression in an IANA time zone."""
    text = expression.strip()
    zone = _zone(timezone)
    rate = _RATE.match(text)
    if rate is not None:
        value, unit = int(rate.group("value")), rate.group("unit").lower()
        if unit not in _UNITS or value < 1:
            raise ScheduleExpressionError(
                f"{text}: a rate is rate(N minutes|hours|days) with a whole N ≥ 1"
            )
        return Schedule(text, zone.key, zone, interval=timedelta(seconds=value * _UNITS[unit]))
    cron = _CRON.match(text)
    if cron is None:
        raise ScheduleExpressionError(f"schedule {text!r} is not {FORMS}")
    fields = cron.group("body").split()
    if len(fields) != 6:
        raise ScheduleExpressionError(f"{text} has {len(fields)} fields; AWS cron has six: {FORMS}")
    minutes, hours, day, month, weekday, year = fields
    if day != "?" and weekday != "?" and "*" not in (day, weekday):
        raise ScheduleExpressionError(
            f"{text}: give either day-of-month or day-of-week and ? for the other, as AWS does"
        )
    five = " ".join(
        [minutes, hours, day.replace("?", "*"), month, _weekdays(weekday.replace("?", "*"))]
    )
    if not croniter.is_valid(five):
        raise ScheduleExpressionError(f"{text} is not a valid schedule: {FORMS}")
    return Schedule(text, zone.key, zone, cron=five, years=_years(year))
