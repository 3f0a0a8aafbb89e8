"""The autoscaling suite's misses traced: tokenscale's replay read per minute (the recording
changes no decision), and every minute under the target classified by the stated rule."""

import functools

from tests.helpers import spec as make_spec
from tokenscale.simulation import Setup, SimOptions, simulate, synthetic_trace
from tokenscale.simulation.miss_trace import (
    MinuteRow,
    _classify,
    classified,
    timeline_text,
    trace_misses,
)


@functools.cache
def _step() -> Setup:
    """Two minutes at 3 RPS, then 30 RPS for three: a step no signal announces a cold start
    (120 s) ahead, over a launch fleet sized for the first rate."""
    trace = synthetic_trace(
        300, lambda t: 3.0 if t < 120 else 30.0, lambda r: 2000, lambda r: 200, seed=3
    )
    spec = make_spec(
        workload={"rps": {"mean": 3}},
        scaling={"minReplicas": 1, "maxReplicas": 16},
    )
    opts = SimOptions(capacity_requests=300, oracle_repair_rounds=4, cold_start_s=120.0)
    return Setup(spec, trace, opts, "step")


def test_the_trace_reads_the_same_run_per_minute() -> None:
    setup = _step()
    t = trace_misses(setup, "step")
    plain = simulate(setup, "tokenscale")
    assert t.result.slo_attainment == plain.slo_attainment  # recording decides nothing
    assert t.result.gpu_hours == plain.gpu_hours
    assert [r.minute for r in t.rows] == list(range(5))
    assert sum(r.arrivals for r in t.rows) == len(setup.trace.requests)
    met = round(plain.slo_attainment * plain.requests)
    assert sum(r.missed for r in t.rows) == plain.requests - met
    assert [r.oracle for r in t.rows] == setup.oracle_schedule[:5]
    # announced: the oracle's most over the minutes that ended one cold start (2 min) before
    assert [r.announced for r in t.rows][:3] == [0, 0, 0]
    assert t.rows[3].announced == setup.oracle_schedule[0]
    assert classified(t) == t  # a stored trace reads the same under the same rule
    for r in t.rows:
        assert r.ready_min <= r.ready_max
        assert (r.miss_class is None) == (r.missed <= 0.01 * r.arrivals)
        for mv in r.moves:
            assert mv.from_replicas != mv.to_replicas
            assert r.minute * 60 < mv.t_s <= (r.minute + 1) * 60
    assert sum(t.missed_by_class().values()) == sum(r.missed for r in t.missed_rows)
    text = timeline_text(t)
    for r in t.missed_rows:
        assert f"MISS {r.attainment * 100:.1f} %: {r.miss_class}" in text


def _row(
    minute: int,
    missed: int,
    ready: int,
    oracle: int,
    announced: int,
    at: int | None = None,
    arrivals: int = 100,
) -> MinuteRow:
    return MinuteRow(
        minute=minute,
        arrivals=arrivals,
        missed=missed,
        ready_min=ready,
        ready_max=ready,
        decided=ready,
        oracle=oracle,
        announced=announced,
        announced_at=at,
        cause="Steady",
    )


def test_each_missed_minute_is_classified_by_the_rule() -> None:
    rows = _classify(
        [
            _row(0, 1, 2, 2, 0),  # 99 % met: no class
            _row(1, 30, 2, 5, 2),  # needed 5, the load a cold start before needed 2: unannounced
            _row(2, 10, 5, 5, 2),  # the need ready, right after a miss: its backlog
            _row(3, 20, 3, 6, 5, at=2),  # 5 were announced by a held load, 3 ready: late
            _row(4, 5, 6, 6, 6),  # the need ready after a late minute: carried, late
            _row(5, 0, 6, 6, 6, arrivals=70),  # the load falls below 3/4 of minute 7's
            _row(6, 5, 4, 4, 4),  # the need ready, no short minute within 2 before
            _row(7, 9, 4, 6, 6, at=4, arrivals=100),  # announced by minute 4, a dip between
            _row(8, 0, 4, 5, 4),  # met the target, one replica short of the need
            _row(9, 20, 5, 5, 5),  # the need ready: minute 8's backlog (unannounced there)
        ],
        0.99,
        2,
    )
    assert [r.miss_class for r in rows] == [
        None,
        "unannounced",
        "unannounced",
        "late",
        "late",
        None,
        "need ready",
        "recurrent",
        None,
        "unannounced",
    ]
    carried = [r.carried_from for r in rows]
    assert carried == [None, None, 1, None, 3, None, None, None, None, 8]
