"""PURE: calibration of a prefill/decode service's engines, one factor per role.

The one-pool engine's rule (``scaling/need.py``: predicted ÷ observed, bounded to
``CALIBRATION_BOUNDS``, smoothed with a 29 s half-life), with each role's own timing model:

- **decode**: predicted = a decode-only step (``PerfModel.step_seconds``: no prefill chunk
  shares it) at the window's batch (Little's law: generated tokens/s per engine × TPOT, as
  ``calibrate``), at the decode role's layout and the observed token means; observed = the
  decode pool's exact TPOT mean;
- **prefill**: predicted = the observed mean prompt's own prefill (``PerfModel.prefill_seconds``,
  less the modelled prefix-cache hits) at the prefill role's layout; observed = the prefill
  pool's TTFT mean less its queue mean (the prefill engine runs ``max_tokens=1``: its TTFT is
  queue + prefill); unchanged while prompts queue (over ``PREFILL_QUEUE_LIMIT`` per engine).

A factor below 1 says the engines are slower than modelled: the role's per-replica rate is
multiplied by it (``scaling/roles.py``). ``spec.scaling.policy.calibrate: false`` keeps 1.
"""

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import Conditions, Plan, layout_of, perf_at, resolve
from tokenscale.planning.disaggregation import role_plan
from tokenscale.planning.planner import as_planned
from tokenscale.scaling.need import PREFILL_QUEUE_LIMIT, observed_workload, smoothed
from tokenscale.scaling.snapshot import Snapshot


def role_calibration(
    role: str,
    spec: InferenceServiceSpec,
    plan: Plan,
    snap: Snapshot,
    old: float,
    dt_s: float,
) -> float:
    """The role's factor after this observation (``old`` when nothing can be measured)."""
    if not spec.scaling.policy.calibrate or snap.running is None:
        return old
    n = max(snap.replicas_reporting, 1)
    rp = role_plan(plan, role)
    seen = Conditions(workload=observed_workload(spec.workload, snap, "observed"))
    resolved = as_planned(resolve(spec, plan.name), plan)
    if role == "decode":
        observed = snap.tpot_mean_s
        if observed is None or observed <= 0:
            return old
        batch = snap.running / n
        if snap.generation_tps is not None and snap.generation_tps > 0:
            batch = snap.generation_tps / n * observed
        if batch < 1:
            return old
        predicted = perf_at(resolved, seen, layout_of(rp)).step_seconds(batch)
        return smoothed(old, predicted / observed, dt_s)
    if snap.ttft_mean_s is None or snap.queue_mean_s is None or snap.mean_input_tokens is None:
        return old
    if snap.waiting is not None and snap.waiting / n > PREFILL_QUEUE_LIMIT:
        return old
    observed = snap.ttft_mean_s - snap.queue_mean_s
    if observed <= 0:
        return old
    perf = perf_at(resolved, seen, layout_of(rp), rp.max_num_batched_tokens)
    hit = perf.prefix_cache_hit_rate
    prompt = snap.mean_input_tokens
    predicted = perf.prefill_seconds(prompt * (1.0 - hit), prompt * hit)
    return smoothed(old, predicted / observed, dt_s)
