"""One simulated replica's sustainable rate at the SLO, and the oracle built on it.

**Sustainable rate** μ: the highest Poisson arrival rate at which one replica (the simulated
truth, mismatch included) keeps TTFT P99 and TPOT P99 (and E2E P99 when set) within the SLOs,
with request sizes drawn from the workload's (input, output) pairs — or, for a trace with
prefix blocks (Mooncake's ``hash_ids``), consecutive runs of its requests with their blocks,
so the prefix cache sees the trace's own reuse. Found by bisection over
the rate; each probe replays ``max(requests, rate × MIN_REPLAY_S)`` requests (at most
``MAX_REPLAY_REQUESTS``) and ignores the first 20 % as warm-up. The floor on the replay's
length is what makes μ a *sustainable* rate: a replica above it first fills its batch and
its KV pool (about a request's lifetime, ~14 s for 1k-token conversations on an H100) and only
then builds a queue, so a replay of ~40 s passes rates it cannot hold — with 1500 requests,
Llama-3.1-8B on one H100 with conversation sizes (TTFT 3 s, TPOT 80 ms) "sustained" 35 req/s;
with 300 s of arrivals it holds 30 and misses 31 (TTFT P99 8.7 s), as with 600 and 1200 s.

**Oracle** (a lower bound on GPU-hours): hindsight and no cold start — for every
``bin_s``-second bin of the trace, exactly ``max(minReplicas, 1, ceil(λ_bin / μ))`` replicas, as if
every replica ran at its sustainable rate with perfect balancing:
``GPU-hours = Σ replicas_bin × TP × bin_s / 3600``. Bursts inside a bin are ignored, which is
what makes it a bound no real policy reaches — and why the allocation is also replayed in
the simulator (policy ``oracle``): inside a bursty minute it can miss the SLO, and a ratio to
a yardstick that misses is no yardstick.

**Replay-verified oracle** (``SimOptions.oracle_repair_rounds`` > 0, what ``tokenscale
simulate`` and the autoscaling benchmark use, ``run.verified_oracle``): the formula's
allocation, replayed; every bin whose arrivals met the SLO less than
``spec.scaling.targetAttainment`` of the time gets one more replica; replayed again, up to the
given rounds, and the schedule it returns is always one it replayed (its attainment is
reported with it). Still hindsight with no cold start, but now the fewest replicas per minute
(greedily) that meet the target minute by minute: the yardstick a real policy is fairly
compared with. The formula's figure stays in ``oracle_formula_gpu_hours``.

**Lead-time oracle** (policy ``oracle-lead-time``, ``lead_time_oracle_gpu_hours``): the same
per-bin need ``s_b``, known in hindsight, but obeying the cold start ``c``: every replica a bin
adds is asked for ``c`` seconds before the bin starts and holds its GPUs from then. At time
``t`` it asks for

    R(t) = max(s_bin(t), max{ s_b : t < b × bin_s ≤ t + c })

— the bin's own need and that of every bin starting within one cold start — and its GPU-hours
are ``∫ R(t) dt × TP / 3600`` over the trace. A replica is released when no bin within one
cold start needs it (holding it through a dip shorter than ``c`` is then cheaper than starting
it again, and ``R`` does exactly that). With ``c = 0`` it is the oracle itself; it is the
fewest GPU-hours any policy that knew the future but had to start pods could spend.
"""

import math
import random
from collections.abc import Sequence
from itertools import pairwise

from tokenscale.api.slo import Slo
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import Replica, ReplicaConfig, SimRequest
from tokenscale.simulation.trace import Trace, percentile, window_rates

MIN_REPLAY_S = 300.0
"""Seconds of arrivals a capacity probe replays at least (module docstring)."""
WARMUP_FRACTION = 0.2
"""The share of a probe's first requests its SLO test ignores (:func:`meets_slo`)."""
GIVE_UP_EVERY = 200
"""Arrivals between two checks of whether a probe has surely failed (:class:`_Misses`)."""
MAX_REPLAY_REQUESTS = 20_000
"""Cap on one probe's requests (the bracket doubles the rate while probes pass)."""


def run_one_replica(
    cfg: ReplicaConfig,
    rate_rps: float,
    pairs: Sequence[tuple[int, int]],
    requests: int,
    seed: int,
    prefixes: Sequence[tuple[int, ...]] | None = None,
    in_order: bool = False,
    adapters: Sequence[int] | None = None,
) -> Recorder:
    """Replay ``requests`` Poisson arrivals at ``rate_rps`` on one replica; returns its record.
    ``prefixes[i]`` (optional) are the prefix-block ids of ``pairs[i]`` (prefix-cache reuse);
    ``in_order`` takes consecutive requests from a seeded start instead of random ones (a
    trace's prefix reuse is local in time); ``adapters[i]`` (optional) the LoRA adapter of
    ``pairs[i]``."""
    rec = Recorder()
    _replay(cfg, rate_rps, pairs, requests, seed, prefixes, in_order, adapters, rec, None)
    return rec


def _replay(
    cfg: ReplicaConfig,
    rate_rps: float,
    pairs: Sequence[tuple[int, int]],
    requests: int,
    seed: int,
    prefixes: Sequence[tuple[int, ...]] | None,
    in_order: bool,
    adapters: Sequence[int] | None,
    rec: Recorder,
    give_up: "_Misses | None",
) -> bool:
    """:func:`run_one_replica` into ``rec``; False, stopping there, as soon as ``give_up``
    says the replay surely misses its SLO (the rest of an overloaded replica's growing
    queue is then not simulated), else True."""
    rng = random.Random(seed)
    replica = Replica(cfg, rec, 0.0)
    t = 0.0
    start = rng.randrange(len(pairs))
    for k in range(requests):
        t += rng.expovariate(rate_rps)
        i = (start + k) % len(pairs) if in_order else rng.randrange(len(pairs))
        n_in, n_out = pairs[i]
        replica.run_until(t)
        if give_up is not None and give_up.surely_missed(k, t, replica, rec):
            return False
        blocks = prefixes[i] if prefixes is not None else ()
        adapter = adapters[i] if adapters is not None else -1
        replica.add(SimRequest(t, n_in, n_out, prefix_blocks=blocks, adapter=adapter), t)
    replica.run_until(math.inf)
    return True


class _Misses:
    """Whether a probe must fail :func:`meets_slo` however it ends: more than 1 % of the
    requests past the warm-up are already over one P99 target — finished over it, or still
    waiting for a first token past the TTFT target — so that target's nearest-rank P99 is
    over it too (a share of the counted requests; fewer counted only lowers the bar). Counted
    incrementally, every :data:`GIVE_UP_EVERY` arrivals."""

    def __init__(self, slo: Slo, requests: int) -> None:
        self.slo = slo
        self.warm = int(requests * WARMUP_FRACTION)
        self.budget = 0.01 * (requests - self.warm)
        self.warm_s = math.inf
        self.seen = 0
        self.ttft = self.tpot = self.e2e = 0

    def surely_missed(self, k: int, now_s: float, replica: Replica, rec: Recorder) -> bool:
        if k == self.warm:
            self.warm_s = now_s  # this request is the first past the warm-up
        if k <= self.warm or k % GIVE_UP_EVERY:
            return False
        ttft, tpot, e2e = (
            self.slo.ttft_p99_seconds,
            self.slo.tpot_p99_seconds,
            self.slo.e2e_p99_seconds,
        )
        for o in rec.outcomes[self.seen :]:
            if o.arrival_s >= self.warm_s:
                self.ttft += ttft is not None and o.ttft_s > ttft
                self.tpot += tpot is not None and o.output_tokens > 1 and o.tpot_s > tpot
                self.e2e += e2e is not None and o.e2e_s > e2e
        self.seen = len(rec.outcomes)
        waiting = 0
        if ttft is not None:
            waiting = sum(
                1
                for r in replica.waiting
                if r.arrival_s >= self.warm_s and now_s - r.arrival_s > ttft
            )
        return max(self.ttft + waiting, self.tpot, self.e2e) > self.budget


def p99_checks(
    rec: Recorder, slo: Slo, warmup_fraction: float = WARMUP_FRACTION
) -> list[tuple[str, float, float]] | None:
    """(name, simulated P99, target) for each P99 objective set, the first ``warmup_fraction``
    of the requests (by arrival) left out; None when no request is left."""
    outs = sorted(rec.outcomes, key=lambda o: o.arrival_s)
    outs = outs[int(len(outs) * warmup_fraction) :]
    if not outs:
        return None
    checks = (
        ("ttft_p99", slo.ttft_p99_seconds, [o.ttft_s for o in outs]),
        ("tpot_p99", slo.tpot_p99_seconds, [o.tpot_s for o in outs if o.output_tokens > 1]),
        ("e2e_p99", slo.e2e_p99_seconds, [o.e2e_s for o in outs]),
    )
    return [
        (name, percentile(values, 0.99), target)
        for name, target, values in checks
        if target is not None and values
    ]


def meets_slo(rec: Recorder, slo: Slo, warmup_fraction: float = WARMUP_FRACTION) -> bool:
    checks = p99_checks(rec, slo, warmup_fraction)
    return checks is not None and all(p99 <= target for _, p99, target in checks)


def sustainable_rps(
    cfg: ReplicaConfig,
    slo: Slo,
    pairs: Sequence[tuple[int, int]],
    guess_rps: float,
    requests: int = 1500,
    seed: int = 0,
    rel_precision: float = 0.02,
    prefixes: Sequence[tuple[int, ...]] | None = None,
    in_order: bool = False,
    adapters: Sequence[int] | None = None,
) -> float:
    """Bisection for μ (module docstring); ``guess_rps`` seeds the bracket (the planner's)."""

    def ok(rate: float) -> bool:
        n = min(max(requests, math.ceil(rate * MIN_REPLAY_S)), max(requests, MAX_REPLAY_REQUESTS))
        rec = Recorder()
        done = _replay(
            cfg, rate, pairs, n, seed, prefixes, in_order, adapters, rec, _Misses(slo, n)
        )
        return done and meets_slo(rec, slo)

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


def oracle_replicas(
    trace: Trace, capacity_rps: float, min_replicas: int, bin_s: float = 60.0
) -> list[int]:
    """The oracle's allocation: ``max(minReplicas, 1, ceil(λ_bin / μ))`` per bin."""
    floor = max(min_replicas, 1)
    return [
        max(floor, math.ceil(rate / capacity_rps - 1e-9)) for rate in window_rates(trace, bin_s)
    ]


def oracle_gpu_hours(
    trace: Trace,
    capacity_rps: float,
    gpus_per_replica: int,
    min_replicas: int,
    bin_s: float = 60.0,
) -> float:
    if capacity_rps <= 0:
        return math.inf
    replicas = oracle_replicas(trace, capacity_rps, min_replicas, bin_s)
    return schedule_gpu_hours(replicas, trace.duration_s, gpus_per_replica, bin_s)


def schedule_gpu_hours(
    replicas: Sequence[int], duration_s: float, gpus_per_replica: int, bin_s: float
) -> float:
    """GPU-hours of a per-bin allocation over a trace of ``duration_s`` (last bin partial)."""
    bins = len(replicas)
    last = duration_s - (bins - 1) * bin_s
    seconds = sum(r * bin_s for r in replicas[:-1]) + replicas[-1] * max(last, 0.0)
    return seconds * gpus_per_replica / 3600.0


def lead_time_replicas_at(
    schedule: Sequence[int], bin_s: float, lookahead_s: float, t: float
) -> int:
    """``R(t)`` of the lead-time oracle (module docstring) with ``c = lookahead_s``."""
    last = len(schedule) - 1
    here = min(last, max(0, int(t // bin_s)))
    need = schedule[here]
    b = here + 1
    while b <= last and b * bin_s <= t + lookahead_s:
        need = max(need, schedule[b])
        b += 1
    return need


def lead_time_gpu_hours(
    schedule: Sequence[int],
    duration_s: float,
    gpus_per_replica: int,
    bin_s: float,
    cold_start_s: float,
) -> float:
    """``∫ R(t) dt × TP / 3600`` over ``[0, duration_s]``: exact, as ``R`` is constant between
    the bin starts and the moments one cold start before them."""
    cuts = {0.0, duration_s}
    for b in range(1, len(schedule)):
        for x in (b * bin_s, b * bin_s - cold_start_s):
            if 0.0 < x < duration_s:
                cuts.add(x)
    edges = sorted(cuts)
    seconds = 0.0
    for lo, hi in pairwise(edges):
        mid = (lo + hi) / 2.0  # R is constant inside each piece
        seconds += lead_time_replicas_at(schedule, bin_s, cold_start_s, mid) * (hi - lo)
    return seconds * gpus_per_replica / 3600.0
