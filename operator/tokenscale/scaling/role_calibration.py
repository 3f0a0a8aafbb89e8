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
  queue + prefill), **only from a window whose prompts did not wait**: a queue mean over
  ``PREFILL_SHARED_QUEUE`` × the predicted prefill holds the factor. vLLM's prefill phase
  (first scheduled step to first token) is a prompt's own prefill only while it has the steps
  to itself: a prompt that waited for a busy engine is admitted into the leftover token budget
  of the step that finishes the prompt ahead, and the prompt behind it into the leftover of
  its own last step, so each shared step's time counts in both phases. In the simulator at
  engines exactly as modelled the phase read 1.06× its unshared value with a queue mean 10 % of
  the predicted prefill, and 1.29× at 44 % (×4 step, ``benchmarks/pd_scaling.py``), which read
  as engines up to 27 % slow; with no queue the phase is the prompt's own. The instantaneous
  waiting gauge does not tell: it read 0–1 per engine through that step.

A factor below 1 says the engines are slower than modelled: the role's per-replica rate is
multiplied by it (``scaling/roles.py``). ``spec.scaling.policy.calibrate: false`` keeps 1.
"""

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import Conditions, Plan, layout_of, perf_at, resolve
from tokenscale.planning.disaggregation import role_plan
from tokenscale.planning.planner import as_planned
from tokenscale.scaling.need import observed_workload, smoothed
from tokenscale.scaling.snapshot import Snapshot

PREFILL_SHARED_QUEUE = 0.05
"""The window's queue mean, as a share of the predicted prefill, above which prompts shared
steps (module docstring) and the prefill factor holds: prompts waited, and the time a prompt
shares a step with another is at most about its wait (the simulator's fleet: 0.6–0.7 × the
queue mean; one engine: 0.4–1.1 ×), so the phase read below it is within ~5 % of the prompt's
own."""


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
    observed = snap.ttft_mean_s - snap.queue_mean_s
    if observed <= 0:
        return old
    perf = perf_at(resolved, seen, layout_of(rp), rp.max_num_batched_tokens)
    hit = perf.prefix_cache_hit_rate
    prompt = snap.mean_input_tokens
    predicted = perf.prefill_seconds(prompt * (1.0 - hit), prompt * hit)
    if snap.queue_mean_s > PREFILL_SHARED_QUEUE * predicted:
        return old  # prompts waited: their phases hold shared steps, not their engine's speed
    return smoothed(old, predicted / observed, dt_s)
