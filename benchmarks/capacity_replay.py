"""One simulated replica at increasing load, replayed for increasing lengths: when is a rate
sustainable?

The autoscaling suite's ``step`` shape (Llama-3.1-8B on one H100, conversation sizes, TTFT
3 s / TPOT 80 ms): for each replay length and Poisson rate, ``run_one_replica`` (seed 1) and the
TTFT / TPOT P99 over the requests after the first 20 % (``meets_slo``'s warm-up), beside the
planner's SLO-batch rate per replica (``plan_at``, ``knee="slo"``: what the live engine asks)
and the forecast's knee rate. Also ``sustainable_rps`` as the simulator now runs it (at least
``MIN_REPLAY_S`` of arrivals per probe). Figures are reported, not asserted.

    python -m benchmarks.capacity_replay [--rates 29 30 31 32 35] [--seconds 40 120 300 600]
"""

import argparse
import sys

from benchmarks.autoscaling import SUITE
from tokenscale.planning import Conditions, plan_at, plan_service, resolve
from tokenscale.simulation.capacity import meets_slo, run_one_replica, sustainable_rps
from tokenscale.simulation.replica import replica_config
from tokenscale.simulation.trace import percentile


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", type=float, nargs="+", default=[29.0, 30.0, 31.0, 32.0, 35.0])
    ap.add_argument("--seconds", type=float, nargs="+", default=[40.0, 120.0, 300.0, 600.0])
    args = ap.parse_args()
    entry = next(e for e in SUITE if e.name == "step")
    trace, spec = entry.build()
    pairs = [(r.input_tokens, r.output_tokens) for r in trace.requests]
    resolved = resolve(spec, "suite")
    live = plan_at(resolved, Conditions(workload=spec.workload, knee="slo"), 1)
    forecast = plan_service(spec, "suite")
    print(
        f"planner, SLO batch (live engine): {live.design_rps / live.sized.needed:.1f} req/s per "
        f"replica ({live.binding_constraint}-bound, batch {live.operating_batch:.0f}); "
        f"forecast at the knee: {forecast.rps_per_replica:.1f} req/s "
        f"({forecast.binding_constraint}-bound, batch {forecast.operating_batch:.0f})"
    )
    cfg = replica_config(spec, live, prefix_block_tokens=512)
    for seconds in args.seconds:
        cells = []
        for rate in args.rates:
            rec = run_one_replica(cfg, rate, pairs, max(100, round(rate * seconds)), seed=1)
            outs = sorted(rec.outcomes, key=lambda o: o.arrival_s)
            outs = outs[int(0.2 * len(outs)) :]
            ttft = percentile([o.ttft_s for o in outs], 0.99)
            tpot = percentile([o.tpot_s for o in outs if o.output_tokens > 1], 0.99)
            verdict = "ok" if meets_slo(rec, spec.slo) else "MISS"
            cells.append(f"{rate:g}: {verdict} TTFT {ttft:.2f} s TPOT {tpot * 1000:.0f} ms")
        print(f"{seconds:>6.0f} s of arrivals | " + " | ".join(cells), flush=True)
    mu = sustainable_rps(cfg, spec.slo, pairs, live.rps_per_replica, 1500, seed=1)
    print(f"sustainable_rps (as the simulator runs it): {mu:.1f} req/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
