"""The simulator runs the operator's per-role policy (``Stepper.step_roles``) on a
disaggregated fleet: a step in long-prompt traffic grows each pool on its own signals, inside
the ratio band, and every request is served."""

import itertools

from tests.unit.test_disaggregated_sim import LONG
from tokenscale.api.inference_service import InferenceService, InferenceServiceSpec
from tokenscale.planning import plan_service
from tokenscale.playground.load import shaped_trace
from tokenscale.playground.service import PD_SPEC, default_spec_path, load_service, spec_mix
from tokenscale.scaling.roles import band, pools
from tokenscale.simulation.disaggregated import engines
from tokenscale.simulation.disaggregated_scaling import replay_scaled
from tokenscale.simulation.fleet import Fleet
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import SimRequest
from tokenscale.simulation.trace import Trace
from tokenscale.simulation.workloads import LONG_PROMPT, steady, step


def test_a_step_in_long_prompts_grows_each_pool_on_its_own_signals() -> None:
    plan = plan_service(LONG)
    d, prefill, decode = pools(plan)
    trace = step(5.0, LONG_PROMPT, factor=4.0, before_s=120, hold_s=300, after_s=120, seed=1)
    run = replay_scaled(LONG, plan, engines(LONG, plan), trace)
    assert run.served == run.requests  # nothing lost between the pools
    counts = [(c.asked["prefill"], c.asked["decode"]) for c in run.timeline]
    assert max(p for p, _ in counts) > prefill.replicas
    assert max(n for _, n in counts) > decode.replicas
    limits = band(d.ratio)
    assert limits is not None
    for p, n in counts:
        assert limits[0] - 1e-9 <= p / n <= limits[1] + 1e-9, (p, n)
    # each role grew on its own need or signals (its own series), not through the other's count
    up = list(itertools.pairwise(run.timeline))
    prefill_ups = [b.reasons["prefill"] for a, b in up if b.asked["prefill"] > a.asked["prefill"]]
    decode_ups = [b.reasons["decode"] for a, b in up if b.asked["decode"] > a.asked["decode"]]
    own_prefill = ("prefill throughput", "waiting_per_replica", "prompt_load", "prefill_ttft")
    own_decode = ("decode throughput", "decode concurrency", "tpot_p99_s", "kv_usage", "running")
    assert any(any(w in r for w in own_prefill) for r in prefill_ups), prefill_ups
    assert any(any(w in r for w in own_decode) for r in decode_ups), decode_ups
    assert run.meets_slo


def test_each_role_calibrates_against_its_own_timing_model() -> None:
    """Engines as modelled read ~1 on both roles; engines 30 % slower (every step ÷ 0.7) read
    below 0.85 on both, from each pool's own series (decode: TPOT mean; prefill: TTFT less
    queue on the prefill engines, at a load where prompts do not wait)."""
    plan = plan_service(LONG)
    trace = steady(300.0, 4.0, LONG_PROMPT, seed=2)
    for mismatch, lo, hi in ((1.0, 0.85, 1.15), (0.7, 0.5, 0.85)):
        run = replay_scaled(LONG, plan, engines(LONG, plan, mismatch), trace)
        last = run.timeline[-1]
        assert lo <= last.calibration["prefill"] <= hi, (mismatch, last)
        assert lo <= last.calibration["decode"] <= hi, (mismatch, last)


def test_prompts_sharing_steps_do_not_read_as_slow_prefill_engines() -> None:
    """Through a ×4 step the prefill engines (exactly as modelled) queue prompts, and a prompt
    that waited shares its first and last steps with its neighbours (vLLM's leftover token
    budget): its prefill phase grows while its engine is no slower. The prefill factor stays
    where the unshared windows put it (it fell to 0.71 when every window counted)."""
    plan = plan_service(LONG)
    trace = step(5.0, LONG_PROMPT, factor=4.0, before_s=120, hold_s=300, after_s=120, seed=1)
    run = replay_scaled(LONG, plan, engines(LONG, plan), trace)
    factors = [c.calibration["prefill"] for c in run.timeline]
    assert min(factors) >= 0.9, factors
    assert max(factors) - min(factors) <= 0.1, factors


def test_the_router_sends_a_prompt_to_an_engine_that_is_free_now() -> None:
    """Two engines with nothing queued: one still runs the step that finishes its last prompt
    (its clock is ahead of now), the other is idle. The prompt goes to the idle one (it went to
    the first listed, and waited there for the step to end)."""
    plan = plan_service(LONG)
    e = engines(LONG, plan)
    fleet = Fleet.one_pool(e.prefill, Recorder(), 1, 0.0, 2)
    fleet.advance(0.0)
    first, second = (m.replica for m in fleet.members)
    fleet.route(SimRequest(0.0, 8000, 1), 0.0)
    fleet.advance(0.01)  # the first engine's step runs to ~0.16 s; its prompt has left the queues
    assert first.load == 0
    assert first.clock > 0.01
    fleet.route(SimRequest(0.01, 8000, 1), 0.01)
    assert second.load == 1
    assert first.load == 0


def _playground_step(high_rps: float) -> tuple[InferenceServiceSpec, Trace]:
    """The playground's P/D spec (Llama-3.1-8B on L4, planned 1 prefill + 2 decode for 1 RPS)
    and the step load ``tokenscale playground --pd --high-rps HIGH`` plays: half the spec's
    mean, HIGH for the middle third of 15 minutes, the spec's own lengths."""
    text = default_spec_path(PD_SPEC).read_text()
    service = load_service(text, PD_SPEC)
    svc = InferenceService.model_validate(service.manifest)
    low = svc.spec.workload.rps.mean / 2
    return svc.spec, shaped_trace("step", 900.0, low, high_rps, mix=spec_mix(service))


def test_a_step_back_to_the_specs_rate_finds_both_pools_at_the_plan() -> None:
    """The quiet first third (0.25 RPS) does not take either pool below the plan's counts for
    the spec's 1 RPS (``workloadSource: max``, the default: the forecast is a floor, as for
    one pool), so the step to 1 RPS meets the SLO with a 60-s cold start as the static plan
    does. Before: the decode pool went 2 → 1 in the quiet spell (its model needed 1 at the
    batch's 1.01 RPS per replica, where the plan's KV binds at 0.68) and the step found it a
    cold start behind: TTFT P99 20.6 s, 91 % of requests within the SLO."""
    spec, trace = _playground_step(1.0)
    plan = plan_service(spec)
    _, prefill, decode = pools(plan)
    assert (prefill.replicas, decode.replicas) == (1, 2)
    run = replay_scaled(spec, plan, engines(spec, plan), trace, cold_start_s=60.0)
    assert run.served == run.requests
    assert min(c.asked["decode"] for c in run.timeline) >= decode.replicas
    assert min(c.asked["prefill"] for c in run.timeline) >= prefill.replicas
    assert run.meets_slo, run.ttft_p99_s
    assert run.slo_attainment >= 0.99


def test_under_workload_source_observed_a_quiet_spell_scales_below_the_plan() -> None:
    """The old behaviour stays one setting away: ``workloadSource: observed`` sizes each role
    on what the metrics show, and the quiet 0.25 RPS takes the decode pool to 1."""
    spec, trace = _playground_step(1.0)
    observed = spec.model_copy(
        update={
            "scaling": spec.scaling.model_copy(
                update={
                    "policy": spec.scaling.policy.model_copy(update={"workload_source": "observed"})
                }
            )
        }
    )
    plan = plan_service(observed)
    quiet = [
        c
        for c in replay_scaled(
            observed, plan, engines(observed, plan), trace, cold_start_s=60.0
        ).timeline
        if c.t_s < 280.0
    ]
    assert min(c.asked["decode"] for c in quiet) == 1
