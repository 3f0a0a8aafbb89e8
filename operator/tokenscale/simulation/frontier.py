"""The static frontier: every fixed fleet from 1 replica to best static, beside one run.

A fixed fleet of ``k`` replicas costs ``k × TP × duration`` GPU-hours whatever happens, so
the question for an autoscaled run is whether some ``k`` gives at least its attainment for
no more GPU-hours, or meets ``spec.scaling.targetAttainment`` for fewer: then the run is
**dominated by a fixed fleet of k** (the smallest such ``k``); else it is **on the
frontier**.

The work is bounded: each fleet below best static is replayed (``run.static_fleet``,
cached with best static's own probes) only until its misses show it cannot matter — a
fleet no dearer than the run stops once it is below both the run's attainment and the
target, a dearer one once it is below the target (it can dominate nothing; shown for the
curve). A stopped replay's attainment is an upper bound (``complete`` false). Overloaded
small fleets miss fast, so they stop within the trace's first bursts; at most
``best static − 1`` replays, the last ones the longest.
"""

from tokenscale.simulation.result import Frontier, FrontierPoint, SimResult
from tokenscale.simulation.run import Progress, Setup, best_static, static_fleet


def static_frontier(setup: Setup, ours: SimResult, progress: Progress | None = None) -> Frontier:
    """``ours`` (one autoscaled run of ``setup``) against every fixed fleet up to best static."""
    target = setup.target
    best = best_static(setup)
    top = best.static_replicas or 1
    total = len(setup.trace.requests)
    per_replica_h = setup.forecast.gpus_per_replica * setup.trace.duration_s / 3600.0
    points: list[FrontierPoint] = []
    for k in range(1, top):
        if progress is not None:
            progress(k / top)
        cost = k * per_replica_h
        floor = min(ours.slo_attainment, target) if cost <= ours.gpu_hours else target
        give_up = int((1.0 - floor) * total)  # as best_static: its probes are reused
        r = static_fleet(setup, k, give_up)
        complete = r.unfinished >= 0
        points.append(
            FrontierPoint(
                replicas=k,
                gpu_hours=cost,
                slo_attainment=r.slo_attainment if complete else (total - give_up - 1) / total,
                complete=complete,
            )
        )
    points.append(
        FrontierPoint(
            replicas=top,
            gpu_hours=best.gpu_hours,
            slo_attainment=best.slo_attainment,
            complete=best.unfinished >= 0,
        )
    )
    dominated = next((p.replicas for p in points if _dominates(p, ours, target)), None)
    return Frontier(
        target_attainment=target,
        best_static_replicas=top,
        points=points,
        dominated_by=dominated,
        verdict="on the frontier"
        if dominated is None
        else f"dominated by a fixed fleet of {dominated}",
    )


def _dominates(p: FrontierPoint, ours: SimResult, target: float) -> bool:
    """At least ``ours``' attainment for no more GPU-hours, or the target for fewer."""
    if not p.complete:
        return False
    eps = 1e-9
    cheaper_or_same = p.gpu_hours <= ours.gpu_hours * (1 + eps)
    if cheaper_or_same and p.slo_attainment >= ours.slo_attainment - eps:
        return True
    return p.gpu_hours < ours.gpu_hours * (1 - eps) and p.slo_attainment >= target - eps
