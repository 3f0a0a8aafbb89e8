"""Length classes against one shared pool: does the planner say isolation pays where the
simulator finds it does? (docs/length-classes.md, "When isolation pays")

Each shape is a synthetic trace (Poisson arrivals, seed 0; prompt lengths as described; answer
lengths log-normal, mean 250, P99 1,200, independent of the prompt) on Llama-3.1-8B, H100, TP 1,
SLOs TTFT P99 1 s and TPOT P99 50 ms. The spec's workload is the trace's own sample statistics
(rate, and mean, P95, P99 of the prompts and answers), as a user would measure them; its length
classes are the shape's, with the classes' statistics estimated from the whole (the planner's
log-normal split) unless the shape says ``stated`` (each class's share and prompt statistics
taken from the trace's requests in its range, as a user with per-class metrics would give them).

- **planner**: GPUs of the class pools and of one shared pool, its verdict, and the shortest
  class's TTFT P99 in its own pool and on the shared pool;
- **simulator, static**: each arrangement's smallest fixed fleet meeting 99 % of each class's
  requests within the SLOs (``simulation/length_classes.smallest_fleets``: each class's pool
  on its own requests, the shared pool on all of them judged class by class, as the class
  pools serve them), its GPU-hours, and the shortest class's TTFT P99 there;
- **simulator, tokenscale**: both arrangements autoscaled by the operator's policy (each class
  pool on its own series), GPU-hours and attainment;
- **agree**: the planner's verdict (isolation pays) against the simulator's (the class pools'
  smallest fleets hold no more replicas than the shared pool's).

    python benchmarks/length_classes.py [--minutes 10] [--json]
"""

import argparse
import itertools
import json
import math
import random
from dataclasses import dataclass
from typing import Any

from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import plan_service
from tokenscale.simulation.length_classes import replay_length_classes, smallest_fleets
from tokenscale.simulation.run import SimOptions
from tokenscale.simulation.trace import Trace, TraceRequest, percentile

Z99 = 2.3263
RPS = 20.0


def _lognormal(rng: random.Random, mean: float, p99: float) -> int:
    sigma = Z99 - math.sqrt(max(Z99 * Z99 - 2.0 * math.log(p99 / mean), 0.0))
    return max(1, round(rng.lognormvariate(math.log(mean) - sigma * sigma / 2.0, sigma)))


@dataclass(frozen=True)
class Shape:
    name: str
    about: str
    prompts: list[tuple[float, float, float]]
    """(weight, mean, P99) of each log-normal part of the prompt lengths."""
    bounds: list[int]
    stated: bool = False


SHAPES = [
    Shape("rag-chat", "one heavy-tailed mix: mean 2,000, P99 20,000", [(1.0, 2000, 20000)], [2048]),
    Shape("chat", "short prompts only: mean 600, P99 2,500", [(1.0, 600, 2500)], [1024]),
    Shape(
        "bimodal",
        "80 % chat (mean 500, P99 2,000) + 20 % RAG (mean 9,000, P99 16,000), estimated split",
        [(0.8, 500, 2000), (0.2, 9000, 16000)],
        [3000],
    ),
    Shape(
        "bimodal-stated",
        "the same, each class's share and prompts stated from the trace",
        [(0.8, 500, 2000), (0.2, 9000, 16000)],
        [3000],
        stated=True,
    ),
]


def trace_of(shape: Shape, seconds: float, seed: int = 0) -> Trace:
    rng = random.Random(seed)
    rows, t = [], 0.0
    weights = [w for w, _, _ in shape.prompts]
    while True:
        t += rng.expovariate(RPS)
        if t > seconds:
            break
        _, mean, p99 = rng.choices(shape.prompts, weights)[0]
        prompt = min(_lognormal(rng, mean, p99), 30_000)
        rows.append(TraceRequest(t, prompt, min(_lognormal(rng, 250, 1200), 2000)))
    return Trace(tuple(rows), shape.name)


def _stats(values: list[int]) -> dict[str, float]:
    ordered = sorted(values)
    mean = sum(ordered) / len(ordered)
    return {
        "mean": round(mean, 1),
        "p95": round(max(mean, percentile(ordered, 0.95)), 1),
        "p99": round(max(mean, percentile(ordered, 0.99)), 1),
    }


def spec_of(shape: Shape, trace: Trace) -> Any:
    reqs = trace.requests
    rate = len(reqs) / trace.duration_s
    classes: list[dict[str, Any]] = []
    edges = [0, *shape.bounds, math.inf]
    for i, (lo, hi) in enumerate(itertools.pairwise(edges)):
        c: dict[str, Any] = {"name": ["short", "long", "longest"][i]}
        if math.isfinite(hi):
            c["maxInputTokens"] = int(hi)
        if shape.stated:
            mine = [r.input_tokens for r in reqs if lo < r.input_tokens <= hi]
            c["share"] = len(mine) / len(reqs)
            c["inputTokens"] = _stats(mine)
        classes.append(c)
    if shape.stated:  # shares that sum to 1 exactly
        classes[-1]["share"] = 1.0 - sum(c["share"] for c in classes[:-1])
    doc = {
        "apiVersion": "tokenscale.io/v1alpha1",
        "kind": "InferenceService",
        "metadata": {"name": shape.name},
        "spec": {
            "model": {"name": "meta-llama/Llama-3.1-8B-Instruct", "catalog": "llama-3.1-8b"},
            "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1},
            "workload": {
                "rps": {"mean": round(rate, 3), "peak": round(rate, 3)},
                "inputTokens": _stats([r.input_tokens for r in reqs]),
                "outputTokens": _stats([r.output_tokens for r in reqs]),
                "maxContextTokens": 32768,
            },
            "serving": {"lengthClasses": classes},
            "slo": {"ttftP99Seconds": 1.0, "tpotP99Seconds": 0.05},
            "scaling": {"minReplicas": 1, "maxReplicas": 64},
        },
    }
    return parse_manifests(json.dumps(doc))[0]


def run_shape(shape: Shape, minutes: float) -> dict[str, Any]:
    trace = trace_of(shape, minutes * 60.0)
    service = spec_of(shape, trace)
    plan = plan_service(service.spec, shape.name)
    s = plan.length_split
    assert s is not None
    opts = SimOptions(cold_start_s=180.0, timeline=False)
    fleets = smallest_fleets(service.spec, plan, trace, opts)
    scaled = replay_length_classes(service.spec, plan, trace, opts, "tokenscale")
    iso_total = None if None in fleets.isolated else sum(n or 0 for n in fleets.isolated)
    sim_pays = iso_total is not None and fleets.shared is not None and iso_total <= fleets.shared
    r = fleets.replayed
    return {
        "shape": shape.name,
        "about": shape.about,
        "requests": len(trace.requests),
        "plan": {
            "classes": {c.name: round(c.share, 3) for c in s.classes},
            "isolated_gpus": s.isolated_gpus,
            "shared_gpus": s.shared_gpus,
            "pays": s.pays,
            "short_ttft_p99_own_s": s.classes[0].ttft_p99_s,
            "short_ttft_p99_shared_s": s.classes[0].ttft_p99_shared_s,
        },
        "static": {
            "isolated_replicas": dict(
                zip([c.name for c in s.classes], fleets.isolated, strict=True)
            ),
            "shared_replicas": fleets.shared,
            "isolated_gpu_hours": None if r is None else r.isolated.gpu_hours,
            "shared_gpu_hours": None if r is None else r.shared.gpu_hours,
            "short_ttft_p99_own_s": None if r is None else r.isolated_by_class[0].ttft_p99_s,
            "short_ttft_p99_shared_s": None if r is None else r.shared_by_class[0].ttft_p99_s,
            "pays": sim_pays,
        },
        "tokenscale": {
            "isolated_gpu_hours": scaled.isolated.gpu_hours,
            "isolated_attainment": scaled.isolated.slo_attainment,
            "shared_gpu_hours": scaled.shared.gpu_hours,
            "shared_attainment": scaled.shared.slo_attainment,
        },
        "agree": s.pays == sim_pays,
    }


def _ms(x: float | None) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x * 1e3:,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="Trace length per shape.")
    parser.add_argument("--json", action="store_true", help="Print the results as JSON.")
    args = parser.parse_args()
    rows = [run_shape(shape, args.minutes) for shape in SHAPES]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        "shape           | plan GPUs iso/shared, pays | short TTFT P99 plan own/shared ms | "
        "sim static replicas iso/shared (GPU-h) | short TTFT P99 sim own/shared ms | "
        "tokenscale GPU-h iso/shared (attainment) | agree"
    )
    for row in rows:
        p, st, ts = row["plan"], row["static"], row["tokenscale"]
        iso = "+".join(str(n) for n in st["isolated_replicas"].values())
        gh = (
            ""
            if st["isolated_gpu_hours"] is None
            else f" ({st['isolated_gpu_hours']:.2f}/{st['shared_gpu_hours']:.2f})"
        )
        print(
            f"{row['shape']:<15} | {p['isolated_gpus']}/{p['shared_gpus']}, "
            f"{'yes' if p['pays'] else 'no'} | {_ms(p['short_ttft_p99_own_s'])}/"
            f"{_ms(p['short_ttft_p99_shared_s'])} | {iso}/{st['shared_replicas']}{gh}, "
            f"{'pays' if st['pays'] else 'does not pay'} | {_ms(st['short_ttft_p99_own_s'])}/"
            f"{_ms(st['short_ttft_p99_shared_s'])} | {ts['isolated_gpu_hours']:.2f}/"
            f"{ts['shared_gpu_hours']:.2f} ({ts['isolated_attainment']:.2%}/"
            f"{ts['shared_attainment']:.2%}) | {'yes' if row['agree'] else 'NO'}"
        )
    agreed = sum(1 for row in rows if row["agree"])
    print(f"\nthe planner's verdict agrees with the simulator's on {agreed} of {len(rows)} shapes")


if __name__ == "__main__":
    main()
