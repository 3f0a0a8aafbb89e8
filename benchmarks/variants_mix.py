"""GPU mixes in simulation: the planner's mix against each single-variant plan and against the
cheapest fixed fleet the simulator finds, at equal SLO attainment, under both routings.

The spec is ``deploy/examples/variants/llama-3.1-8b-h100-l40s.yaml`` (Llama-3.1-8B BF16,
H100 at $3.00/h, L40S at $1.10/h) at ``--rps`` peak with at most ``--h100-max`` H100 replicas.
The trace: Poisson arrivals at the peak for ``--seconds``, request sizes drawn (seeded) from the
spec's token distributions. Every fleet is fixed and ready from the start (a pinned policy
through the one loop, ``simulation/mix.py``): round-robin is a plain Service, least-loaded a
load-aware gateway (the planner's ``load-aware`` routing).

- **planner's mix**: ``tokenscale plan``'s mix under that routing;
- **<variant> alone**: that variant's own plan (where it fits its maxReplicas);
- **simulator's cheapest**: for every H100 count 0..max, the fewest L40S (bisection) whose
  replay meets the SLOs for ≥ ``--target`` of requests; the cheapest of those.
- **stockout** (least-loaded): the planner's mix loses its H100s at the first decision from a
  third of the trace (drained: what they hold finishes); the planner's fallback (the mix
  re-solved with the H100 bound at 0) adds L40S replicas then, serving after ``--cold-start``
  seconds; compared with no replacement.

    python benchmarks/variants_mix.py [--rps 40] [--h100-max 1] [--seconds 300] [--json]
"""

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import Plan, plan_service
from tokenscale.simulation.fleet import SimRouting
from tokenscale.simulation.mix import MixScaleOptions, StaticMix, mix_engines, replay_mix
from tokenscale.simulation.result import FleetRun
from tokenscale.simulation.workloads import TokenMix, steady

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "deploy" / "examples" / "variants" / "llama-3.1-8b-h100-l40s.yaml"


@dataclass(frozen=True)
class Row:
    routing: str
    fleet: str
    counts: dict[str, int]
    cost_per_hour: float | None
    attainment: float
    ttft_p99_s: float
    tpot_p99_s: float


def _spec_doc(rps: float, h100_max: int, load_aware: bool) -> dict[str, Any]:
    doc = yaml.safe_load(SPEC.read_text())
    doc["spec"]["workload"]["rps"] = {"mean": rps / 2, "peak": rps}
    doc["spec"]["hardware"]["variants"][0]["maxReplicas"] = h100_max
    if load_aware:
        doc["spec"]["gateway"] = {"inferencePool": {"name": "pool"}}
    return doc


def _plan(doc: dict[str, Any]) -> tuple[Any, Plan]:
    svc = parse_manifests(yaml.safe_dump(doc))[0]
    return svc, plan_service(svc.spec, svc.metadata.name)


def _row(routing: str, fleet: str, r: FleetRun) -> Row:
    return Row(
        routing, fleet, r.counts, r.cost_per_hour, r.slo_attainment, r.ttft_p99_s, r.tpot_p99_s
    )


class _Bench:
    """One routing's replays of one spec and trace."""

    def __init__(self, args: argparse.Namespace, routing: str) -> None:
        self.args = args
        self.routing = routing
        self.sim_routing: SimRouting = "round-robin" if routing == "round-robin" else "least-loaded"
        self.svc, self.plan = _plan(_spec_doc(args.rps, args.h100_max, routing == "least-loaded"))
        w = self.svc.spec.workload
        mix = TokenMix(
            "spec",
            w.input_tokens.mean,
            w.input_tokens.p99_or_mean,
            w.output_tokens.mean,
            w.output_tokens.p99_or_mean,
            max_total=w.max_context_tokens or 8192,
        )
        self.trace = steady(args.seconds, args.rps, mix, seed=args.seed)
        self.engines = mix_engines(self.svc.spec, self.plan, self.trace.block_tokens)
        self.names = [e.name for e in self.engines]
        self.replays = 0

    def replay(
        self,
        counts: list[int],
        changes: Sequence[tuple[float, Mapping[str, int]]] = (),
    ) -> FleetRun:
        """A fixed fleet (a pinned policy), its counts changed by hand at ``changes``."""
        self.replays += 1
        pinned = StaticMix(dict(zip(self.names, counts, strict=True)), "fixed", changes)
        opts = MixScaleOptions(cold_start_s=self.args.cold_start)
        return replay_mix(self.engines, self.trace, self.svc.spec, pinned, self.sim_routing, opts)

    def counts(self, **by_name: int) -> list[int]:
        return [by_name.get(n.replace("-", "_"), 0) for n in self.names]

    def cheapest(self) -> FleetRun | None:
        """For every H100 count, the fewest L40S meeting the target (bisection); the
        cheapest of those."""
        target, best = self.args.target, None
        l40s_max = next(v.max_replicas for v in self.plan.variants if v.name == "l40s-48gb")
        for n_h in range(self.args.h100_max + 1):
            lo, hi = (1 if n_h == 0 else 0), l40s_max
            found = self.replay(self.counts(h100_sxm_80gb=n_h, l40s_48gb=hi))
            if found.slo_attainment < target:
                continue
            while lo < hi:
                mid = (lo + hi) // 2
                r = self.replay(self.counts(h100_sxm_80gb=n_h, l40s_48gb=mid))
                if r.slo_attainment >= target:
                    hi, found = mid, r
                else:
                    lo = mid + 1
            if best is None or (found.cost_per_hour or 0.0) < (best.cost_per_hour or 0.0):
                best = found
        return best

    def rows(self) -> list[Row]:
        planned = {v.name: v.replicas for v in self.plan.variants}
        planned_counts = [planned[n] for n in self.names]
        out = [_row(self.routing, "planner's mix", self.replay(planned_counts))]
        for v in self.plan.variants:
            s = v.single_variant
            if s.feasible and s.replicas:
                alone = [s.replicas if n == v.name else 0 for n in self.names]
                out.append(_row(self.routing, f"{v.name} alone (its plan)", self.replay(alone)))
        best = self.cheapest()
        if best is not None:
            label = f"simulator's cheapest (≥ {self.args.target:.0%})"
            out.append(_row(self.routing, label, best))
        lost_h100 = planned.get("h100-sxm-80gb", 0)
        if self.routing == "least-loaded" and lost_h100 > 0:
            out += self.stockout(planned, planned_counts, lost_h100)
        return out

    def stockout(
        self, planned: dict[str, int], planned_counts: list[int], lost_h100: int
    ) -> list[Row]:
        """The H100s go at a third of the trace; the planner's fallback (its mix re-solved
        with no H100) adds L40S after the cold start."""
        _, fallback = _plan(_spec_doc(self.args.rps, 0, True))
        add = max(
            0, {v.name: v.replicas for v in fallback.variants}["l40s-48gb"] - planned["l40s-48gb"]
        )
        at = self.args.seconds / 3
        # a pinned policy: at the first decision from ``at`` the H100s are taken away
        # (drained: what they hold finishes) and the fallback asks for ``add`` more L40S
        lost = [(at, {"h100-sxm-80gb": planned["h100-sxm-80gb"] - lost_h100})]
        moved = [(at, {**lost[0][1], "l40s-48gb": planned["l40s-48gb"] + add})]
        return [
            _row(
                self.routing, "stockout: H100s lost, no fallback", self.replay(planned_counts, lost)
            ),
            _row(
                self.routing,
                f"stockout: H100s lost, +{add} L40S",
                self.replay(planned_counts, moved),
            ),
        ]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rps", type=float, default=40.0)
    ap.add_argument("--h100-max", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=300.0)
    ap.add_argument("--target", type=float, default=0.99)
    ap.add_argument("--cold-start", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    started = time.monotonic()
    rows: list[Row] = []
    replays = 0
    for routing in ("round-robin", "least-loaded"):
        bench = _Bench(args, routing)
        rows += bench.rows()
        replays += bench.replays
    elapsed = time.monotonic() - started
    if args.json:
        print(json.dumps({"rows": [asdict(r) for r in rows], "replays": replays}, indent=2))
        return 0
    print(
        f"Llama-3.1-8B, {args.rps:g} RPS peak for {args.seconds:g} s (Poisson, seed {args.seed}),"
        f" H100 ≤ {args.h100_max}; {replays} replays in {elapsed:.0f} s"
    )
    print("| routing | fleet | replicas | $/h | attainment | TTFT P99 s | TPOT P99 ms |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        fleet = " + ".join(f"{n} × {k}" for k, n in r.counts.items() if n)
        cost = "—" if r.cost_per_hour is None else f"{r.cost_per_hour:.2f}"
        print(
            f"| {r.routing} | {r.fleet} | {fleet} | {cost} | {r.attainment:.2%} | "
            f"{r.ttft_p99_s:.2f} | {r.tpot_p99_s * 1e3:.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
