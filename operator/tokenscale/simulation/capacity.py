"""One simulated replica's sustainable rate at the SLO, and the oracle built on it.

**Sustainable rate** μ: the highest Poisson arrival rate at which one replica (the simulated
truth, mismatch included) keeps TTFT P99 and TPOT P99 (and E2E P99 when set) within the SLOs,
with request sizes drawn from the workload's (input, output) pairs. Found by bisection over
the rate; each probe replays ``requests`` requests and ignores the first 20 % as warm-up.

**Oracle** (a lower bound on GPU-hours): hindsight and no cold start — for every
``bin_s``-second bin of the trace, exactly ``max(minReplicas, ceil(λ_bin / μ))`` replicas, as if
every replica ran at its sustainable rate with perfect balancing:
``GPU-hours = Σ replicas_bin × TP × bin_s / 3600``. Bursts inside a bin are ignored, which is
what makes it a bound no real policy reaches.
"""

import math
import random
from collections.abc import Sequence

from tokenscale.api.slo import Slo
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import Replica, ReplicaConfig, SimRequest
from tokenscale.simulation.trace import Trace, percentile, window_rates


def run_one_replica(
    cfg: ReplicaConfig,
    rate_rps: float,
    pairs: Sequence[tuple[int, int]],
    requests: int,
    seed: int,
    prefixes: Sequence[tuple[int, ...]] | None = None,
) -> Recorder:
    """Replay ``requests`` Poisson arrivals at ``rate_rps`` on one replica; returns its record.
    ``prefixes[i]`` (optional) are the prefix-block ids of ``pairs[i]`` (prefix-cache reuse)."""
    rng = random.Random(seed)
    rec = Recorder()
    replica = Replica(cfg, rec, 0.0)
    t = 0.0
    for _ in range(requests):
        t += rng.expovariate(rate_rps)
        i = rng.randrange(len(pairs))
        n_in, n_out = pairs[i]
        replica.run_until(t)
        blocks = prefixes[i] if prefixes is not None else ()
        replica.add(SimRequest(t, n_in, n_out, prefix_blocks=blocks), t)
    replica.run_until(math.inf)
    return rec


def meets_slo(rec: Recorder, slo: Slo, warmup_fraction: float = 0.2) -> bool:
    outs = sorted(rec.outcomes, key=lambda o: o.arrival_s)
    outs = outs[int(len(outs) * warmup_fraction) :]
    if not outs:
        return False
    checks = (
        (slo.ttft_p99_seconds, [o.ttft_s for o in outs]),
        (slo.tpot_p99_seconds, [o.tpot_s for o in outs if o.output_tokens > 1]),
        (slo.e2e_p99_seconds, [o.e2e_s for o in outs]),
    )
    return all(
        target is None or not values or percentile(values, 0.99) <= target
        for target, values in checks
    )


def sustainable_rps(
    cfg: ReplicaConfig,
    slo: Slo,
    pairs: Sequence[tuple[int, int]],
    guess_rps: float,
    requests: int = 1500,
    seed: int = 0,
    rel_precision: float = 0.02,
    prefixes: Sequence[tuple[int, ...]] | None = None,
) -> float:
    """Bisection for μ (module docstring); ``guess_rps`` seeds the bracket (the planner's)."""

    def ok(rate: float) -> bool:
        return meets_slo(run_one_replica(cfg, rate, pairs, requests, seed, prefixes), slo)

    lo, hi = 0.0, max(guess_rps, 0.01)
    while ok(hi):
        lo, hi = hi, hi * 2.0
        if hi > 1e4:
            return lo
    if lo == 0.0:
        lo = hi / 64.0
        if not ok(lo):
            return 0.0
    while hi - lo > rel_precision * hi:
        mid = (lo + hi) / 2.0
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def oracle_gpu_hours(
    trace: Trace,
    capacity_rps: float,
    gpus_per_replica: int,
    min_replicas: int,
    bin_s: float = 60.0,
) -> float:
    if capacity_rps <= 0:
        return math.inf
    replicas = [
        max(min_replicas, math.ceil(rate / capacity_rps - 1e-9))
        for rate in window_rates(trace, bin_s)
    ]
    bins = len(replicas)
    last = trace.duration_s - (bins - 1) * bin_s  # the final bin is partial
    seconds = sum(r * bin_s for r in replicas[:-1]) + replicas[-1] * max(last, 0.0)
    return seconds * gpus_per_replica / 3600.0
