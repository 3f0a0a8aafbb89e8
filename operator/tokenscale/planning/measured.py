"""Measured capacity from a ``tokenscale bench`` profile (knowledge map: plan capacity and cost
from measured results).

The operating point is the largest ramp concurrency ``c`` whose measured TTFT, TPOT and E2E
P99 meet the spec's SLOs (the knee when no SLO is set); there a replica completes ``r``
requests per second, so a request holds a slot for ``c / r`` seconds (Little's law) — the
throughput and concurrency constraints use these instead of the roofline. KV stays modelled
(the profile does not say how the pool fills at the spec's token mix).

A profile applies to the TP and GPU it was measured on (when it names them); steps with
errors or timeouts are not evidence, nor are steps whose throughput Little's law refuses: a
closed loop of ``c`` requests that each take ``E2E`` seconds completes at most ``c / E2E`` per
second (``LITTLE_SLACK``× allowed for the window's edges), and a step that completed nothing
measured no capacity.
"""

from dataclasses import dataclass

from tokenscale.api.profile import BenchProfile, BenchStep
from tokenscale.api.slo import Slo

TOKEN_MISMATCH_WARN = 0.25
#: How far above ``c / E2E`` a step's measured rate may be before it is not believed.
LITTLE_SLACK = 2.0


@dataclass(frozen=True)
class MeasuredPoint:
    step: BenchStep
    source: str

    @property
    def concurrency(self) -> float:
        return float(self.step.concurrency or 1)

    @property
    def request_s(self) -> float:
        """Seconds a request holds a slot at this concurrency: ``c / completions per s``."""
        return self.concurrency / max(self.step.requests_per_second, 1e-9)


def _meets(step: BenchStep, slo: Slo) -> bool:
    checks = (
        (slo.ttft_p99_seconds, step.ttft_p99_seconds),
        (slo.tpot_p99_seconds, step.tpot_p99_seconds),
        (slo.e2e_p99_seconds, step.e2e_p99_seconds),
    )
    return all(target is None or (v is not None and v <= target) for target, v in checks)


def _implausible(step: BenchStep) -> str | None:
    """Why a step's throughput cannot be what it measured (Little's law), or None."""
    if step.requests_per_second <= 0:
        return f"concurrency {step.concurrency}: 0 req/s"
    e2e = step.e2e_mean_seconds or step.e2e_p50_seconds
    c = step.concurrency or 1
    if e2e and step.requests_per_second * e2e > LITTLE_SLACK * c:
        return (
            f"concurrency {c}: {step.requests_per_second:,.3g} req/s at {e2e:.3g} s per request "
            f"would need {step.requests_per_second * e2e:,.3g} in flight (at most "
            f"{c / e2e:,.3g} req/s)"
        )
    return None


def measured_point(
    profile: BenchProfile | None,
    slo: Slo,
    tp: int,
    gpu_key: str,
    warnings: list[str],
    model_name: str | None = None,
) -> MeasuredPoint | None:
    """The profile's operating point for this TP and GPU, or None (with a warning why)."""
    if profile is None:
        return None
    if profile.tensor_parallel_size not in (None, tp):
        warnings.append(
            f"spec.profile was measured at TP {profile.tensor_parallel_size}, not this plan's "
            f"TP {tp}: not used (this layout is modelled)"
        )
        return None
    if profile.gpu is not None and profile.gpu != gpu_key:
        warnings.append(f"spec.profile was measured on {profile.gpu}, not {gpu_key}: not used")
        return None
    if model_name is not None and profile.model and profile.model != model_name:
        warnings.append(
            f"spec.profile was measured on model {profile.model!r}, not spec.model.name "
            f"{model_name!r}: used as measured; check that the endpoint served this model"
        )
    clean = [s for s in profile.ramp() if not s.errors and not s.timeouts]
    judged = [(s, _implausible(s)) for s in clean]
    refused = [why for _, why in judged if why is not None]
    if refused:
        warnings.append("spec.profile: steps not believed (Little's law): " + "; ".join(refused))
    ramp = [s for s, why in judged if why is None]
    if not ramp:
        warnings.append("spec.profile has no clean ramp step: not used")
        return None
    if slo.any_set:
        meeting = [s for s in ramp if _meets(s, slo)]
        if not meeting:
            warnings.append("spec.profile: no measured concurrency met the SLOs; the model is used")
            return None
        step = max(meeting, key=lambda s: s.concurrency or 0)
        why = "the largest measured concurrency meeting the SLOs"
    else:
        step = profile.step_at(profile.knee_concurrency) or ramp[-1]
        why = "the measured knee"
    return MeasuredPoint(
        step,
        f"measured: {profile.model} at concurrency {step.concurrency} ({why}), "
        f"{step.input_tokens_mean:,.0f} in / {step.output_tokens_mean:,.0f} out tokens",
    )


def token_mismatch(point: MeasuredPoint, input_mean: float, output_mean: float) -> str | None:
    """A warning when the workload's token means are far from what was measured."""
    s = point.step
    off = [
        (label, measured, wanted)
        for label, measured, wanted in (
            ("input", s.input_tokens_mean, input_mean),
            ("output", s.output_tokens_mean, output_mean),
        )
        if wanted > 0 and abs(measured - wanted) / wanted > TOKEN_MISMATCH_WARN
    ]
    if not off:
        return None
    return (
        "spec.profile was measured at "
        + ", ".join(f"{m:,.0f} {label} tokens (workload {w:,.0f})" for label, m, w in off)
        + ": re-run tokenscale bench with the workload's lengths"
    )
