"""The one simulator loop and the one fleet (``simulation/loop.py``, ``simulation/fleet.py``):
the end-of-run rule every shape shares, a fixed fleet as a pinned policy, the P/D hand-off."""

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import spec as make_spec
from tokenscale.planning import plan_service
from tokenscale.simulation.fleet import Fleet, Handoff, PoolEngine
from tokenscale.simulation.loop import Clock, replay
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import ReplicaConfig, SimRequest, replica_config
from tokenscale.simulation.search import smallest
from tokenscale.simulation.trace import Trace, TraceRequest, synthetic_trace


@cache
def _cfg() -> ReplicaConfig:
    spec = make_spec()
    return replica_config(spec, plan_service(spec), 512)


class _Log:
    """Hooks that route every arrival and record when scrapes and decisions fell."""

    def __init__(self, fleet: Fleet, scale_to: int | None = None) -> None:
        self.fleet, self.scale_to = fleet, scale_to
        self.scrapes: list[float] = []
        self.decisions: list[float] = []

    def admit(self, r: TraceRequest, t: float) -> None:
        self.fleet.route(SimRequest(r.arrival_s, r.input_tokens, r.output_tokens), t)

    def scrape(self, t: float) -> None:
        self.scrapes.append(t)

    def decide(self, t: float) -> bool:
        self.decisions.append(t)
        if self.scale_to is not None:
            self.fleet.set_target(self.scale_to, t)
        return False


@settings(max_examples=8, deadline=None)
@given(st.integers(1, 4), st.floats(20.0, 90.0), st.floats(2.0, 10.0))
def test_decisions_stop_and_gpu_time_ends_at_the_trace_end(
    replicas: int, seconds: float, rps: float
) -> None:
    """Whatever the fleet and the load: no decision after the trace's end, every request
    served in the drain, GPU-seconds = a fixed fleet's replicas × GPUs × the trace's span."""
    trace = synthetic_trace(seconds, rps, lambda r: 600, lambda r: 60, seed=1)
    rec = Recorder()
    fleet = Fleet.one_pool(_cfg(), rec, 2, 0.0, replicas)
    log = _Log(fleet)
    end = replay(fleet, trace.requests, trace.duration_s, log, Clock(drain_limit_s=3600.0))
    assert log.decisions
    assert max(log.decisions) <= trace.duration_s
    assert not end.gave_up
    assert len(rec.outcomes) == len(trace.requests)  # the drain served the tail
    assert end.end_s >= trace.duration_s
    assert sum(end.gpu_seconds_by_pool) == pytest.approx(replicas * 2 * trace.duration_s)


def test_a_scale_up_holds_gpus_from_the_ask_and_serves_after_the_cold_start() -> None:
    trace = synthetic_trace(120.0, 5.0, lambda r: 300, lambda r: 50, seed=2)
    fleet = Fleet.one_pool(_cfg(), Recorder(), 1, 30.0, 1)
    log = _Log(fleet, scale_to=3)
    end = replay(fleet, trace.requests, trace.duration_s, log, Clock())
    first = log.decisions[0]  # 15 s: two more asked, starting for 30 s, held all along
    assert first == 15.0
    held_s = trace.duration_s + 2 * (trace.duration_s - first)
    assert sum(end.gpu_seconds_by_pool) == pytest.approx(held_s)
    assert list(fleet.lead_times_s)[-2:] == [30.0, 30.0]


def test_the_handoff_moves_every_prefill_to_the_decode_pool() -> None:
    """Two pools: each request prefills as one token on the prefill pool, lands on the decode
    pool after the transfer and generates every output token there; the record is decode's."""
    cfg = _cfg()
    rec, scratch = Recorder(), Recorder()
    fleet = Fleet(
        [PoolEngine("prefill", cfg, 1), PoolEngine("decode", cfg, 1)],
        [scratch, rec],
        0.0,
        [1, 1],
        handoff=Handoff(0, 1, lambda tokens: 0.5),
    )
    trace = Trace(tuple(TraceRequest(float(i), 2000, 20) for i in range(5)), "five")

    class _Pd(_Log):
        def admit(self, r: TraceRequest, t: float) -> None:
            fleet.admit_prefill(SimRequest(r.arrival_s, r.input_tokens, 1), r.output_tokens, t)

    replay(fleet, trace.requests, trace.duration_s, _Pd(fleet), Clock())
    assert [o.output_tokens for o in rec.outcomes] == [20] * 5
    assert all(o.output_tokens == 1 for o in scratch.outcomes)
    # the first token comes from decode, after the prefill and the 0.5 s transfer
    assert min(o.ttft_s for o in rec.outcomes) > 0.5
    assert fleet.routed == [5, 5]
    assert fleet.in_flight() == 0


@given(st.integers(0, 3), st.integers(0, 300), st.integers(0, 300), st.integers(0, 300))
def test_the_static_search_finds_the_smallest_passing_count(
    lo: int, start: int, threshold: int, span: int
) -> None:
    """Whatever the start: the smallest count passing a monotone test within the bounds, or
    None when not even the bound passes; never a count outside them probed."""
    most = lo + span
    probed: list[int] = []

    def ok(n: int) -> bool:
        probed.append(n)
        return n >= threshold

    found = smallest(ok, start, lo, most)
    assert found == (max(threshold, lo) if max(threshold, lo) <= most else None)
    assert all(lo <= n <= most for n in probed)
