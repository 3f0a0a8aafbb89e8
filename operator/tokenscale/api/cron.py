"""Five-field cron expressions (``minute hour day-of-month month day-of-week``), UTC.

Each field is ``*``, a number, a range ``a-b``, any of those with a step (``*/15``,
``8-18/2``), or a comma list of them. Day of week is 0–7 (0 and 7 are Sunday). As in cron,
when both day of month and day of week are restricted (neither is ``*``), a day matches if
either does. No names (``MON``, ``JAN``) and no ``@`` macros: a bad expression raises
``ValueError`` naming the field and its allowed range.

Times are whole minutes since the Unix epoch (UTC); the calendar is computed from them
(proleptic Gregorian, :func:`civil_day`), with no clock and no time library.
"""

from dataclasses import dataclass

MINUTES_PER_DAY = 1440


def civil_day(days: int) -> tuple[int, int, int]:
    """(year, month, day) of ``days`` since 1970-01-01 (H. Hinnant's ``civil_from_days``)."""
    z = days + 719_468
    era = (z if z >= 0 else z - 146_096) // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if month <= 2 else 0), month, day


def weekday(days: int) -> int:
    """Day of week of ``days`` since 1970-01-01 (a Thursday): 0 = Sunday … 6 = Saturday."""
    return (days + 4) % 7


FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)


@dataclass(frozen=True)
class Cron:
    """A parsed expression: the allowed values of each field."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    """0 = Sunday … 6 = Saturday (7 is folded into 0)."""
    days_restricted: bool
    weekdays_restricted: bool

    def matches(self, minute: int) -> bool:
        """Whether ``minute`` (whole minutes since the epoch, UTC) matches the expression."""
        in_day = minute % MINUTES_PER_DAY
        return (
            in_day % 60 in self.minutes
            and in_day // 60 in self.hours
            and self.day_matches(minute // MINUTES_PER_DAY)
        )

    def day_matches(self, days: int) -> bool:
        """Whether the day ``days`` since the epoch matches (month, day of month, weekday)."""
        _, month, day = civil_day(days)
        if month not in self.months:
            return False
        day_ok = day in self.days
        weekday_ok = weekday(days) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return day_ok or weekday_ok
        return day_ok and weekday_ok


def _number(text: str, name: str, lo: int, hi: int) -> int:
    if not text.isdigit():
        raise ValueError(f"cron {name} field: {text!r} is not a number in {lo}-{hi}")
    value = int(text)
    if not lo <= value <= hi:
        raise ValueError(f"cron {name} field: {value} is outside {lo}-{hi}")
    return value


def _field(text: str, name: str, lo: int, hi: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        step = _number(step_text, name, 1, hi - lo + 1) if step_text else 1
        if base == "*":
            first, last = lo, hi
        elif "-" in base:
            a, _, b = base.partition("-")
            first, last = _number(a, name, lo, hi), _number(b, name, lo, hi)
            if first > last:
                raise ValueError(f"cron {name} field: range {base!r} runs backwards")
        else:
            first = _number(base, name, lo, hi)
            last = hi if step_text else first
        values.update(range(first, last + 1, step))
    return frozenset(values)


def parse_cron(expression: str) -> Cron:
    """Parse a five-field expression; ``ValueError`` says which field is wrong and why."""
    parts = expression.split()
    if len(parts) != len(FIELDS):
        raise ValueError(
            f"cron expression {expression!r} has {len(parts)} fields; it needs 5: "
            "minute hour day-of-month month day-of-week (e.g. '0 8 * * 1-5')"
        )
    sets = [_field(p, name, lo, hi) for p, (name, lo, hi) in zip(parts, FIELDS, strict=True)]
    weekdays = frozenset(d % 7 for d in sets[4])
    return Cron(
        minutes=sets[0],
        hours=sets[1],
        days=sets[2],
        months=sets[3],
        weekdays=weekdays,
        days_restricted=parts[2] != "*",
        weekdays_restricted=parts[4] != "*",
    )
