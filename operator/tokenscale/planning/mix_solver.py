"""The cheapest mix of GPU variants that carries a load: a small integer program (HiGHS).

Variables: ``n_v``, the replicas of variant ``v``, integers in ``[0, maxReplicas_v]``.
Objective: ``Σ w_v n_v`` with ``w_v`` the variant's cost per replica-hour (or its GPUs per
replica when not every variant has a price: GPU-hours). Constraints, for a demand ``D`` (design
RPS × redundancy factor), ``k`` spare replicas and the service's replica bounds:

- **round-robin** (a plain Service): every replica gets ``D / N``, so the *slowest* replica
  used must carry that share: ``N ≥ D / cap_slowest + k``. The slowest variant used is not known
  in advance, so one program is solved per candidate ``u`` ("``u`` is the slowest used":
  ``n_u ≥ 1``, variants slower than ``u`` get 0, ``Σ n_v ≥ ⌈D / cap_u⌉ + k``).
- **load-aware** (an InferencePool): capacities add, ``Σ cap_v n_v ≥ D + k × cap_u`` where ``u``
  is the *largest* replica used (N+k: the mix survives losing its ``k`` largest replicas); one
  program per candidate ``u`` (variants larger than ``u`` get 0, ``n_u ≥ 1``).
- always ``minReplicas ≤ Σ n_v ≤ maxReplicas``.
- **one layout per variant**: options that share a ``group`` (the layouts a
  ``tensorParallelSize: auto`` variant is offered at) are one workload, so at most one of them
  is used: a binary ``y_o`` per member, ``n_o ≤ maxReplicas_o × y_o`` and ``Σ_group y_o ≤ 1``.

Among the candidates' mixes within 1e-9 (relative) of the least cost, a second program per
candidate maximises ``Σ preference_v n_v`` and then takes the fewest replicas; the most
preferred, then the fewest replicas, then the cheapest of those wins.
Solved with ``scipy.optimize.milp`` (HiGHS branch and bound), never a hand-written search.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tokenscale.planning.result import Routing

SOLVER = "scipy.optimize.milp (HiGHS)"
_REL_TOL = 1e-9
_RESOLVES = 5
_SLACK_RPS = 1e-6
"""A load-aware mix carries a demand within a millionth of a request per second over its
capacities (2 × 1 req/s carries 2.000001 req/s), as the round-robin rule's ceil rounds such a
hair away."""


@dataclass(frozen=True)
class MixOption:
    """One variant as the solver sees it."""

    name: str
    capacity_rps: float
    """Most RPS one replica carries within the SLOs (> 0)."""
    weight: float
    """Cost per replica-hour, or GPUs per replica (the objective's unit)."""
    max_replicas: int
    preference: int = 0
    group: str = ""
    """Options sharing a non-empty group are layouts of one variant: at most one is used."""


@dataclass(frozen=True)
class MixSolution:
    counts: tuple[int, ...]
    """Replicas per option, in the options' order."""
    objective: float
    capacity_rps: float
    """What the mix carries: ``Σ cap n`` (load-aware) or ``N × cap_slowest`` (round-robin)."""


def mix_capacity(options: Sequence[MixOption], counts: Sequence[int], routing: Routing) -> float:
    """RPS a mix carries within the SLOs under ``routing`` (0 for an empty mix)."""
    used = [o.capacity_rps for o, n in zip(options, counts, strict=True) if n > 0]
    if not used:
        return 0.0
    if routing == "round-robin":
        return sum(counts) * min(used)
    return sum(o.capacity_rps * n for o, n in zip(options, counts, strict=True))


def _dot(a: Sequence[float], b: Sequence[int]) -> float:
    return float(sum(x * y for x, y in zip(a, b, strict=True)))


def _groups(options: Sequence[MixOption]) -> list[list[int]]:
    """The options of each group with more than one member (one layout per variant)."""
    members: dict[str, list[int]] = {}
    for i, o in enumerate(options):
        if o.group:
            members.setdefault(o.group, []).append(i)
    return [m for m in members.values() if len(m) > 1]


def _solve(
    c: list[float],
    rows: list[tuple[list[float], float, float]],
    upper: list[float],
    lower: list[float],
    groups: Sequence[Sequence[int]] = (),
) -> tuple[list[int], float] | None:
    """:func:`_solve_once`, whose whole counts are checked against the rows' lower bounds in
    plain arithmetic: HiGHS takes a count within 1e-6 of a whole number as whole (2.0000009
    replicas of 12 req/s carry 24.000011), so a rounded answer can fall short of a bound by
    up to that much; the bound is then raised by the shortfall and the program solved again
    (a bound the counts meet exactly is never raised)."""
    rows = list(rows)
    for _ in range(_RESOLVES):
        found = _solve_once(c, rows, upper, lower, groups)
        if found is None:
            return None
        met = True
        for i, (coef, lo, hi) in enumerate(rows):
            gap = lo - _dot(coef, found[0])
            if gap > 1e-12 * max(1.0, abs(lo)):
                rows[i], met = (coef, lo + gap + 1e-9 * max(1.0, abs(lo)), hi), False
        if met:
            return found
    return None


def _solve_once(
    c: list[float],
    rows: list[tuple[list[float], float, float]],
    upper: list[float],
    lower: list[float],
    groups: Sequence[Sequence[int]] = (),
) -> tuple[list[int], float] | None:
    """Solve over the counts; each grouped option gets a binary "used" column after them.

    HiGHS runs without presolve: on these programs of a few columns it costs nothing, and its
    presolve (SciPy 1.17) answered wrongly on two of them — infeasible for ``3 × 12 ≥ 24.000012``
    beside a column fixed at 0, and an "optimal" 4 where 3 replicas of 12 req/s cost 3."""
    # SciPy takes a second or more to import: only a mix plan pays for it
    import numpy as np  # noqa: PLC0415
    from scipy.optimize import Bounds, LinearConstraint, milp  # noqa: PLC0415

    k = len(c)
    flags = [i for g in groups for i in g]
    width = k + len(flags)
    matrix = [[*r[0], *([0.0] * len(flags))] for r in rows]
    lo_rows, hi_rows = [r[1] for r in rows], [r[2] for r in rows]
    for j, i in enumerate(flags):  # n_i ≤ upper_i × y_i
        row = [0.0] * width
        row[i], row[k + j] = 1.0, -upper[i]
        matrix.append(row)
        lo_rows.append(-math.inf)
        hi_rows.append(0.0)
    at = 0
    for g in groups:  # Σ y ≤ 1 over the group
        row = [0.0] * width
        for j in range(at, at + len(g)):
            row[k + j] = 1.0
        at += len(g)
        matrix.append(row)
        lo_rows.append(-math.inf)
        hi_rows.append(1.0)
    res = milp(
        c=np.array([*c, *([0.0] * len(flags))], dtype=float),
        constraints=LinearConstraint(
            np.array(matrix, dtype=float),
            np.array(lo_rows, dtype=float),
            np.array(hi_rows, dtype=float),
        ),
        integrality=np.ones(width),
        options={"presolve": False},
        bounds=Bounds(
            np.array([*lower, *([0.0] * len(flags))], dtype=float),
            np.array([*upper, *([1.0] * len(flags))], dtype=float),
        ),
    )
    if res.status != 0 or res.x is None:
        return None
    counts = [round(float(x)) for x in res.x[:k]]
    return counts, _dot(c, counts)


def _candidate_rows(
    options: Sequence[MixOption],
    u: int,
    demand_rps: float,
    spare: int,
    min_total: int,
    max_total: int,
    routing: Routing,
) -> tuple[list[tuple[list[float], float, float]], list[float], list[float]] | None:
    """Rows and bounds of the program "``u`` is the slowest (round-robin) / largest
    (load-aware) replica used"; None when no mix can have that shape."""
    cap_u = options[u].capacity_rps
    upper, lower = [], []
    for i, o in enumerate(options):
        excluded = o.capacity_rps < cap_u if routing == "round-robin" else o.capacity_rps > cap_u
        upper.append(0.0 if excluded and i != u else float(o.max_replicas))
        lower.append(1.0 if i == u else 0.0)
    if upper[u] < 1:
        return None
    ones = [1.0] * len(options)
    rows: list[tuple[list[float], float, float]] = [(ones, float(min_total), float(max_total))]
    if routing == "round-robin":
        need = math.ceil(demand_rps / cap_u - 1e-9) + spare
        rows.append((ones, float(need), math.inf))
    else:
        caps = [o.capacity_rps for o in options]
        rows.append((caps, demand_rps + spare * cap_u - _SLACK_RPS, math.inf))
    return rows, upper, lower


def solve_mix(
    options: Sequence[MixOption],
    demand_rps: float,
    routing: Routing,
    spare: int = 0,
    min_total: int = 0,
    max_total: int = 1_000_000,
) -> MixSolution | None:
    """The cheapest mix (module docstring); None when no mix within the bounds carries the
    demand."""
    if not options:
        return None
    if demand_rps <= 0 and spare == 0 and min_total == 0:
        zeros = tuple(0 for _ in options)
        return MixSolution(zeros, 0.0, 0.0)
    weights = [o.weight for o in options]
    groups = _groups(options)
    best: tuple[int, int, float, list[int]] | None = None  # −preference, N, cost, counts
    stage_one: list[tuple[int, float]] = []
    for u in range(len(options)):
        shape = _candidate_rows(options, u, demand_rps, spare, min_total, max_total, routing)
        if shape is None:
            continue
        rows, upper, lower = shape
        found = _solve(weights, rows, upper, lower, groups)
        if found is not None:
            stage_one.append((u, found[1]))
    if not stage_one:
        return None
    least = min(cost for _, cost in stage_one)
    cap = least + _REL_TOL * max(1.0, abs(least))
    bigger = float(max_total + 1)
    tie_break = [1.0 - o.preference * bigger for o in options]
    for u, cost in stage_one:
        if cost > cap:
            continue
        shape = _candidate_rows(options, u, demand_rps, spare, min_total, max_total, routing)
        assert shape is not None  # solved above
        rows, upper, lower = shape
        rows = [*rows, (list(weights), -math.inf, cap)]
        found = _solve(tie_break, rows, upper, lower, groups)
        if found is None:  # the tolerance row is numerically tight: keep stage one's answer
            found = _solve(weights, rows[:-1], upper, lower, groups)
            if found is None:
                continue
        counts = found[0]
        pref = sum(o.preference * n for o, n in zip(options, counts, strict=True))
        key = (-pref, sum(counts), _dot(weights, counts), counts)
        if best is None or key[:3] < best[:3]:
            best = key
    if best is None:
        return None
    counts = best[3]
    return MixSolution(tuple(counts), best[2], mix_capacity(options, counts, routing))
