"""Planner vs simulator: one replica's sustainable request rate at the SLO, five workload shapes.

For each shape the planner's SLO-bound rate per replica — the design rate over the replicas
its three constraints need (throughput and concurrency at the largest batch that meets the
SLOs, and KV), from ``plan_at`` with the ``slo`` knee policy as the forecast and the live
engine ask; the ``knee`` policy's figure is printed beside it — is compared with the fleet
simulator's bisection for the highest Poisson rate one simulated replica sustains within every SLO
(``simulation/capacity.py``), with request sizes
drawn (seeded) from the shape's distributions. Target (issue: Planner v2, §6): within 10 % on
every shape. The figures are reported, not asserted.

``--prompt-tail`` instead runs the lognormal prompt tail behind the choice of the forecast's
batch (docs/planner.md, "The knee against the SLO batch"): Qwen2.5-32B on one A100 at TP 2 and
TP 4 (1,000 / P99 4,000 prompt tokens, 250 / P99 750 out, TTFT 1 s, TPOT 50 ms), four seeded
samples of 4,000 requests each (a lognormal's few prompts past its P99 differ from sample to
sample), the planner at the SLO batch and at the knee against the simulator.

    python benchmarks/planner_vs_simulator.py [--requests 1500] [--json] [--prompt-tail]
"""

import argparse
import json
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass

from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import Conditions, plan_at, resolve
from tokenscale.simulation.capacity import sustainable_rps
from tokenscale.simulation.replica import replica_config

BLOCK = 512


@dataclass(frozen=True)
class Shape:
    name: str
    gpu: str
    input_mean: float
    input_p99: float
    output_mean: float
    output_p99: float
    ttft_s: float
    tpot_s: float
    documents: int = 0
    """Shared document prefixes (RAG): each prompt starts with one of them."""
    document_tokens: int = 0


SHAPES = (
    Shape("chat", "L40S-48GB", 1155, 4142, 211, 601, 2.0, 0.1),
    Shape("code-like (prefill-heavy)", "H100-SXM-80GB", 2048, 7436, 28, 90, 3.0, 0.08),
    Shape(
        "long-context RAG (prefix reuse)",
        "H100-SXM-80GB",
        32000,
        36000,
        200,
        500,
        8.0,
        0.1,
        documents=6,
        document_tokens=24576,
    ),
    Shape("reasoning (long output)", "H100-SXM-80GB", 500, 1500, 4000, 8000, 2.0, 0.05),
    Shape("mix (80 % chat, 15 % RAG, 5 % reasoning)", "H100-SXM-80GB", 0, 0, 0, 0, 3.0, 0.08),
)


def _lognormal(rng: random.Random, mean: float, p99: float) -> int:
    """A draw from the lognormal with this mean and P99 (σ from the ratio)."""
    ratio = max(p99 / mean, 1.0 + 1e-6)
    # P99/mean = exp(2.326σ − σ²/2) → solve for σ (the smaller root)
    b = 2.326
    sigma = b - math.sqrt(max(b * b - 2.0 * math.log(ratio), 0.0))
    mu = math.log(mean) - sigma * sigma / 2.0
    return max(1, round(rng.lognormvariate(mu, sigma)))


def _requests(
    shape: Shape, n: int, seed: int
) -> tuple[list[tuple[int, int]], list[tuple[int, ...]]]:
    rng = random.Random(seed)
    pairs: list[tuple[int, int]] = []
    prefixes: list[tuple[int, ...]] = []
    for i in range(n):
        kind = shape
        if shape.name.startswith("mix"):
            u = rng.random()
            kind = SHAPES[0] if u < 0.8 else (SHAPES[2] if u < 0.95 else SHAPES[3])
        n_in = _lognormal(rng, kind.input_mean, kind.input_p99)
        n_out = _lognormal(rng, kind.output_mean, kind.output_p99)
        blocks: tuple[int, ...] = ()
        if kind.documents:
            doc = rng.randrange(kind.documents)
            shared = kind.document_tokens // BLOCK
            n_in = max(n_in, kind.document_tokens + BLOCK)
            own = (n_in - kind.document_tokens) // BLOCK
            blocks = tuple(doc * 1000 + b for b in range(shared)) + tuple(
                10**7 + i * 1000 + b for b in range(own)
            )
        pairs.append((min(n_in, 60000), n_out))
        prefixes.append(blocks)
    return pairs, prefixes


def _pct(values: list[int], q: float) -> float:
    s = sorted(values)
    return float(s[min(len(s) - 1, int(q * len(s)))])


def _tokens(values: list[int]) -> str:
    mean = sum(values) / len(values)
    return f"{{mean: {mean:.0f}, p95: {_pct(values, 0.95):.0f}, p99: {_pct(values, 0.99):.0f}}}"


def _spec_text(shape: Shape, pairs: list[tuple[int, int]], hit: float) -> str:
    ins = [p[0] for p in pairs]
    outs = [p[1] for p in pairs]
    return f"""
apiVersion: tokenscale.io/v1alpha1
kind: InferenceService
metadata: {{name: shape}}
spec:
  model: {{name: meta-llama/Llama-3.1-8B-Instruct, catalog: llama-3.1-8b}}
  hardware: {{gpu: {shape.gpu}, tensorParallelSize: 1}}
  workload:
    rps: {{mean: 1}}
    inputTokens: {_tokens(ins)}
    outputTokens: {_tokens(outs)}
    maxContextTokens: 65536
    prefixCacheHitRate: {hit:.3f}
  slo: {{ttftP99Seconds: {shape.ttft_s}, tpotP99Seconds: {shape.tpot_s}}}
"""


def _hit_rate(pairs: list[tuple[int, int]], prefixes: list[tuple[int, ...]]) -> float:
    """Share of prompt tokens in a block seen before (an unbounded cache: an upper bound)."""
    seen: set[int] = set()
    hit = 0
    for blocks in prefixes:
        hit += sum(BLOCK for b in blocks if b in seen)
        seen.update(blocks)
    return min(0.95, hit / max(sum(p[0] for p in pairs), 1))


TAIL_SEEDS = (1, 2, 3, 7)
TAIL_TPS = (2, 4)


def _tail_spec_text(pairs: list[tuple[int, int]]) -> str:
    ins = [p[0] for p in pairs]
    outs = [p[1] for p in pairs]
    return f"""
apiVersion: tokenscale.io/v1alpha1
kind: InferenceService
metadata: {{name: tail}}
spec:
  model: {{name: Qwen/Qwen2.5-32B-Instruct, catalog: qwen2.5-32b}}
  hardware: {{gpu: A100-SXM-80GB, tensorParallelSize: 1}}
  workload:
    rps: {{mean: 1}}
    inputTokens: {_tokens(ins)}
    outputTokens: {_tokens(outs)}
    maxContextTokens: 32768
  slo: {{ttftP99Seconds: 1.0, tpotP99Seconds: 0.05}}
"""


def prompt_tail(requests: int) -> list[dict[str, object]]:
    """The prompt-tail rows (module docstring): one per (seed, TP)."""
    rows: list[dict[str, object]] = []
    for seed in TAIL_SEEDS:
        rng = random.Random(seed)
        pairs = [
            (min(_lognormal(rng, 1000, 4000), 30000), _lognormal(rng, 250, 750))
            for _ in range(4000)
        ]
        spec = parse_manifests(_tail_spec_text(pairs))[0].spec
        r = resolve(spec, "tail")
        for tp in TAIL_TPS:
            plan = plan_at(r, Conditions(workload=spec.workload, knee="slo"), tp)
            at_knee = plan_at(r, Conditions(workload=spec.workload, knee="knee"), tp)
            cfg = replica_config(spec, plan, prefix_block_tokens=BLOCK)
            sim = sustainable_rps(cfg, spec.slo, pairs, plan.rps_per_replica, requests, seed=1)
            slo_rps = plan.design_rps / plan.sized.needed
            knee_rps = at_knee.design_rps / at_knee.sized.needed
            rows.append(
                {
                    "seed": seed,
                    "tp": tp,
                    "largest_prompt": max(p[0] for p in pairs),
                    "slo_batch": plan.operating_batch,
                    "planner_rps": round(slo_rps, 3),
                    "knee_batch": at_knee.operating_batch,
                    "planner_rps_at_knee": round(knee_rps, 3),
                    "simulator_rps": round(sim, 3),
                    "error": round(slo_rps / sim - 1.0, 3),
                    "error_at_knee": round(knee_rps / sim - 1.0, 3),
                }
            )
    return rows


def _print_tail(rows: list[dict[str, object]]) -> None:
    for r in rows:
        print(
            f"seed {r['seed']} TP {r['tp']} (largest prompt {r['largest_prompt']:,}): SLO batch "
            f"{r['slo_batch']:.0f} {r['planner_rps']:.2f} req/s ({r['error']:+.1%}), knee "
            f"{r['knee_batch']:.0f} {r['planner_rps_at_knee']:.2f} ({r['error_at_knee']:+.1%}); "
            f"simulator {r['simulator_rps']:.2f}",
            flush=True,
        )
    for tp in TAIL_TPS:
        mine = [r for r in rows if r["tp"] == tp]
        sim = statistics.fmean(float(str(r["simulator_rps"])) for r in mine)
        slo = statistics.fmean(float(str(r["planner_rps"])) for r in mine)
        knee = statistics.fmean(float(str(r["planner_rps_at_knee"])) for r in mine)
        print(
            f"TP {tp}, mean of {len(mine)} samples: simulator {sim:.2f} req/s, SLO batch "
            f"{slo:.2f} ({slo / sim - 1.0:+.1%}), knee {knee:.2f} ({knee / sim - 1.0:+.1%})"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1500, help="requests per bisection probe")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--prompt-tail", action="store_true", help="the lognormal prompt-tail shape instead"
    )
    args = ap.parse_args()
    if args.prompt_tail:
        tail = prompt_tail(args.requests)
        if args.json:
            print(json.dumps({"rows": tail}, indent=2))
        else:
            _print_tail(tail)
        return 0
    rows = []
    for shape in SHAPES:
        started = time.perf_counter()
        pairs, prefixes = _requests(shape, 4000, seed=7)
        hit = _hit_rate(pairs, prefixes) if any(prefixes) else 0.0
        spec = parse_manifests(_spec_text(shape, pairs, hit))[0].spec
        r = resolve(spec, "shape")
        plan = plan_at(r, Conditions(workload=spec.workload, knee="slo"), 1)
        at_knee = plan_at(r, Conditions(workload=spec.workload, knee="knee"), 1)
        cfg = replica_config(spec, plan, prefix_block_tokens=BLOCK)
        planner_rps = plan.design_rps / plan.sized.needed
        sim = sustainable_rps(
            cfg,
            spec.slo,
            pairs,
            plan.rps_per_replica,
            args.requests,
            seed=1,
            prefixes=prefixes if any(prefixes) else None,
        )
        err = planner_rps / sim - 1.0 if sim > 0 else math.inf
        rows.append(
            {
                "shape": shape.name,
                "gpu": shape.gpu,
                "chunk_budget": plan.max_num_batched_tokens,
                "planner_rps": round(planner_rps, 3),
                "binding": plan.binding_constraint,
                "planner_rps_at_knee": round(at_knee.rps_per_replica, 3),
                "planner_batch": plan.operating_batch,
                "simulator_rps": round(sim, 3),
                "error": round(err, 3),
                "within_10pct": abs(err) <= 0.10,
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
        if not args.json:
            r = rows[-1]
            print(
                f"{r['shape']:<44} {r['gpu']:<14} chunk {r['chunk_budget']:>6}  planner "
                f"{r['planner_rps']:>7.3f} (knee {r['planner_rps_at_knee']:.3f}, batch "
                f"{r['planner_batch']:.0f}, {r['binding']})  simulator "
                f"{r['simulator_rps']:>7.3f}  error "
                f"{r['error']:+.1%}  {'ok' if r['within_10pct'] else 'MISS'}  ({r['seconds']} s)",
                flush=True,
            )
    errors = [abs(r["error"]) for r in rows]
    summary = {
        "mean_abs_error": round(sum(errors) / len(errors), 3),
        "worst_abs_error": round(max(errors), 3),
        "shapes_within_10pct": sum(bool(r["within_10pct"]) for r in rows),
        "shapes": len(rows),
    }
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=2))
    else:
        print(
            f"mean |error| {summary['mean_abs_error']:.1%}, "
            f"worst {summary['worst_abs_error']:.1%}; "
            f"{summary['shapes_within_10pct']}/{summary['shapes']} shapes within 10 %"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
