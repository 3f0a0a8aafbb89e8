"""``spec.scaling.schedule``: cron windows with their own bounds, evaluated at a given time."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.unit.test_engine import NOW, _spec, snap
from tokenscale.api.cron import civil_day, parse_cron, weekday
from tokenscale.planning import plan_service
from tokenscale.scaling import ScalingState
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.memory import trusted
from tokenscale.scaling.schedule import open_window, opened_at, scheduled_spec, widest_spec
from tokenscale.scaling.stepper import Observation, Stepper

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _minute(*civil: int) -> int:
    return int(datetime(*civil, tzinfo=UTC).timestamp()) // 60


@FAST
@given(st.integers(-719_162, 2_000_000))
def test_the_calendar_is_the_gregorian_one(days: int) -> None:
    d = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(days=days)
    assert civil_day(days) == (d.year, d.month, d.day)
    assert weekday(days) == d.isoweekday() % 7


def _windowed(*windows: dict[str, object], lo: int = 1, hi: int = 20) -> object:
    return _spec(scaling={"minReplicas": lo, "maxReplicas": hi, "schedule": list(windows)})


WEEKDAY_MORNINGS = {"cron": "0 8 * * 1-5", "durationSeconds": 4 * 3600, "minReplicas": 6}


def test_a_weekday_window_is_open_from_its_minute_for_its_duration() -> None:
    spec = _windowed(WEEKDAY_MORNINGS)
    # 2026-12-01 is a Tuesday
    assert open_window(spec, _at("2026-12-01T07:59:59")) is None
    opened = open_window(spec, _at("2026-12-01T08:00:00"))
    assert opened is not None
    assert opened.opened_at_s == _at("2026-12-01T08:00:00")
    assert open_window(spec, _at("2026-12-01T11:59:59")) is not None
    assert open_window(spec, _at("2026-12-01T12:00:00")) is None  # (open, open + duration)
    assert open_window(spec, _at("2026-12-05T09:00:00")) is None  # a Saturday


def test_the_open_windows_bounds_replace_the_specs_where_set() -> None:
    spec = _windowed(WEEKDAY_MORNINGS)
    inside = scheduled_spec(spec, _at("2026-12-01T09:00:00"))
    assert (inside.scaling.min_replicas, inside.scaling.max_replicas) == (6, 20)
    assert scheduled_spec(spec, _at("2026-12-01T13:00:00")) is spec


def test_the_first_open_window_in_list_order_wins() -> None:
    spec = _windowed(
        {"cron": "0 * * * *", "durationSeconds": 3600, "maxReplicas": 4, "name": "hourly"},
        {"cron": "* * * * *", "durationSeconds": 60, "minReplicas": 3},
    )
    found = open_window(spec, NOW)
    assert found is not None
    assert found.index == 0
    assert found.label == "hourly"
    bounded = scheduled_spec(spec, NOW).scaling
    assert (bounded.min_replicas, bounded.max_replicas) == (1, 4)


@FAST
@given(
    minute=st.integers(0, 59),
    hour=st.integers(0, 23),
    duration_s=st.integers(60, 3 * 86_400),
    now_s=st.floats(0, 4e9, allow_nan=False),
)
def test_a_daily_window_is_open_exactly_while_the_last_start_is_within_its_duration(
    minute: int, hour: int, duration_s: int, now_s: float
) -> None:
    spec = _windowed({"cron": f"{minute} {hour} * * *", "durationSeconds": duration_s})
    day = 86_400.0
    start_of_day = now_s // day * day
    last = start_of_day + hour * 3600 + minute * 60
    if last > now_s:
        last -= day  # the latest start at or before now
    expected = last if now_s - last < duration_s else None
    assert opened_at(spec.scaling.schedule[0], now_s) == expected


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("0 8 * *", "4 fields; it needs 5"),
        ("60 * * * *", "minute field: 60 is outside 0-59"),
        ("* 24 * * *", "hour field: 24 is outside 0-23"),
        ("* * 0 * *", "day of month field: 0 is outside 1-31"),
        ("* * * * MON", "day of week field: 'MON' is not a number"),
        ("5-1 * * * *", "runs backwards"),
        ("*/0 * * * *", "minute field: 0 is outside"),
    ],
)
def test_a_bad_expression_names_the_field_and_the_fix(expression: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_cron(expression)
    with pytest.raises(ValidationError, match=words):
        _windowed({"cron": expression, "durationSeconds": 60})


def test_steps_lists_and_both_day_fields() -> None:
    c = parse_cron("*/20 8-18/5,23 13 * 5")
    assert c.minutes == frozenset({0, 20, 40})
    assert c.hours == frozenset({8, 13, 18, 23})
    assert c.matches(_minute(2026, 12, 4, 8, 20))  # a Friday (day of week)
    assert c.matches(_minute(2026, 12, 13, 23, 0))  # the 13th (day of month)
    assert not c.matches(_minute(2026, 12, 3, 8, 20))  # neither
    assert parse_cron("0 0 * * 7").weekdays == frozenset({0})  # 7 is Sunday


def test_a_window_whose_bounds_cross_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError, match=r"schedule\[0\].*minReplicas=30 exceeds"):
        _windowed({"cron": "0 8 * * *", "durationSeconds": 60, "minReplicas": 30})


def test_a_window_opening_between_observations_re_bounds_without_re_deciding() -> None:
    spec = _windowed({"cron": "0 8 * * *", "durationSeconds": 3600, "minReplicas": 5})
    stepper = Stepper(spec, plan_service(spec), 15.0)
    before = _at("2026-12-01T07:59:50")
    s = snap(n=2, at=before)
    first = stepper.step(ScalingState(decided_replicas=2), Observation(before, s), before)
    assert first.decision is not None
    assert first.decision.replicas < 5
    later = _at("2026-12-01T08:00:05")
    again = stepper.step(first.state, Observation(before, s), later)
    assert again.decision is not None
    assert (again.decision.replicas, again.decision.cause) == (5, Cause.BOUNDS)
    assert "schedule[0]" in again.decision.why
    assert not again.engine_ran
    assert again.state == first.state


def test_the_engine_decides_within_the_open_windows_bounds() -> None:
    spec = _windowed({"cron": "0 8 * * *", "durationSeconds": 3600, "minReplicas": 7})
    stepper = Stepper(spec, plan_service(spec), 15.0)
    at = _at("2026-12-01T08:30:00")
    step = stepper.step(ScalingState(decided_replicas=2), Observation(at, snap(n=2, at=at)), at)
    assert step.engine_ran
    assert step.decision is not None
    assert step.decision.replicas == 7


def test_a_count_some_window_allowed_is_not_judged_corrupt() -> None:
    spec = _windowed({"cron": "0 8 * * *", "durationSeconds": 3600, "maxReplicas": 40})
    memory, problems = trusted(ScalingState(decided_replicas=30), widest_spec(spec), NOW, 30)
    assert problems == []
    assert memory.decided_replicas == 30
    _, outside = trusted(ScalingState(decided_replicas=30), spec, NOW, 30)
    assert outside  # the spec's own bounds alone would reset it
