"""Per-role scaling of a prefill/decode service (``scaling/roles.py``, ``Stepper.step_roles``):
each role moves on its own signals, the coordination rule keeps the ratio in its band, and the
stepper decides once per observation."""

import math
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import spec as make_spec
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import plan_service
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.roles import (
    RATIO_SLACK,
    band,
    binding_rps_per_replica,
    coordinate,
    decide_roles,
    flow_floor,
    pools,
    prefill_waiting_watermarks,
    role_rate_per_replica,
    role_signals,
)
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.scaling.state import ScalingState
from tokenscale.scaling.stepper import Observation, Stepper

EXAMPLES = int(os.environ.get("TOKENSCALE_HYPOTHESIS_EXAMPLES", "40"))
PROMPT, ANSWER = 8000, 200


def _spec(tpot_s: float = 0.03, **scaling: Any) -> InferenceServiceSpec:
    """Llama-3.1-8B on H100, 8k-token prompts and 200-token answers at 20 RPS: ``auto`` runs
    5 prefill + 4 decode replicas (ratio 1.25)."""
    return make_spec(
        hardware={"gpu": "H100-SXM-80GB", "tensorParallelSize": "auto"},
        workload={
            "rps": {"mean": 20.0},
            "inputTokens": {"mean": PROMPT, "p99": 2 * PROMPT},
            "outputTokens": {"mean": ANSWER, "p99": 2 * ANSWER},
            "maxContextTokens": None,
        },
        slo={"ttftP99Seconds": 3.0, "tpotP99Seconds": tpot_s},
        serving={"disaggregation": "auto"},
        scaling={"minReplicas": 1, "maxReplicas": 32, **scaling},
    )


SPEC = _spec()
PLAN = plan_service(SPEC)
P0, D0 = pools(PLAN)[1].replicas, pools(PLAN)[2].replicas
"""The plan's counts: each role holds there at the spec's rate."""


def _snap(at: float, n: int, rps: float, **kw: Any) -> Snapshot:
    """One role's snapshot: ``n`` engines, ``rps`` requests/s reaching their first token."""
    base: dict[str, Any] = {
        "at": at,
        "replicas_reporting": n,
        "waiting": 0.0,
        "running": 2.0 * n,
        "kv_usage_max": 0.3,
        "started_rps": rps,
        "request_rate_rps": rps,
        "prompt_tps": rps * PROMPT,
        "output_tokens_mean": float(ANSWER),
        "ttft_p99_s": 0.5,
        "tpot_p99_s": 0.012,
    }
    base.update(kw)
    return Snapshot(**base)


def _both(at: float, prefill: Snapshot, decode: Snapshot) -> Observation:
    top = decode.model_copy(update={"roles": {"prefill": prefill, "decode": decode}})
    return Observation(at_s=at, snapshot=top)


def _states(p: int, d: int) -> dict[str, ScalingState]:
    return {"prefill": ScalingState(decided_replicas=p), "decode": ScalingState(decided_replicas=d)}


def test_the_plan_runs_two_pools_at_their_ratio() -> None:
    d, prefill, decode = pools(PLAN)
    assert (prefill.replicas, decode.replicas) == (P0, D0) == (5, 4)
    assert d.ratio == pytest.approx(1.25)
    assert band(d.ratio) == pytest.approx((1.25 / RATIO_SLACK, 1.25 * RATIO_SLACK))


def test_prefill_scales_on_its_own_queue_and_prompt_load_while_decode_holds() -> None:
    stepper = Stepper(SPEC, PLAN, 15.0)
    # prompts pile up at the prefill pool: 5 waiting per engine (over the 4 the plan's queue
    # allowance holds at ρ 0.8); the engines prefill 1.2× the prompt tokens/s planned (past the
    # planned utilisation) and finish 20 prompts/s
    _, prefill_pool, _ = pools(PLAN)
    tps = 1.2 * prefill_pool.rps_per_replica * PROMPT * 4
    prefill = _snap(1000.0, 4, 20.0, waiting=20.0, prompt_tps=tps)
    decode = _snap(1000.0, 4, 10.0)  # the decode pool sees what already got through
    step = stepper.step_roles(_states(4, 4), _both(1000.0, prefill, decode), 1000.0)
    assert step.decision is not None
    p, d = step.decision.prefill, step.decision.decode
    assert p.replicas > 4, p.reason
    assert p.cause in (Cause.PRESSURE, Cause.MODEL_NEED)
    assert {s.name for s in p.signals if s.level == "high"} >= {
        "waiting_per_replica",
        "prompt_load",
    }
    assert d.replicas == 4, d.reason  # within the band: the decode pool keeps its count
    assert step.decision.coordination.startswith("within band")


def test_the_queue_the_prefill_plan_allows_is_not_pressure() -> None:
    """The prefill plan runs an engine at ρ = 0.8 and its TTFT allows a queue of ρ/(1 − ρ) = 4
    mean prefills: 3 prompts waiting per engine is the planned operating point, not pressure
    (the one-pool default watermark of 2 read it as high and the playground's prefill pool
    flapped 3 → 2 → 4 → 3). 5 per engine is over it; a higher watermark from the spec wins."""
    _, prefill_pool, _ = pools(PLAN)
    assert prefill_pool.operating_point == pytest.approx(0.8)
    assert prefill_waiting_watermarks(SPEC, prefill_pool.operating_point) == pytest.approx(
        (4.0, 1.0)
    )

    def level(spec: InferenceServiceSpec, waiting: float) -> str:
        snap = _snap(1000.0, 4, 10.0, waiting=waiting)
        sigs = {s.name: s for s in role_signals("prefill", snap, spec, plan_service(spec))}
        return sigs["waiting_per_replica"].level

    assert level(SPEC, 12.0) == "normal"
    assert level(SPEC, 20.0) == "high"
    higher = _spec(policy={"waitingPerReplicaHigh": 6.0})
    assert prefill_waiting_watermarks(higher, 0.8) == pytest.approx((6.0, 0.5))
    assert level(higher, 20.0) == "normal"


def test_decode_scales_on_kv_and_tpot_while_prefill_holds() -> None:
    stepper = Stepper(SPEC, PLAN, 15.0)
    prefill = _snap(1000.0, P0, 10.0)
    decode = _snap(1000.0, D0, 10.0, kv_usage_max=0.97, tpot_p99_s=0.06, running=70.0)
    step = stepper.step_roles(_states(P0, D0), _both(1000.0, prefill, decode), 1000.0)
    assert step.decision is not None
    p, d = step.decision.prefill, step.decision.decode
    assert d.replicas > D0, d.reason
    assert {s.name for s in d.signals if s.level == "high"} == {
        "kv_usage",
        "tpot_p99_s",
        "running_per_replica",
    }
    assert p.replicas == P0, p.reason


def test_the_prefill_signal_is_ttft_less_the_planned_transfer() -> None:
    d, _, _ = pools(PLAN)
    transfer = d.kv_transfer_s or 0.0
    assert transfer > 0
    ttft = next(
        s
        for s in role_signals("prefill", _snap(0.0, 4, 10.0, ttft_p99_s=5.5), SPEC, PLAN)
        if s.name == "prefill_ttft_p99_s"
    )
    assert math.isclose(ttft.high, 3.0 - transfer)
    assert ttft.level == "high"  # its whole bucket, (5, 7.5] s, is over the budget


def test_a_latency_bucket_straddling_the_slo_moves_nothing() -> None:
    """TPOT P99 interpolated at 0.024 s in vLLM's (0.01, 0.025] bucket, SLO 0.02: the true P99
    may be anywhere in it (the simulator's was 13 ms), so the reading is not a breach."""
    spec = _spec(tpot_s=0.02)
    plan = plan_service(spec)
    tpot = next(
        s
        for s in role_signals("decode", _snap(0.0, 4, 10.0, tpot_p99_s=0.024), spec, plan)
        if s.name == "tpot_p99_s"
    )
    assert tpot.level == "normal"
    assert "straddles" in tpot.reason


def test_a_decode_scale_down_never_leaves_prefill_output_nowhere_to_go() -> None:
    """Every decode signal low for longer than the window, but the prefill pool finishes
    prompts at a rate 4 decode replicas are needed for: decode stays at 4. (Sized on what the
    metrics show, ``workloadSource: observed``: under the default the plan's 4 at the spec's
    rate is a floor of its own.)"""
    spec = _spec(policy={"scaleDownStabilizationSeconds": 60, "workloadSource": "observed"})
    plan = plan_service(spec)
    _, _, decode_pool = pools(plan)
    out_rps = 3.5 * decode_pool.rps_per_replica
    assert flow_floor(_snap(0.0, 4, out_rps), decode_pool.rps_per_replica) == 4
    stepper = Stepper(spec, plan, 15.0)
    states = _states(4, 4)
    quiet = {"running": 1.0, "kv_usage_max": 0.05, "tpot_p99_s": 0.005, "started_rps": 0.5}
    for k in range(12):
        t = 1000.0 + 15.0 * k
        prefill = _snap(t, 4, out_rps)
        step = stepper.step_roles(states, _both(t, prefill, _snap(t, 4, 0.5, **quiet)), t)
        assert step.decision is not None
        states = step.states
        assert step.decision.decode.replicas == 4, step.decision.decode.reason
    # without the prefill pool's output the same decode readings scale down
    states = _states(4, 4)
    moved = []
    for k in range(12):
        t = 1000.0 + 15.0 * k
        prefill = _snap(t, 4, 0.5, prompt_tps=0.5 * PROMPT)
        step = stepper.step_roles(states, _both(t, prefill, _snap(t, 4, 0.5, **quiet)), t)
        assert step.decision is not None
        states = step.states
        moved.append(step.decision.decode.replicas)
    assert min(moved) < 4


def test_the_band_raises_the_lagging_role_when_the_other_jumps() -> None:
    """Prefill under heavy pressure jumps by up to maxScaleUpStep; the decode pool, calm on its
    own signals, is raised at once so that prefill ÷ decode stays ≤ 2 × the plan's ratio.
    (``workloadSource: observed``: under the default the plan's 4 at the spec's rate would
    raise decode on its own.)"""
    spec = _spec(policy={"workloadSource": "observed"})
    plan = plan_service(spec)
    stepper = Stepper(spec, plan, 15.0)
    _, prefill_pool, _ = pools(plan)
    tps = 3.0 * prefill_pool.rps_per_replica * PROMPT * 2
    prefill = _snap(1000.0, 2, 10.0, waiting=40.0, prompt_tps=tps)
    decode = _snap(1000.0, 2, 2.0)
    step = stepper.step_roles(_states(2, 2), _both(1000.0, prefill, decode), 1000.0)
    assert step.decision is not None
    p, d = step.decision.prefill.replicas, step.decision.decode.replicas
    assert p == 6  # 2 + maxScaleUpStep 4
    assert d == 3
    assert step.decision.decode.cause == Cause.RATIO
    assert p / d <= RATIO_SLACK


def test_a_blind_role_holds_and_the_other_still_moves() -> None:
    stepper = Stepper(SPEC, PLAN, 15.0)
    decode = _snap(1000.0, D0, 10.0, kv_usage_max=0.97)
    top = decode.model_copy(update={"roles": {"decode": decode}})
    step = stepper.step_roles(_states(P0, D0), Observation(1000.0, top), 1000.0)
    assert step.decision is not None
    assert step.decision.prefill.cause == Cause.BLIND
    assert step.decision.prefill.replicas == P0
    assert step.decision.decode.replicas > D0


def test_the_same_observation_is_decided_once() -> None:
    stepper = Stepper(SPEC, PLAN, 15.0)
    obs = _both(1000.0, _snap(1000.0, 4, 10.0, waiting=12.0), _snap(1000.0, 4, 10.0))
    first = stepper.step_roles(_states(4, 4), obs, 1000.0)
    assert first.engine_ran
    assert first.decision is not None
    again = stepper.step_roles(first.states, obs, 1005.0)
    assert again.decision is None
    assert not again.engine_ran
    assert again.states == first.states


def test_a_pin_runs_on_both_roles() -> None:
    spec = _spec(replicas=3)
    plan = plan_service(spec)
    obs = _both(1000.0, _snap(1000.0, 4, 10.0, waiting=40.0), _snap(1000.0, 4, 10.0))
    d = decide_roles(spec, plan, obs.snapshot.roles, _states(4, 4), 1000.0, 15.0, None)  # type: ignore[union-attr]
    assert (d.prefill.replicas, d.decode.replicas) == (3, 3)
    assert d.prefill.cause == d.decode.cause == Cause.PINNED


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    p=st.integers(1, 40),
    d=st.integers(1, 40),
    ratio=st.floats(0.1, 10.0),
    lo=st.integers(1, 5),
    hi=st.integers(5, 64),
)
def test_coordination_only_raises_stays_in_bounds_and_holds_the_band_when_it_can(
    p: int, d: int, ratio: float, lo: int, hi: int
) -> None:
    spec = _spec(minReplicas=lo, maxReplicas=hi)
    p0, d0 = min(max(p, lo), hi), min(max(d, lo), hi)
    p1, d1, said = coordinate(p0, d0, ratio, spec)
    assert p1 >= p0
    assert d1 >= d0
    assert lo <= p1 <= hi
    assert lo <= d1 <= hi
    b = band(ratio)
    assert b is not None
    inside = b[0] - 1e-9 <= p1 / d1 <= b[1] + 1e-9
    if inside:
        return
    # outside only when the role to raise is at maxReplicas
    assert (p1 / d1 > b[1] and d1 == hi) or (p1 / d1 < b[0] and p1 == hi), said
    assert "outside" in said


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    waiting_p=st.floats(0.0, 50.0),
    kv_d=st.floats(0.0, 1.0),
    running_d=st.floats(0.0, 200.0),
    rps=st.floats(0.0, 60.0),
    p=st.integers(1, 20),
    d=st.integers(1, 20),
)
def test_every_decision_is_within_bounds_and_at_most_one_step_up(
    waiting_p: float, kv_d: float, running_d: float, rps: float, p: int, d: int
) -> None:
    """Whatever the readings: each role within [minReplicas, maxReplicas], never more than
    maxScaleUpStep above its count unless the band raised it, never more than one step down."""
    stepper = Stepper(SPEC, PLAN, 15.0)
    prefill = _snap(1000.0, p, rps, waiting=waiting_p * p)
    decode = _snap(1000.0, d, rps, kv_usage_max=kv_d, running=running_d)
    step = stepper.step_roles(_states(p, d), _both(1000.0, prefill, decode), 1000.0)
    assert step.decision is not None
    s = SPEC.scaling
    for role, was in (("prefill", p), ("decode", d)):
        dec = step.decision.of(role)
        assert s.min_replicas <= dec.replicas <= s.max_replicas
        assert dec.replicas >= was - s.policy.max_scale_down_step
        if dec.cause != Cause.RATIO:
            assert dec.replicas <= was + s.policy.max_scale_up_step
        assert step.states[role].decided_replicas == dec.replicas
        assert step.states[role].observed_at_s == 1000.0


def test_a_bucketed_tpot_reads_low_when_its_bucket_may_be() -> None:
    """TPOT P99 0.022 s interpolated in vLLM's (0.01, 0.025] bucket, SLO 0.03 (low mark
    0.021): the true P99 may be low and cannot breach, so decode may scale down."""
    tpot = next(
        s
        for s in role_signals("decode", _snap(0.0, 4, 10.0, tpot_p99_s=0.022), SPEC, PLAN)
        if s.name == "tpot_p99_s"
    )
    assert tpot.level == "low"
    assert "bucket (0.01, 0.025]" in tpot.reason


def _l4_playground_spec() -> InferenceServiceSpec:
    """The playground's P/D example: Llama-3.1-8B on L4, 3,000-token prompts, 1 RPS peak;
    its decode pool is bound by its KV, not by its batch's rate."""
    return make_spec(
        hardware={"gpu": "L4-24GB", "tensorParallelSize": 1},
        workload={
            "rps": {"mean": 0.5, "peak": 1.0},
            "inputTokens": {"mean": 3000, "p95": 6000, "p99": 8000},
            "outputTokens": {"mean": 150, "p95": 400, "p99": 600},
            "maxContextTokens": 16384,
        },
        slo={"ttftP99Seconds": 4.0, "tpotP99Seconds": 0.10},
        serving={"disaggregation": "on"},
        scaling={"minReplicas": 1, "maxReplicas": 6},
    )


def test_a_role_carries_the_rate_of_its_binding_constraint() -> None:
    """The L4 plan runs 2 decode replicas for 1 RPS because the KV binds (1.52 needed): the
    policy sizes decode at 1 ÷ 1.52 = 0.66 per replica, the rate of the batch the KV pool holds
    (which is also the decode pool's operating batch, limited by the KV pool; at the knee's
    batch, 1.01 per replica, one replica 'carried' the spec's rate, and a quiet spell took the
    pool to 1). Prefill is bound by its throughput: its rate is the plan's."""
    spec = _l4_playground_spec()
    plan = plan_service(spec)
    _, prefill, decode = pools(plan)
    assert decode.binding_constraint == "kv"
    assert decode.replicas == 2
    rate = binding_rps_per_replica(decode, spec)
    assert rate == pytest.approx(1.0 / decode.replicas_needed)
    assert decode.limited_by == "KV pool"
    assert rate <= decode.rps_per_replica
    assert binding_rps_per_replica(prefill, spec) == pytest.approx(prefill.rps_per_replica)


def test_the_forecast_is_a_floor_for_each_role_under_workload_source_max() -> None:
    """A long quiet spell (a quarter of the spec's rate, every signal low): under the default
    ``workloadSource: max`` each role holds the plan's count for the spec's rate, as one pool
    holds its forecast; under ``observed`` decode steps down to what the quiet rate needs."""
    for source, floor in (("max", True), ("observed", False)):
        spec = _l4_playground_spec()
        policy = spec.scaling.policy.model_copy(
            update={"workload_source": source, "scale_down_stabilization_seconds": 60}
        )
        spec = spec.model_copy(
            update={"scaling": spec.scaling.model_copy(update={"policy": policy})}
        )
        plan = plan_service(spec)
        stepper = Stepper(spec, plan, 15.0)
        states = _states(1, 2)
        quiet: dict[str, Any] = {
            "running": 1.0,
            "kv_usage_max": 0.05,
            "ttft_p99_s": 0.4,
            "tpot_p99_s": 0.05,
            "prompt_tps": 0.25 * 3000,
            "output_tokens_mean": 150.0,
        }
        counts = []
        for k in range(20):
            t = 1000.0 + 15.0 * k
            obs = _both(
                t,
                _snap(t, 1, 0.25, **quiet),
                _snap(t, states["decode"].decided_replicas or 1, 0.25, **quiet),
            )
            step = stepper.step_roles(states, obs, t)
            assert step.decision is not None
            states = step.states
            counts.append((step.decision.prefill.replicas, step.decision.decode.replicas))
        if floor:
            assert set(counts) == {(1, 2)}, counts
        else:
            assert counts[-1] == (1, 1), counts


def test_the_flow_floor_counts_prompts_queued_at_both_pools() -> None:
    """The decode pool must carry, besides the prefill pool's output, every prompt waiting at
    the prefill pool and every prefilled prompt waiting for decode KV: within the horizon they
    all reach it. A step that fills both queues raises the floor before the prefill pool's
    output (a rate over minutes) has risen."""
    rate = 0.7
    prefill = _snap(0.0, 1, 0.6, waiting=25.0)
    decode = _snap(0.0, 2, 0.6, waiting=20.0)
    assert flow_floor(prefill, rate) == 1
    assert flow_floor(prefill, rate, decode, 75.0) == math.ceil((0.6 + 45.0 / 75.0) / rate)
    assert flow_floor(prefill, rate, decode, 75.0) > flow_floor(prefill, rate)
    assert flow_floor(None, rate, None, 75.0) == 0


def test_a_backlogged_prefill_pool_raises_decode_in_the_same_decision() -> None:
    """The playground's step as the first observation after it sees it (the simulator's
    readings at 315 s): 25 prompts waiting at the one prefill engine (over its 4), decode's KV
    at 0.81 (over its 0.6 low watermark, under its 0.9 high one) and its arrivals still the quiet
    rate's. Prefill goes 1 → 2 on its queue, and decode is raised at once to what 2 prefill
    engines at their planned rate feed (2 × 1.85 ÷ 0.66 → 6), not a cold start later when
    their output reaches it. Without the queue, or with decode's KV under its low watermark (room
    for the burst), decode is not raised to that: it stays at what the spec's rate needs."""
    spec = _l4_playground_spec()
    plan = plan_service(spec)
    stepper = Stepper(spec, plan, 15.0)
    lengths: dict[str, Any] = {"prompt_tps": 0.6 * 3000, "output_tokens_mean": 150.0}
    for waiting, kv, want in ((25.0, 0.81, True), (0.0, 0.81, False), (25.0, 0.3, False)):
        prefill = _snap(1000.0, 1, 0.6, waiting=waiting, running=1.0, **lengths)
        calm: dict[str, Any] = {"running": 12.0, "kv_usage_max": kv, "tpot_p99_s": 0.07}
        decode = _snap(1000.0, 2, 0.6, **calm, prompt_tps=0.6 * 3000)
        step = stepper.step_roles(_states(1, 2), _both(1000.0, prefill, decode), 1000.0)
        assert step.decision is not None
        p, d = step.decision.prefill, step.decision.decode
        if want:
            assert p.replicas == 2, p.reason
            # each role's planned rate at the lengths its snapshot reads (workloadSource max)
            fed = math.ceil(
                2
                * role_rate_per_replica("prefill", prefill, spec, plan)
                / role_rate_per_replica("decode", decode, spec, plan)
                - 1e-9
            )
            assert d.replicas == min(fed, spec.scaling.max_replicas) > 2, d.reason
            assert "prefill backlogged" in d.reason
        else:
            # not raised to what the backlog feeds: what its own rate needs (the plan's 2, or 3
            # where the engines' TPOT calibration leaves the spec's rate a little over two)
            assert d.replicas <= 3, (p.reason, d.reason)
            assert "prefill backlogged" not in d.reason
