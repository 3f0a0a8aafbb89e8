"""The scaling decision engine (pure): pressure up, careful down, never blind."""

import math
import os
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import spec as make_spec
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import Conditions, Plan, perf_at, plan_service, resolve
from tokenscale.scaling import Decision, EngineInput, ScalingState, Snapshot, decide
from tokenscale.scaling.engine import observed_workload

NOW = 1_000_000.0
FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _spec(**patch: Any) -> InferenceServiceSpec:
    base = {"scaling": {"minReplicas": 1, "maxReplicas": 20}, "workload": {"rps": {"mean": 2}}}
    for k, v in patch.items():
        base[k] = {**base.get(k, {}), **v} if isinstance(v, dict) else v
    return make_spec(**base)


def snap(
    n: int = 2,
    kv: float = 0.5,
    waiting: float = 0.0,
    ttft: float = 0.5,
    tpot: float = 0.02,
    at: float = NOW,
    **extra: Any,
) -> Snapshot:
    return Snapshot(
        at=at,
        replicas_reporting=n,
        waiting=waiting,
        running=8.0 * n,
        kv_usage_max=kv,
        kv_usage_mean=kv,
        ttft_p99_s=ttft,
        tpot_p99_s=tpot,
        request_rate_rps=1.0,
        prompt_tps=1000.0,
        generation_tps=200.0,
        newest_sample_age_s=1.0,
        **extra,
    )


def run(
    spec: InferenceServiceSpec,
    s: Snapshot | None,
    state: ScalingState,
    now: float = NOW,
    forecast: Plan | None = None,
) -> Decision:
    """Decide at ``now``; a snapshot built at NOW is taken as fresh at ``now`` (re-scraped).
    ``forecast``: the spec's plan when the caller has it (a loop of decisions plans it once)."""
    if s is not None and s.at == NOW:
        s = s.model_copy(update={"at": now})
    return decide(
        EngineInput(
            spec=spec,
            forecast=forecast or plan_service(spec),
            snapshot=s,
            state=state,
            now_s=now,
            interval_s=15.0,
        )
    )


def test_kv_pressure_scales_up_proportionally() -> None:
    spec = _spec()
    d = run(spec, snap(n=2, kv=0.95), ScalingState(decided_replicas=2))
    assert d.replicas == 3  # ceil(2 × 0.95 / 0.90) = 3
    assert d.source == "metrics"
    assert d.reason.startswith("scale up 2→3: kv_usage 0.95")
    kv = next(s for s in d.signals if s.name == "kv_usage")
    assert (kv.level, kv.replicas) == ("high", 3)
    assert any(line.startswith("KV cache near full") for line in d.diagnosis)


def test_one_engine_full_of_a_backlog_beside_an_empty_one_is_no_shortage_of_cache() -> None:
    # step-down at 28:15: the replica that carried the step is still full (0.979) when the
    # one asked for becomes Ready (empty); the fleet holds 0.49 of its pool, and fifteen
    # seconds later both engines read 0.15: a third replica would have come for nothing
    spec = _spec()
    s = snap(n=2, kv=0.49).model_copy(update={"kv_usage_max": 0.979})
    d = run(spec, s, ScalingState(decided_replicas=2))
    kv = next(x for x in d.signals if x.name == "kv_usage")
    assert (kv.value, kv.level != "high", d.replicas) == (0.49, True, 2)
    # the same fullest engine on a fleet that is full everywhere asks for a replica
    everywhere = snap(n=2, kv=0.95).model_copy(update={"kv_usage_max": 0.979})
    full = run(spec, everywhere, ScalingState(decided_replicas=2))
    assert full.replicas == 3


SEEN = NOW - 15.0
"""The previous decision: a queue it saw too is not a passing burst."""


def waiting_for(
    spec: InferenceServiceSpec, s: Snapshot, state: ScalingState, times_high: float
) -> float:
    """The waiting count whose prefill work is ``times_high`` × the queue's high watermark on
    ``s``'s fleet: ``queue_s`` is linear in the count, so one waiting request measures it."""
    one = run(spec, s.model_copy(update={"waiting": 1.0}), state)
    q = next(x for x in one.signals if x.name == "queue_s")
    assert q.value is not None
    assert q.value > 0
    return float(math.ceil(times_high * q.high / q.value))


def test_queue_pressure_is_step_limited() -> None:
    spec, state = _spec(), ScalingState(decided_replicas=2, backlog_at_s=SEEN)
    waiting = waiting_for(spec, snap(n=4), state, 5.0)
    d = run(spec, snap(n=4, waiting=waiting), state)
    assert d.replicas == 2 + 4  # wants ceil(4 × min(5, 2)) = 8, maxScaleUpStep 4
    q = next(x for x in d.signals if x.name == "queue_s")
    assert (q.level, q.replicas) == ("high", 8)


def test_a_backlog_at_most_doubles_the_replicas_per_decision() -> None:
    # ten times the queue the SLO allows is a backlog, not ten times the load: 2 × 2, not 20
    spec, state = _spec(), ScalingState(decided_replicas=2, backlog_at_s=SEEN)
    waiting = waiting_for(spec, snap(n=2), state, 10.0)
    d = run(spec, snap(n=2, waiting=waiting), state)
    assert d.replicas == 4
    line = f"capacity: {waiting / 2:.1f} requests waiting"
    assert any(x.startswith(line) for x in d.diagnosis)


def test_a_queue_is_work_not_a_count() -> None:
    """The same waiting count is four times the queue with four times the prompt tokens, and
    a count that was pressure as requests (20 per replica ≥ waitingPerReplicaHigh 2) is none
    when its prompts prefill in a fraction of the SLO."""
    spec, state = _spec(), ScalingState(decided_replicas=2)
    short = run(spec, snap(n=2, waiting=40.0), state)
    long = run(spec, snap(n=2, waiting=40.0).model_copy(update={"prompt_tps": 4000.0}), state)
    qs = next(x for x in short.signals if x.name == "queue_s")
    ql = next(x for x in long.signals if x.name == "queue_s")
    assert qs.value is not None
    assert ql.value is not None
    assert qs.tokens == pytest.approx(40 * 1000.0)
    assert ql.tokens == pytest.approx(40 * 4000.0)
    assert ql.value > 3.5 * qs.value  # four times the tokens (a little more per-step work)
    assert qs.level != "high"  # 40 prompts of 1,000 tokens: well under the TTFT SLO
    assert not any(x.name == "waiting_per_replica" for x in short.signals)
    # the watermarks come from the TTFT SLO: high = SLO − a mean prompt's own prefill
    slo = spec.slo.ttft_p99_seconds
    assert slo is not None
    assert 0 < qs.high < slo
    assert qs.basis is not None
    assert "prefill" in qs.basis


def test_without_a_ttft_slo_the_queue_is_a_count() -> None:
    spec = _spec(slo={"ttftP99Seconds": None})
    d = run(spec, snap(n=2, waiting=40.0), ScalingState(decided_replicas=2, backlog_at_s=SEEN))
    w = next(x for x in d.signals if x.name == "waiting_per_replica")
    assert (w.value, w.level) == (20.0, "high")
    assert not any(x.name == "queue_s" for x in d.signals)


def test_the_kv_reading_carries_its_tokens() -> None:
    spec = _spec()
    d = run(spec, snap(n=2, kv=0.5), ScalingState(decided_replicas=2))
    kv = next(x for x in d.signals if x.name == "kv_usage")
    pool = plan_service(spec).kv_capacity_tokens_per_replica
    assert kv.capacity_tokens == pytest.approx(pool)
    assert kv.tokens == pytest.approx(0.5 * pool)


@FAST
@given(st.floats(0.0, 5000.0), st.floats(0.0, 5000.0), st.integers(1, 6))
def test_more_waiting_work_never_lowers_the_replicas(a: float, b: float, n: int) -> None:
    spec, state = _spec(), ScalingState(decided_replicas=n, backlog_at_s=SEEN)
    lo, hi = sorted((a, b))
    less = run(spec, snap(n=n, waiting=lo), state)
    more = run(spec, snap(n=n, waiting=hi), state)
    assert more.replicas >= less.replicas
    q_less = next(x for x in less.signals if x.name == "queue_s")
    q_more = next(x for x in more.signals if x.name == "queue_s")
    assert q_less.value is not None
    assert q_more.value is not None
    assert q_more.value >= q_less.value
    assert q_more.replicas >= q_less.replicas


def test_starting_replicas_count_as_supply() -> None:
    # 6 asked for, only 2 ready and reporting under pressure: their need (3) is already covered
    d = run(_spec(), snap(n=2, kv=0.95), ScalingState(decided_replicas=6))
    assert d.replicas == 6


def test_ttft_over_slo_with_a_short_queue_is_prefill_bound() -> None:
    d = run(_spec(), snap(n=2, ttft=4.0, waiting=0.0), ScalingState(decided_replicas=2))
    assert d.replicas == 3  # latency is not load: ceil(2 × min(4 / 2, 1.2)), not 4
    assert any(line.startswith("prefill-bound: TTFT P99 4.00 s > SLO 2 s") for line in d.diagnosis)


def test_tpot_over_slo_is_decode_bound() -> None:
    d = run(_spec(), snap(n=2, tpot=0.08), ScalingState(decided_replicas=2))
    assert d.replicas == 3  # ceil(2 × min(0.08 / 0.05, 1.2))
    assert any(line.startswith("decode-bound") for line in d.diagnosis)


def test_scale_down_waits_for_the_window_and_steps_one_at_a_time() -> None:
    spec = _spec()
    floor = plan_service(spec).replicas.total
    state = ScalingState(decided_replicas=floor + 3)
    low = snap(n=floor + 3, kv=0.2, ttft=0.2, tpot=0.01)
    d0 = run(spec, low, state, NOW)
    assert d0.replicas == floor + 3
    assert d0.state.low_since_s == NOW
    d1 = run(spec, low, d0.state, NOW + 299)
    assert d1.replicas == floor + 3
    d2 = run(spec, low, d1.state, NOW + 300)
    assert d2.replicas == floor + 2
    assert d2.reason.startswith(f"scale down {floor + 3}→{floor + 2}: every signal low for 300 s")
    d3 = run(spec, low, d2.state, NOW + 310)
    assert d3.replicas == floor + 2  # the window restarts after each step
    d4 = run(spec, low, d3.state, NOW + 600)
    assert d4.replicas == floor + 1


def test_one_normal_signal_resets_the_window() -> None:
    spec = _spec()
    floor = plan_service(spec).replicas.total
    low = snap(n=floor + 2, kv=0.2, ttft=0.2, tpot=0.01)
    d0 = run(spec, low, ScalingState(decided_replicas=floor + 2), NOW)
    d1 = run(spec, snap(n=floor + 2, kv=0.75, ttft=0.2, tpot=0.01), d0.state, NOW + 200)
    assert d1.state.low_since_s is None
    d2 = run(spec, low, d1.state, NOW + 400)
    assert d2.replicas == floor + 2


def test_never_below_the_model_or_min() -> None:
    spec = _spec(scaling={"minReplicas": 3})
    floor = plan_service(spec).replicas.total
    state = ScalingState(decided_replicas=floor, low_since_s=NOW - 10_000)
    d = run(spec, snap(n=floor, kv=0.1, ttft=0.1, tpot=0.005), state)
    assert d.replicas == floor >= 3


@pytest.mark.parametrize(
    "bad",
    [
        None,
        Snapshot(at=NOW, replicas_reporting=0, problems=["kv_usage: no series"]),
        snap(at=NOW - 600),
        Snapshot(
            at=NOW, replicas_reporting=2, waiting=0.0, kv_usage_max=0.1, newest_sample_age_s=900.0
        ),
    ],
)
def test_blind_holds_the_last_decision_and_never_scales_down(bad: Snapshot | None) -> None:
    spec = _spec()
    floor = plan_service(spec).replicas.total
    d = run(spec, bad, ScalingState(decided_replicas=floor + 5, low_since_s=NOW - 10_000))
    assert d.replicas == floor + 5
    assert d.source == "hold"
    assert not d.metrics_available
    assert d.reason.startswith("metrics unavailable")
    fresh = run(spec, bad, ScalingState())
    assert fresh.replicas == floor  # no history: the forecast floor, not zero


def test_pin_wins() -> None:
    d = run(_spec(scaling={"replicas": 7}), snap(kv=0.99), ScalingState(decided_replicas=2))
    assert (d.replicas, d.source) == (7, "pin")


def test_observed_traffic_above_the_forecast_raises_the_model() -> None:
    spec = _spec()
    busy = snap(n=2, kv=0.5).model_copy(
        update={"request_rate_rps": 60.0, "prompt_tps": 60_000.0, "generation_tps": 12_000.0}
    )
    d = run(spec, busy, ScalingState(decided_replicas=2))
    assert d.model_replicas is not None
    assert d.model_replicas > plan_service(spec).replicas.total
    assert d.replicas == min(d.model_replicas, 2 + 4)


def test_calibration_is_bounded_and_smoothed() -> None:
    spec = _spec()
    slow = snap(n=2, tpot_p50_s=10.0)  # absurdly slow: the factor moves, but by at most 30 %
    d = run(spec, slow, ScalingState(decided_replicas=2, calibration=1.0))
    assert 0.5 <= d.calibration < 1.0
    assert d.calibration == pytest.approx(0.7 + 0.3 * 0.5)


def test_calibration_prefers_the_exact_mean_and_the_observed_workload() -> None:
    spec = _spec()
    # the engines run exactly as the model predicts for the open traffic they see (8 per replica)
    seen = snap(n=2, output_tokens_mean=200.0)
    tp = plan_service(spec).tensor_parallel_size
    workload = observed_workload(spec.workload, seen, "observed")
    truth = perf_at(resolve(spec), Conditions(workload=workload), tp).tpot_open_seconds(8.0)
    # 8 decoding per replica at that TPOT generate 8 / TPOT tokens per second each
    seen = seen.model_copy(update={"generation_tps": 2 * 8.0 / truth})
    # a bucketed P50 40 % off must not move the factor when the exact mean is there
    exact = seen.model_copy(update={"tpot_mean_s": truth, "tpot_p50_s": truth * 1.4})
    d = run(spec, exact, ScalingState(decided_replicas=2, calibration=1.0))
    assert d.calibration == pytest.approx(1.0, abs=1e-3)
    only_p50 = seen.model_copy(update={"tpot_p50_s": truth * 1.4})
    d = run(spec, only_p50, ScalingState(decided_replicas=2, calibration=1.0))
    assert d.calibration < 0.95  # the fallback is used, with its error


def test_calibration_reads_the_batch_of_the_window_its_tpot_comes_from() -> None:
    """The TPOT mean is over the rate window; the running gauge is now. Right after a step up
    the gauge shows three times the batch the window's requests decoded at: judged at the
    gauge the engines would look three times too fast. Little's law over the same window
    (tokens per second × TPOT) gives the batch they ran at."""
    spec = _spec()
    tp = plan_service(spec).tensor_parallel_size
    seen = snap(n=2, output_tokens_mean=200.0)  # finished requests' mean, as vLLM reports it
    workload = observed_workload(spec.workload, seen, "observed")
    truth = perf_at(resolve(spec), Conditions(workload=workload), tp).tpot_open_seconds(8.0)
    stepped = seen.model_copy(
        update={"running": 2 * 24.0, "tpot_mean_s": truth, "generation_tps": 2 * 8.0 / truth}
    )
    d = run(spec, stepped, ScalingState(decided_replicas=2, calibration=1.0))
    assert d.calibration == pytest.approx(1.0, abs=1e-3)


# -- properties ------------------------------------------------------------------------------
levels = st.floats(0.0, 1.0)


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    n = draw(st.integers(1, 12))
    return snap(
        n=n,
        kv=draw(levels),
        waiting=draw(st.floats(0, 50)),
        ttft=draw(st.floats(0.01, 10)),
        tpot=draw(st.floats(0.001, 0.2)),
    )


@FAST
@given(snapshots(), st.integers(0, 25), st.floats(0, 1000))
def test_bounds_are_always_respected(s: Snapshot, decided: int, age: float) -> None:
    spec = _spec(scaling={"minReplicas": 2, "maxReplicas": 9})
    d = run(spec, s, ScalingState(decided_replicas=decided, low_since_s=NOW - age))
    assert 2 <= d.replicas <= 9


@FAST
@given(snapshots(), st.floats(0, 0.5), st.floats(0, 20), st.integers(1, 15))
def test_more_pressure_never_fewer_replicas(
    s: Snapshot, dkv: float, dwait: float, decided: int
) -> None:
    spec = _spec()
    state = ScalingState(decided_replicas=decided)
    worse = s.model_copy(
        update={
            "kv_usage_max": min(1.0, (s.kv_usage_max or 0) + dkv),
            "waiting": (s.waiting or 0) + dwait,
        }
    )
    assert run(spec, worse, state).replicas >= run(spec, s, state).replicas


@FAST
@given(st.integers(0, 25), st.floats(0, 5000), st.sampled_from(["none", "empty", "stale"]))
def test_missing_data_never_scales_down(decided: int, age: float, kind: str) -> None:
    spec = _spec()
    floor = plan_service(spec).replicas.total
    bad = {
        "none": None,
        "empty": Snapshot(at=NOW, replicas_reporting=0),
        "stale": snap(at=NOW - 10_000),
    }[kind]
    d = run(spec, bad, ScalingState(decided_replicas=decided, low_since_s=NOW - age))
    assert d.replicas >= min(max(decided, floor), 20)
    assert d.replicas >= floor


@settings(max_examples=int(os.environ.get("TOKENSCALE_HYPOTHESIS_EXAMPLES", "25")), deadline=None)
@given(st.integers(0, 10_000), st.floats(0.05, 0.25))
def test_stationary_noisy_load_does_not_flap(seed: int, noise: float) -> None:
    """Load fixed at `need` replicas' worth; KV usage = 0.75 × need / replicas ± noise."""
    rng = random.Random(seed)
    spec = _spec()
    forecast = plan_service(spec)
    need = forecast.replicas.total + 2
    state = ScalingState(decided_replicas=need)
    changes: list[tuple[float, int]] = []
    replicas = need
    for step in range(240):  # one hour, a decision every 15 s
        now = NOW + 15 * step
        kv = min(1.0, max(0.0, 0.75 * need / replicas + rng.uniform(-noise, noise)))
        d = run(spec, snap(n=replicas, kv=kv, ttft=0.3, tpot=0.01), state, now, forecast)
        if d.replicas != replicas:
            changes.append((now, d.replicas))
        replicas, state = d.replicas, d.state
    window = spec.scaling.policy.scale_down_stabilization_seconds
    for i in range(1, len(changes)):
        went_down_then_up = changes[i - 1][1] < changes[i][1] and (
            i < 2 or changes[i - 2][1] > changes[i - 1][1]
        )
        close = changes[i][0] - changes[i - 1][0] < window
        assert not (close and went_down_then_up), changes
    per_window = max(
        (sum(1 for t, _ in changes if s <= t < s + window) for s, _ in changes), default=0
    )
    assert per_window <= 1, changes
    assert math.isfinite(float(replicas))


def test_prefill_and_decode_calibrate_separately() -> None:
    """Engines whose prefill runs at 60 % of the model while decode is exact: the prefill factor
    moves down, the decode factor stays at 1."""
    spec = _spec()
    r = resolve(spec)
    tp = plan_service(spec).tensor_parallel_size
    seen = snap(n=2, output_tokens_mean=200.0)  # finished requests' mean, as vLLM reports it
    workload = observed_workload(spec.workload, seen, "observed")
    perf = perf_at(r, Conditions(workload=workload), tp, plan_service(spec).max_num_batched_tokens)
    tpot = perf.tpot_open_seconds(8.0)
    prefill = perf.own_ttft_seconds(8.0, 1000.0)  # prompt_tps / request_rate = 1000 tokens
    slow_prefill = seen.model_copy(
        update={
            "tpot_mean_s": tpot,
            "generation_tps": 2 * 8.0 / tpot,
            "ttft_mean_s": prefill / 0.6 + 0.05,
            "queue_mean_s": 0.05,
        }
    )
    d = run(spec, slow_prefill, ScalingState(decided_replicas=2, calibration=1.0))
    assert d.calibration == pytest.approx(1.0, abs=1e-3)
    assert d.prefill_calibration == pytest.approx(0.7 + 0.3 * 0.6, abs=1e-3)
    assert d.state.prefill_calibration == d.prefill_calibration
    # a long queue: the prefill phase is not measured cleanly, the factor holds
    queued = slow_prefill.model_copy(update={"waiting": 40.0})
    remembered = ScalingState(decided_replicas=2, prefill_calibration=0.9, peak_at_s=NOW - 15)
    held = run(spec, queued, remembered)
    assert held.prefill_calibration == pytest.approx(0.9)


def test_a_queue_admitted_slower_than_it_prefills_reads_as_the_admission_time() -> None:
    # the same waiting prompts: behind a fleet that starts 20 requests a second they are a
    # little prefill work; behind one that starts 0.2 a second (a full KV cache or maxNumSeqs:
    # they wait for decodes to finish) they wait waiting ÷ 0.2 s, and that is what queue_s reads
    spec, state = _spec(), ScalingState(decided_replicas=2, backlog_at_s=SEEN)
    fast = run(spec, snap(n=2, waiting=4.0, started_rps=20.0), state)
    slow = run(spec, snap(n=2, waiting=4.0, started_rps=0.2), state)
    q_fast = next(x for x in fast.signals if x.name == "queue_s")
    q_slow = next(x for x in slow.signals if x.name == "queue_s")
    assert q_fast.value is not None
    assert q_slow.value is not None
    assert q_slow.value == pytest.approx(4.0 / 0.2)
    assert q_fast.value < q_slow.value
    assert "observed start rate = 20 s" in (q_slow.basis or "")
    assert q_slow.level == "high"
    assert slow.replicas > fast.replicas
