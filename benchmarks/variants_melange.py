"""The direction of Mélange's results (Griggs et al., "Mélange: Cost Efficient Large Language
Model Serving by Exploiting GPU Heterogeneity", 2024), in the planner's mix.

Mélange's comparable setting: Llama2-7b on A10G ($1.01/h) and A100-80GB ($3.67/h) — the
prices of its released solver example —, short (chat) requests, TPOT SLOs of 120 ms and 40 ms,
a range of request rates. Its published direction: at low rates the cheap GPU is the cheapest
single type, at higher rates the A100; a mix is never dearer than either and is cheapest over
the range; a tighter TPOT SLO shifts the mix toward the faster GPU.

Here: Llama-2-7B FP16 on the catalog's A10-24GB (standing in for the A10G, which AWS does not
publish full figures for) and A100-SXM-80GB, at the same prices; chat-sized requests
(``--input``/``--output`` means, P99 ×4; assumed, not Mélange's dataset); a TPOT SLO only (as
Mélange) with a lax TTFT bound of 10 s; load-aware routing (Mélange routes request slices to
GPUs). For each rate and SLO the table shows the planner's mix and each GPU alone.

    python benchmarks/variants_melange.py [--rates 1,2,4,8,16,32] [--input 300] [--output 250]
"""

import argparse
import sys
from typing import Any

import yaml

from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import plan_service

PRICES = {"A10-24GB": 1.01, "A100-SXM-80GB": 3.67}


def _doc(rps: float, tpot_s: float, n_in: float, n_out: float) -> dict[str, Any]:
    return {
        "apiVersion": "tokenscale.io/v1alpha1",
        "kind": "InferenceService",
        "metadata": {"name": "melange-llama2-7b"},
        "spec": {
            "model": {"name": "meta-llama/Llama-2-7b-hf", "catalog": "llama-2-7b"},
            "hardware": {
                "variants": [
                    {"gpu": g, "tensorParallelSize": 1, "maxReplicas": 200, "gpuHourPrice": p}
                    for g, p in PRICES.items()
                ]
            },
            "workload": {
                "rps": {"mean": rps},
                "inputTokens": {"mean": n_in, "p99": 4 * n_in},
                "outputTokens": {"mean": n_out, "p99": 4 * n_out},
                "maxContextTokens": 4096,
            },
            "slo": {"ttftP99Seconds": 10.0, "tpotP99Seconds": tpot_s},
            "gateway": {"inferencePool": {}},
            "scaling": {"minReplicas": 0, "maxReplicas": 400},
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rates", default="1,2,4,8,16,32")
    ap.add_argument("--input", type=float, default=300.0)
    ap.add_argument("--output", type=float, default=250.0)
    args = ap.parse_args()
    rates = [float(x) for x in args.rates.split(",")]
    print(
        f"Llama-2-7B FP16, {args.input:g} in / {args.output:g} out tokens (mean), load-aware; "
        "A10 $1.01/h, A100 $3.67/h"
    )
    print("| TPOT SLO | RPS | planner's mix | $/h | A10 alone $/h | A100 alone $/h | saving |")
    print("|---|---|---|---|---|---|---|")
    for tpot in (0.120, 0.040):
        for rps in rates:
            svc = parse_manifests(yaml.safe_dump(_doc(rps, tpot, args.input, args.output)))[0]
            p = plan_service(svc.spec, svc.metadata.name)
            alone = {v.gpu: v.single_variant for v in p.variants}
            mix = " + ".join(f"{v.replicas} × {v.gpu}" for v in p.variants if v.replicas)
            singles = [s.cost_per_hour for s in alone.values() if s.feasible and s.cost_per_hour]
            saving = (
                f"{1 - (p.cost_per_hour or 0) / min(singles):.0%}"
                if singles and p.feasible
                else "—"
            )

            def cost(gpu: str, alone: dict[str, Any] = alone) -> str:
                s = alone[gpu]
                return f"{s.cost_per_hour:.2f}" if s.feasible and s.cost_per_hour else "—"

            print(
                f"| {tpot * 1e3:.0f} ms | {rps:g} | {mix or '—'} | "
                f"{p.cost_per_hour if p.cost_per_hour is not None else float('nan'):.2f} | "
                f"{cost('A10-24GB')} | {cost('A100-SXM-80GB')} | {saving} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
