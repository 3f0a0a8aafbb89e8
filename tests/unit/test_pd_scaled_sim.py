"""The simulator runs the operator's per-role policy (``Stepper.step_roles``) on a
disaggregated fleet: a step in long-prompt traffic grows each pool on its own signals, inside
the ratio band, and every request is served."""

import itertools

from tests.unit.test_disaggregated_sim import LONG
from tokenscale.planning import plan_service
from tokenscale.scaling.roles import band, pools
from tokenscale.simulation.disaggregated import engines
from tokenscale.simulation.disaggregated_scaling import replay_scaled
from tokenscale.simulation.workloads import LONG_PROMPT, steady, step


def test_a_step_in_long_prompts_grows_each_pool_on_its_own_signals() -> None:
    plan = plan_service(LONG)
    d, prefill, decode = pools(plan)
    trace = step(5.0, LONG_PROMPT, factor=4.0, before_s=120, hold_s=300, after_s=120, seed=1)
    run = replay_scaled(LONG, plan, engines(LONG, plan), trace)
    assert run.served == run.requests  # nothing lost between the pools
    counts = [(c.prefill, c.decode) for c in run.decisions]
    assert max(p for p, _ in counts) > prefill.replicas
    assert max(n for _, n in counts) > decode.replicas
    limits = band(d.ratio)
    assert limits is not None
    for c in run.decisions:
        assert limits[0] - 1e-9 <= c.prefill / c.decode <= limits[1] + 1e-9, c
    # each role grew on its own need or signals (its own series), not through the other's count
    up = list(itertools.pairwise(run.decisions))
    prefill_ups = [b.prefill_reason for a, b in up if b.prefill > a.prefill]
    decode_ups = [b.decode_reason for a, b in up if b.decode > a.decode]
    own_prefill = ("prefill throughput", "waiting_per_replica", "prompt_load", "prefill_ttft")
    own_decode = ("decode throughput", "decode concurrency", "tpot_p99_s", "kv_usage", "running")
    assert any(any(w in r for w in own_prefill) for r in prefill_ups), prefill_ups
    assert any(any(w in r for w in own_decode) for r in decode_ups), decode_ups
    assert run.meets_slo


def test_each_role_calibrates_against_its_own_timing_model() -> None:
    """Engines as modelled read ~1 on both roles; engines 30 % slower (every step ÷ 0.7) read
    below 0.85 on both, from each pool's own series (decode: TPOT mean; prefill: TTFT less
    queue on the prefill engines)."""
    plan = plan_service(LONG)
    trace = steady(300.0, 10.0, LONG_PROMPT, seed=2)
    for mismatch, lo, hi in ((1.0, 0.85, 1.15), (0.7, 0.5, 0.85)):
        run = replay_scaled(LONG, plan, engines(LONG, plan, mismatch), trace)
        last = run.decisions[-1]
        assert lo <= last.prefill_calibration <= hi, (mismatch, last)
        assert lo <= last.decode_calibration <= hi, (mismatch, last)
