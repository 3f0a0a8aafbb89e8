"""One replayed fleet of several pools summed up into the one result, :class:`FleetRun`."""

import math
from collections.abc import Sequence

from tokenscale.api.slo import Slo
from tokenscale.simulation.fleet import Fleet
from tokenscale.simulation.loop import LoopEnd
from tokenscale.simulation.recorder import Outcome
from tokenscale.simulation.result import FleetRun, PoolRun, PoolsPoint
from tokenscale.simulation.trace import Trace, percentile


def meets(o: Outcome, slo: Slo) -> bool:
    """One request met the TTFT and TPOT SLOs (a one-token answer has no TPOT)."""
    return (slo.ttft_p99_seconds is None or o.ttft_s <= slo.ttft_p99_seconds) and (
        slo.tpot_p99_seconds is None or o.output_tokens <= 1 or o.tpot_s <= slo.tpot_p99_seconds
    )


def summarize(
    fleet: Fleet,
    end: LoopEnd,
    trace: Trace,
    slo: Slo,
    *,
    policy: str,
    peak: dict[str, int],
    asked_end: dict[str, int],
    events: int,
    marked: list[tuple[float, str, str]],
    timeline: list[PoolsPoint],
    served_by: Sequence[int] | None = None,
    attainment: Sequence[float] | None = None,
    meets_p99: bool | None = None,
) -> FleetRun:
    """The run's figures; what the requests saw is the record of the pools ``served_by``
    (every pool when None: a mix; the decode pool of prefill/decode pools, where the answers
    come from), each pool's attainment over its own record unless ``attainment`` gives it."""
    served = range(len(fleet.engines)) if served_by is None else served_by
    outs = [o for i in served for o in fleet.recs[i].outcomes]
    total = len(trace.requests)
    by_pool = [s / 3600.0 for s in end.gpu_seconds_by_pool]
    used = [e for e, h in zip(fleet.engines, by_pool, strict=True) if h > 0]
    priced = all(e.gpu_hour_price is not None for e in used)
    cost = sum(h * (e.gpu_hour_price or 0.0) for e, h in zip(fleet.engines, by_pool, strict=True))
    pools = [
        PoolRun(
            name=e.name,
            gpu_hours=by_pool[i],
            replicas_max=peak[e.name],
            replicas_end=asked_end[e.name],
            requests=fleet.routed[i],
            attainment=(
                attainment[i]
                if attainment is not None
                else _share(fleet.recs[i].outcomes, slo, fleet.routed[i])
            ),
        )
        for i, e in enumerate(fleet.engines)
    ]
    ttfts = [o.ttft_s for o in outs]
    tpots = [o.tpot_s for o in outs if o.output_tokens > 1]
    return FleetRun(
        policy=policy,
        routing=fleet.routing,
        requests=total,
        rejected=fleet.rejected,
        unfinished=-1 if end.gave_up else fleet.in_flight(),
        slo_attainment=sum(1 for o in outs if meets(o, slo)) / total if total else 1.0,
        ttft_p99_s=percentile(ttfts, 0.99) if ttfts else math.nan,
        tpot_p99_s=percentile(tpots, 0.99) if tpots else math.nan,
        gpu_hours=sum(by_pool),
        cost=cost if priced else None,
        duration_s=trace.duration_s,
        pools=pools,
        scale_events=events,
        served=len(outs),
        meets_slo=meets_p99,
        marked=marked,
        timeline=timeline,
    )


def _share(outs: Sequence[Outcome], slo: Slo, routed: int) -> float:
    return sum(1 for o in outs if meets(o, slo)) / routed if routed else 1.0
