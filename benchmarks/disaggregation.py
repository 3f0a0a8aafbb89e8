"""Prefill/decode disaggregation: the planner's ``auto`` choice against the simulator's cheaper
architecture on the workload suite's two shapes (and a few neighbours).

For each shape (Llama-3.1-8B on H100 SXM, 20 RPS Poisson, TTFT P99 3 s), the planner's GPUs
needed each way (``disaggregation: auto``) are printed beside the smallest static fleet of each
architecture whose replay of a seeded trace meets the SLO (``simulation/disaggregated.py``),
and whether the two choose the same architecture. The figures are reported, not asserted (the
two suite shapes are asserted in tests/unit/test_disaggregated_sim.py).

    python benchmarks/disaggregation.py [--seconds 120] [--json]
"""

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from tokenscale.api.inference_service import InferenceService
from tokenscale.simulation.disaggregated import compare
from tokenscale.simulation.workloads import LONG_PROMPT, SHORT_PROMPT, TokenMix, steady


@dataclass(frozen=True)
class Shape:
    name: str
    mix: TokenMix
    tpot_s: float


SHAPES = (
    Shape("long-prompt, TPOT 20 ms (suite)", LONG_PROMPT, 0.02),
    Shape("short-prompt, TPOT 30 ms (suite)", SHORT_PROMPT, 0.03),
    Shape("long-prompt, TPOT 30 ms", LONG_PROMPT, 0.03),
    Shape("mid-prompt 2k/6k, 100 out, TPOT 20 ms", TokenMix("mid", 2000, 6000, 100, 300), 0.02),
)


def spec_for(shape: Shape) -> InferenceService:
    m = shape.mix
    return InferenceService.model_validate(
        {
            "metadata": {"name": "pd"},
            "spec": {
                "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
                "hardware": {"gpu": "H100-SXM-80GB"},
                "workload": {
                    "rps": {"mean": 20},
                    "inputTokens": {"mean": m.input_mean, "p99": m.input_p99},
                    "outputTokens": {"mean": m.output_mean, "p99": m.output_p99},
                },
                "slo": {"ttftP99Seconds": 3.0, "tpotP99Seconds": shape.tpot_s},
                "serving": {"disaggregation": "auto"},
            },
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="trace length per shape")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for shape in SHAPES:
        start = time.perf_counter()
        isvc = spec_for(shape)
        found = compare(isvc.spec, steady(args.seconds, 20.0, shape.mix, seed=1))
        a, d = found.aggregated, found.disaggregated
        rows.append(
            {
                "shape": shape.name,
                "planned_gpus_aggregated": found.planner_gpus_aggregated,
                "planned_gpus_disaggregated": found.planner_gpus_disaggregated,
                "simulated_gpus_aggregated": None if a is None else a.gpus,
                "simulated_gpus_disaggregated": None if d is None else d.gpus,
                "simulated_fleet_disaggregated": None
                if d is None
                else f"{d.prefill_replicas}P+{d.decode_replicas}D",
                "planner": "disaggregated" if found.planner_disaggregates else "aggregated",
                "simulator": {True: "disaggregated", False: "aggregated", None: "neither"}[
                    found.simulator_disaggregates
                ],
                "agree": found.agree,
                "seconds": round(time.perf_counter() - start, 1),
            }
        )
        print(f"  {shape.name}: done", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        f"{'shape':42} {'planned agg/PD':>15} {'simulated agg/PD':>17} {'PD fleet':>9} "
        f"{'planner':>14} {'simulator':>14} agree"
    )
    for r in rows:
        print(
            f"{r['shape']:42} {r['planned_gpus_aggregated']!s:>7}/"
            f"{r['planned_gpus_disaggregated']!s:<7} "
            f"{r['simulated_gpus_aggregated']!s:>8}/{r['simulated_gpus_disaggregated']!s:<8} "
            f"{r['simulated_fleet_disaggregated']!s:>9} {r['planner']:>14} {r['simulator']:>14} "
            f"{r['agree']}"
        )


if __name__ == "__main__":
    main()
