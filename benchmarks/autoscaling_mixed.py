"""Autoscaling suite, mixed fleets: tokenscale scaling an H100 + L40S mix, and the same with the
H100 out of stock mid-trace (``python benchmarks/autoscaling.py --suite mixed``).

The spec is ``deploy/examples/variants/llama-3.1-8b-h100-l40s.yaml`` (Llama-3.1-8B BF16;
H100-SXM-80GB at $3.00/h, at most 2 replicas; L40S-48GB at $1.10/h, at most 24; TTFT P99 2 s,
TPOT P99 50 ms) behind a load-aware gateway (``spec.gateway.inferencePool``), with
``minReplicas`` 1 and the launch forecast at the quiet rate (6.5 RPS, burst factor 1.5: the
planner's mix for it is 2 L40S, so the H100s are asked for only as the load grows). The
trace: conversation sizes (1k / 4k P99 in, 200 out), 6 RPS flat for 4 minutes, a linear ramp
to ×6 (36 RPS) over 10 minutes and back, 4 minutes flat (28 minutes, seed 3). Cold start
180 s, a decision and a scrape every 15 s.

- ``h100-l40s``: no stockout.
- ``h100-stockout``: from 10 minutes on no new H100 can be placed (its new pods stay
  Pending); the operator's stockout rule (Pending past 300 s marks the variant exhausted, the
  need moves to the L40S; retried after 1,800 s) plays out through the mix stepper.

Fleets compared, at the same routing, lifecycle and GPU prices (``simulation/mix.py``):

- **tokenscale (mix)**: the operator's mix policy (``scaling/mix_stepper.py``);
- **tokenscale, <variant> alone**: the shared stepper on one variant's own spec and plan
  (its ``maxReplicas``); under the stockout the H100-alone fleet's new pods stay Pending too;
- **best single variant**: the cheapest of those meeting the SLOs for ≥ 99 % of requests;
- **best static mix**: the cheapest fixed fleet (H100 ≤ 2, L40S ≤ 24, ready from the start)
  meeting ≥ 99 % (``best_static_mix``); it is placed before the stockout, which leaves it as
  it is, so both cases share it.

Targets: tokenscale's mix meets ≥ 99 %, and costs no more than the best single variant and
the best static mix (price-weighted GPU-hours over the trace).
"""

import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import Plan, plan_service
from tokenscale.simulation.fleet import GpuStockout, SimRouting
from tokenscale.simulation.mix import (
    MixScaleOptions,
    MixTokenscale,
    VariantTokenscale,
    best_static_mix,
    mix_engines,
    replay_mix,
)
from tokenscale.simulation.result import FleetRun
from tokenscale.simulation.trace import Trace
from tokenscale.simulation.workloads import CONVERSATION, diurnal

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "deploy" / "examples" / "variants" / "llama-3.1-8b-h100-l40s.yaml"
H100, L40S = "h100-sxm-80gb", "l40s-48gb"
TARGET = 0.99
OURS = "tokenscale (mix)"
BEST_STATIC = "best static mix"


def mixed_spec(quiet_rps: float, h100_max: int = 2) -> InferenceServiceSpec:
    """The example mix behind a load-aware gateway, its forecast at ``quiet_rps``."""
    doc: dict[str, Any] = yaml.safe_load(SPEC.read_text())
    doc["spec"]["hardware"]["variants"][0]["maxReplicas"] = h100_max
    doc["spec"]["gateway"] = {"inferencePool": {"name": "pool"}}
    doc["spec"]["workload"]["rps"] = {"mean": quiet_rps, "burstFactor": 1.5}
    doc["spec"]["workload"]["inputTokens"] = {"mean": 1000, "p99": 4000}
    doc["spec"]["workload"]["outputTokens"] = {"mean": 200, "p99": 800}
    doc["spec"]["scaling"]["minReplicas"] = 1
    return parse_manifests(yaml.safe_dump(doc))[0].spec


def _ramp() -> tuple[Trace, InferenceServiceSpec]:
    trace = diurnal(6.0, CONVERSATION, factor=6.0, flat_s=240.0, ramp_s=600.0, seed=3)
    return trace, mixed_spec(6.5)


@dataclass(frozen=True)
class MixedEntry:
    name: str
    what: str
    build: Callable[[], tuple[Trace, InferenceServiceSpec]]
    stockouts: tuple[GpuStockout, ...] = ()


MIXED_SUITE: tuple[MixedEntry, ...] = (
    MixedEntry("h100-l40s", "H100 ≤ 2 + L40S, 6 → 36 RPS ramp and back", _ramp),
    MixedEntry(
        "h100-stockout",
        "the same, no new H100 placed from 10 min on",
        _ramp,
        (GpuStockout(H100, 600.0),),
    ),
)


@dataclass
class MixedCase:
    """One entry with every fleet's result."""

    name: str
    what: str
    results: dict[str, FleetRun] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ours(self) -> FleetRun:
        return self.results[OURS]

    def best_single(self) -> tuple[str, FleetRun] | None:
        """The cheapest single-variant autoscaled fleet meeting the target."""
        alone = [
            (n, r)
            for n, r in self.results.items()
            if n.endswith(" alone") and r.slo_attainment >= TARGET - 1e-9
        ]
        return min(alone, key=lambda nr: _cost(nr[1]), default=None)

    def verdicts(self) -> list[tuple[str, bool]]:
        ours = self.ours
        out = [("attainment ≥ 99 %", ours.slo_attainment >= TARGET - 1e-9)]
        single = self.best_single()
        if single is not None:
            out.append(("cost ≤ best single variant", _cost(ours) <= _cost(single[1]) + 1e-9))
        static = self.results.get(BEST_STATIC)
        if static is not None:
            out.append(("cost ≤ best static mix", _cost(ours) <= _cost(static) + 1e-9))
        return out


def _cost(r: FleetRun) -> float:
    return r.cost if r.cost is not None else math.inf


def run_mixed(
    entries: Sequence[MixedEntry],
    opts: MixScaleOptions | None = None,
    log: Callable[[str], None] | None = None,
) -> list[MixedCase]:
    """Every fleet on every entry (module docstring). Runs a stockout does not touch (the
    static mix, a variant alone that is not stocked out) are shared between entries with the
    same build."""
    built: dict[Callable[[], Any], tuple[Trace, InferenceServiceSpec, Plan]] = {}
    shared: dict[tuple[Callable[[], Any], str], tuple[FleetRun, float]] = {}
    opts = opts or MixScaleOptions()
    cases = []
    for entry in entries:
        if entry.build not in built:
            trace, spec = entry.build()
            built[entry.build] = (trace, spec, plan_service(spec, "suite-mixed"))
        case = MixedCase(entry.name, entry.what)
        for name, (result, seconds) in _fleets(entry, *built[entry.build], opts, shared):
            case.results[name], case.seconds[name] = result, seconds
        cases.append(case)
        if log is not None:
            log(_line(case))
    return cases


def _fleets(
    entry: MixedEntry,
    trace: Trace,
    spec: InferenceServiceSpec,
    plan: Plan,
    opts: MixScaleOptions,
    shared: dict[tuple[Callable[[], Any], str], tuple[FleetRun, float]],
) -> list[tuple[str, tuple[FleetRun, float]]]:
    """Each fleet's result and wall seconds, in the table's order."""
    engines = mix_engines(spec, plan, trace.block_tokens)
    routing: SimRouting = "least-loaded" if spec.gateway.load_aware else "round-robin"
    out_of_stock = {s.variant for s in entry.stockouts}
    out = []
    t0 = time.perf_counter()
    ours = MixTokenscale(spec, plan, opts.decision_interval_s)
    run = replay_mix(engines, trace, spec, ours, routing, opts, entry.stockouts)
    out.append((OURS, (run, time.perf_counter() - t0)))
    for e in engines:
        name = f"tokenscale, {e.name} alone"
        key = (entry.build, name)
        if e.name in out_of_stock or key not in shared:
            t0 = time.perf_counter()
            alone = VariantTokenscale(spec, plan, e.name, opts.decision_interval_s)
            run = replay_mix(engines, trace, spec, alone, routing, opts, entry.stockouts)
            if e.name in out_of_stock:
                out.append((name, (run, time.perf_counter() - t0)))
                continue
            shared[key] = (run, time.perf_counter() - t0)
        out.append((name, shared[key]))
    key = (entry.build, BEST_STATIC)
    if key not in shared:
        t0 = time.perf_counter()
        bounds = {v.name: v.max_replicas for v in plan.variants}
        static = best_static_mix(engines, trace, spec, routing, bounds, TARGET)
        if static is None:
            return out
        shared[key] = (static, time.perf_counter() - t0)
    out.append((BEST_STATIC, shared[key]))
    return out


def _line(c: MixedCase) -> str:
    cells = " ".join(
        f"[{n}] {r.slo_attainment * 100:.2f}%/${_cost(r):.2f}" for n, r in c.results.items()
    )
    return f"{c.name}: {cells}"


def _peak(r: FleetRun) -> str:
    return " + ".join(
        f"{n} {name.split('-')[0].upper()}" for name, n in r.replicas_max.items() if n
    )


def markdown(cases: Sequence[MixedCase]) -> str:
    """One row per (case, fleet): attainment, TTFT/TPOT P99, GPU-hours, cost, the most
    replicas of each variant asked for at once, the exhausted marks."""
    head = [
        "case",
        "fleet",
        "attainment %",
        "TTFT P99 s",
        "TPOT P99 ms",
        "GPU-h",
        "cost $",
        "peak replicas",
        "exhausted",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cases:
        single = c.best_single()
        for name, r in c.results.items():
            label = name + (" (best single)" if single is not None and single[0] == name else "")
            marks = "; ".join(f"{v} at {t:.0f} s" for t, v, _ in r.marked) or "–"
            lines.append(
                "| "
                + " | ".join(
                    [
                        c.name,
                        label,
                        f"{r.slo_attainment * 100:.2f}",
                        f"{r.ttft_p99_s:.2f}",
                        f"{r.tpot_p99_s * 1e3:.1f}",
                        f"{r.gpu_hours:.2f}",
                        f"{_cost(r):.2f}",
                        _peak(r),
                        marks,
                    ]
                )
                + " |"
            )
    return "\n".join(lines)


def main(markdown_out: Path | None = None) -> None:
    t0 = time.perf_counter()
    cases = run_mixed(MIXED_SUITE, log=lambda s: print(s, file=sys.stderr, flush=True))
    table = markdown(cases)
    print(table)
    verdicts = [(c, what, ok) for c in cases for what, ok in c.verdicts()]
    met = sum(ok for _, _, ok in verdicts)
    print(f"\ntargets met: {met} of {len(verdicts)}")
    for c, what, ok in verdicts:
        if not ok:
            print(f"  MISS {c.name}: {what} (tokenscale {c.ours.slo_attainment * 100:.2f} %, "
                  f"${_cost(c.ours):.2f})")  # fmt: skip
    print(f"suite wall time {time.perf_counter() - t0:.0f} s")
    if markdown_out is not None:
        markdown_out.write_text(table + "\n")
