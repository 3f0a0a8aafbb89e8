"""A capacity probe stops once it surely misses the SLO (simulation/capacity.py, ``_Misses``):
it never stops a replay that would have met the SLO, it does stop an overloaded one early, and
the bisection finds the same rate as with every probe replayed to its end."""

import math

import pytest

from tests.helpers import spec as make_spec
from tokenscale.api.slo import Slo
from tokenscale.planning import plan_service
from tokenscale.simulation import capacity
from tokenscale.simulation.capacity import _Misses, _replay, meets_slo, sustainable_rps
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import ReplicaConfig, replica_config

PAIRS = [(800, 150), (2000, 60), (300, 400), (1200, 200)]
LONG = [(6000, 300), (12000, 150), (3000, 500)]
"""Long requests: a replica sustains a few per second, so each probe's 300 s are few requests."""


def _engine(slo: Slo) -> tuple[ReplicaConfig, Slo, float]:
    spec = make_spec(workload={"rps": {"mean": 4}})
    spec = spec.model_copy(update={"slo": slo})
    plan = plan_service(spec)
    return replica_config(spec, plan, 16, 1.0), spec.slo, plan.rps_per_replica


@pytest.mark.parametrize(
    "slo",
    [
        Slo(ttft_p99_seconds=1.0, tpot_p99_seconds=0.05),
        Slo(ttft_p99_seconds=3.0, tpot_p99_seconds=0.08, e2e_p99_seconds=20.0),
    ],
)
@pytest.mark.parametrize("scale", [0.5, 1.0, 1.5, 3.0])
def test_a_probe_gives_up_only_on_a_replay_that_misses(slo: Slo, scale: float) -> None:
    cfg, slo, planned = _engine(slo)
    rate, n = planned * scale, 1200
    whole = Recorder()
    assert _replay(cfg, rate, PAIRS, n, 3, None, False, None, whole, None)
    cut = Recorder()
    finished = _replay(cfg, rate, PAIRS, n, 3, None, False, None, cut, _Misses(slo, n))
    if not finished:  # it stopped: the whole replay misses, and it stopped before the end
        assert not meets_slo(whole, slo)
        assert len(cut.outcomes) < len(whole.outcomes)
    else:  # it ran to the end: the same replay
        assert [o.ttft_s for o in cut.outcomes] == [o.ttft_s for o in whole.outcomes]


def test_an_overloaded_probe_stops_early() -> None:
    cfg, slo, planned = _engine(Slo(ttft_p99_seconds=1.0, tpot_p99_seconds=0.05))
    rate, n = planned * 4.0, 3000
    cut = Recorder()
    assert not _replay(cfg, rate, PAIRS, n, 3, None, False, None, cut, _Misses(slo, n))
    assert len(cut.outcomes) < n / 2


def test_the_bisection_finds_the_same_rate_with_every_probe_run_to_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg, slo, _ = _engine(Slo(ttft_p99_seconds=4.0, tpot_p99_seconds=0.05))
    early = sustainable_rps(cfg, slo, LONG, 1.0, requests=300, seed=1)
    monkeypatch.setattr(capacity._Misses, "surely_missed", lambda *_: False)
    whole = sustainable_rps(cfg, slo, LONG, 1.0, requests=300, seed=1)
    assert early == whole
    assert math.isfinite(early)
    assert early > 0
