"""The conditions a plan is asked under: the workload, the engines' measured speed, the
batch-size policy and whether a bench profile applies.

The forecast plan uses the spec's own (:func:`forecast_conditions`); the decision engine asks
the same question with the observed workload and calibration at the TP the fleet runs. Nothing
here edits a spec.
"""

from dataclasses import dataclass, field
from typing import Literal

from tokenscale.api.assumptions import Assumptions
from tokenscale.api.workload import Workload
from tokenscale.planning.resolve import Resolved

KneePolicy = Literal["knee", "slo"]
"""``knee``: operate at min(knee, SLO batch, maxNumSeqs) — the forecast's margin for traffic
nobody has seen. ``slo``: at min(SLO batch, maxNumSeqs) — live, where pressure signals guard the
SLO (with no SLO set the knee still applies)."""


@dataclass(frozen=True)
class Calibration:
    """Measured ÷ modelled engine speed, per phase (1.0: the model is right; 0.8: the engines
    run at 80 % of the modelled speed). Prefill scales the prefill compute efficiency; decode
    scales the decode bandwidth and compute efficiencies and divides the per-step overhead."""

    prefill: float = 1.0
    decode: float = 1.0

    def apply(self, a: Assumptions) -> Assumptions:
        if self.prefill == 1.0 and self.decode == 1.0:
            return a
        return a.model_copy(
            update={
                "decode_bandwidth_efficiency": min(
                    1.0, a.decode_bandwidth_efficiency * self.decode
                ),
                "decode_compute_efficiency": min(1.0, a.decode_compute_efficiency * self.decode),
                "prefill_compute_efficiency": min(1.0, a.prefill_compute_efficiency * self.prefill),
                "step_overhead_seconds": a.step_overhead_seconds / self.decode,
            }
        )


@dataclass(frozen=True)
class Conditions:
    """What a plan is asked under (see the module docstring)."""

    workload: Workload
    calibration: Calibration = field(default_factory=Calibration)
    knee: KneePolicy = "knee"
    use_profile: bool = True
    """Let ``spec.profile`` (a bench measurement) override the modelled operating point."""


def forecast_conditions(resolved: Resolved) -> Conditions:
    """The spec's own question: its workload, no calibration, the knee, its profile."""
    return Conditions(workload=resolved.spec.workload)
