"""The batch a replica's KV pool holds without making the TTFT tail wait for a seat.

The pool holds ``c = capacity ÷ KV tokens of a mean request`` requests at once (per
data-parallel rank: each holds a pool of its own). A request that arrives with every seat taken
waits until one is freed before its prefill starts (in vLLM: it stays waiting, or a running
one is preempted). How often that happens is not set by the mean occupancy alone: the count in
use swings around it, and more so where the steps slow as the batch grows — with 32k-token
prompts a step reads more KV than weights, so when the count runs high every holder finishes
later, and it runs higher still. So the seats in use are a birth–death chain whose completion
rate with ``k`` in use is the replica's own, ``request_rate(k)``
(:func:`~tokenscale.planning.queueing.seat_wait_survival`).

The KV constraint's batch is the largest ``B`` (within the pool's room at its target) at whose
rate ``λ = request_rate(B)`` the share of requests waiting longer than the TTFT objective leaves
for a seat, ``t = TTFT objective − mean TTFT at B``, stays within the objective's tail (1 % at
P99, 5 % at P95). Assumed: Poisson arrivals, exponential holding times at each occupancy, every
request the mean's size (the pool's reserve for one P99 request stays in the room's formula), a
preemption counted as a wait. Without a TTFT objective nothing bounds the wait and the room's
batch stands.

Measured against the fleet simulator (``benchmarks/planner_vs_simulator.py``,
docs/accuracy.md "Waiting for KV").
"""

import math
from dataclasses import dataclass

from tokenscale.api.slo import Slo
from tokenscale.planning.bisect import first_true, last_true
from tokenscale.planning.performance import PerfModel
from tokenscale.planning.queueing import seat_wait_survival

_BISECT_STEPS = 40


@dataclass(frozen=True)
class KvWait:
    """The batch the seat wait allows, and why."""

    batch: float
    seats_per_rank: int
    rps: float
    wait_budget_s: float
    tail: float
    budgets: tuple[tuple[float, float], ...]
    """(seconds the TTFT objective leaves for a seat, tail share) per objective, at the pool's
    room: what a fleet's replicas are sized against (:func:`fleet_replicas`)."""

    def describe(self, ranks: int) -> str:
        per = "per rank " if ranks > 1 else ""
        return (
            f"{self.seats_per_rank:,} mean requests fit the pool {per}at once; past batch "
            f"{self.batch:,.1f} ({self.rps:,.3g} RPS) more than {self.tail:.0%} would wait over "
            f"the {self.wait_budget_s:,.2f} s the TTFT objective leaves for a seat"
        )


def _rank_rate(perf: PerfModel, ranks: int, k: int) -> float:
    """Requests per second one data-parallel rank completes with ``k`` of its seats in use
    (every rank alike)."""
    return perf.request_rate(float(k * ranks)) / ranks if k > 0 else 0.0


def _objectives(slo: Slo) -> list[tuple[float, float]]:
    """(TTFT objective s, tail share) for each TTFT objective set."""
    out: list[tuple[float, float]] = []
    if slo.ttft_p99_seconds is not None:
        out.append((slo.ttft_p99_seconds, 0.01))
    if slo.ttft_p95_seconds is not None:
        out.append((slo.ttft_p95_seconds, 0.05))
    return out


def kv_wait_batch(
    perf: PerfModel,
    slo: Slo,
    seats: float,
    ranks: int,
    upper: float,
    mean_prompt_tokens: float,
) -> KvWait | None:
    """The largest batch ≤ ``upper`` whose seat wait meets every TTFT objective (module
    docstring); None when ``upper`` already does, or no TTFT objective is set. ``seats``: mean
    requests the pool holds per rank; ``ranks``: data-parallel ranks, each a pool of its own
    fed its share of the batch."""
    objectives = _objectives(slo)
    whole = math.floor(seats)
    if not objectives or upper <= 0 or whole < 1:
        return None

    def completion_rps(k: int) -> float:
        return _rank_rate(perf, ranks, k)

    def budget_s(batch: float, objective_s: float) -> float:
        return objective_s - perf.ttft_seconds(batch, mean_prompt_tokens)

    def excess(batch: float) -> float:
        """The worst objective's waiting share over its tail (≤ 0: met)."""
        rps = perf.request_rate(batch) / ranks
        return max(
            seat_wait_survival(budget_s(batch, objective), whole, rps, completion_rps) - tail
            for objective, tail in objectives
        )

    if excess(upper) <= 0:
        return None
    batch = max(last_true(lambda b: excess(b) <= 0, 0.0, upper, _BISECT_STEPS, 1e-3), 1e-6)
    above = min(upper, batch * (1 + 1e-3))  # a batch the wait does not allow
    rps_above = perf.request_rate(above) / ranks

    def over(o: tuple[float, float]) -> float:
        return seat_wait_survival(budget_s(above, o[0]), whole, rps_above, completion_rps) - o[1]

    objective, tail = max(objectives, key=over)  # the one the next batch up breaks
    rps = perf.request_rate(batch)
    budgets = tuple((budget_s(upper, o), share) for o, share in objectives)
    return KvWait(batch, whole, rps, budget_s(batch, objective), tail, budgets)


def fleet_replicas(perf: PerfModel, wait: KvWait, ranks: int, design_rps: float) -> float:
    """Replicas whose pooled seats keep the TTFT tail from waiting for one at ``design_rps``.

    A load-aware gateway sends each request to the least-loaded replica (the fleet
    simulator's routing), so a request waits only when every replica's pool is full: the
    fleet's ``N·c`` seats are one chain, completing at ``N·request_rate(k/N)`` with ``k`` in
    use (the holders spread evenly). Pooled, the swings are relatively smaller, and a fleet
    carries more per replica than one replica alone: up to one replica's limit
    (``wait.rps``) the need is ``λ ÷ wait.rps``; past it the smallest ``N`` (bisected, to
    0.1 %) whose chain meets every objective. A plain Service's round-robin split is not
    modelled apart (its arrivals are more regular than a Poisson share, less pooled than
    this)."""
    if design_rps <= wait.rps:
        return design_rps / wait.rps if wait.rps > 0 else 0.0

    def met(n: float) -> bool:
        lanes = n * ranks
        seats = math.floor(lanes * wait.seats_per_rank)

        def completion_rps(k: int) -> float:
            x = k / lanes
            whole = math.floor(x)
            low = _rank_rate(perf, ranks, whole)
            return lanes * (low + (x - whole) * (_rank_rate(perf, ranks, whole + 1) - low))

        return all(
            seat_wait_survival(budget, seats, design_rps, completion_rps) <= tail
            for budget, tail in wait.budgets
        )

    lo, hi = 1.0, 2.0
    while not met(hi):
        lo, hi = hi, hi * 2.0
        if hi > 1e6:
            return hi
    return first_true(met, lo, hi, _BISECT_STEPS, 1e-3)
