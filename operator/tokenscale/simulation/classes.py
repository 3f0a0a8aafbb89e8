"""Per-class figures of a replay (``spec.workload.classes``): requests are told apart by their
priority alone (the trace's ``priority``), so classes sharing one are one row. Attainment is
against each class's own SLO (``spec.slo`` when it has none; none for a sheddable class); the
run's GPU-hours are split by the input + output tokens each served."""

import math
from collections import Counter
from collections.abc import Sequence

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.slo import Slo
from tokenscale.simulation.recorder import Outcome
from tokenscale.simulation.result import ClassSimResult
from tokenscale.simulation.trace import Trace, percentile


def _meets(o: Outcome, slo: Slo) -> bool:
    return (slo.ttft_p99_seconds is None or o.ttft_s <= slo.ttft_p99_seconds) and (
        slo.tpot_p99_seconds is None or o.output_tokens <= 1 or o.tpot_s <= slo.tpot_p99_seconds
    )


def class_results(
    spec: InferenceServiceSpec,
    trace: Trace,
    outcomes: Sequence[Outcome],
    shed: Sequence[int],
    gpu_hours: float,
) -> list[ClassSimResult]:
    """One row per priority the spec's classes use (empty without classes)."""
    classes = spec.workload.classes or []
    if not classes:
        return []
    arrived = Counter(r.priority for r in trace.requests)
    dropped = Counter(shed)
    served: dict[int, float] = {}
    for o in outcomes:
        served[o.priority] = served.get(o.priority, 0.0) + o.input_tokens + o.output_tokens
    total_tokens = sum(served.values()) or 1.0
    rows = []
    for p in sorted({c.objective_priority for c in classes}, reverse=True):
        mine = [c for c in classes if c.objective_priority == p]
        outs = [o for o in outcomes if o.priority == p]
        n = arrived.get(p, 0)
        promised = [c for c in mine if c.guaranteed]
        slo = (promised[0].slo or spec.slo) if promised else None
        ttft = [o.ttft_s for o in outs]
        e2e = [o.e2e_s for o in outs]
        rows.append(
            ClassSimResult(
                classes="/".join(c.name for c in mine),
                priority=p,
                requests=n,
                completed=len(outs),
                shed=dropped.get(p, 0),
                slo_attainment=(
                    sum(1 for o in outs if _meets(o, slo)) / n if slo is not None and n else None
                ),
                ttft_p99_s=percentile(ttft, 0.99) if ttft else math.nan,
                e2e_p99_s=percentile(e2e, 0.99) if e2e else math.nan,
                gpu_hours=gpu_hours * served.get(p, 0.0) / total_tokens,
            )
        )
    return rows
