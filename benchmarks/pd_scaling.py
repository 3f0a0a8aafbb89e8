"""Per-role scaling of a prefill/decode fleet in the simulator, against static fleets.

Llama-3.1-8B on H100 SXM, long prompts (8,000 mean / 16,000 P99 in, 200 / 400 out), TTFT P99
3 s, TPOT P99 20 ms, ``disaggregation: auto`` (planned for 20 RPS). The trace is a step:
``--base`` RPS for 120 s, ×4 for ``--hold`` seconds, then ``--after`` seconds back at base
(Poisson, seeded). Three fleets replay it:

- **scaled**: starts at the plan's counts, each role scaled by the operator's per-role policy
  (``Stepper.step_roles``, ``simulation/disaggregated_scaling.py``; 120 s cold start, 15 s
  decisions and scrapes);
- **static plan**: the plan's counts throughout;
- **static smallest**: the smallest static pair meeting the SLO on this trace
  (``fewest_disaggregated``).

GPU-hours count the trace's span (the one loop's end-of-run rule; the scaled fleet's
starting and draining replicas included, the static fleets at their counts);
attainment is the share of requests served within both latency SLOs (the playground's
``slo_attainment``).
Figures are reported, not asserted (``tests/unit/test_pd_scaled_sim.py`` asserts the policy's
behaviour).

    python benchmarks/pd_scaling.py [--base 5] [--hold 300] [--after 600] [--json]
        [--workload-source max|observed|forecast]

``--playground HIGH`` replays instead what ``tokenscale playground --pd --high-rps HIGH`` plays:
the bundled P/D spec (Llama-3.1-8B on L4, ``data/playground/llama-3.1-8b-l4-pd.yaml``), its
step load (15 minutes, the middle third at HIGH RPS, else half the spec's mean, the spec's own
lengths, seed 0) and the playground's 60-s cold start: the simulator's side of the
playground's P/D runs.
"""

import argparse
import json
import sys
import time
from typing import Any

from tokenscale.api.inference_service import InferenceService
from tokenscale.planning import plan_service
from tokenscale.scaling.roles import pools
from tokenscale.simulation.capacity import meets_slo
from tokenscale.simulation.disaggregated import engines, fewest_disaggregated, replay_disaggregated
from tokenscale.simulation.disaggregated_scaling import replay_scaled
from tokenscale.simulation.summary import meets
from tokenscale.simulation.trace import Trace, percentile
from tokenscale.simulation.workloads import LONG_PROMPT, step


def spec() -> InferenceService:
    m = LONG_PROMPT
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
                "slo": {"ttftP99Seconds": 3.0, "tpotP99Seconds": 0.02},
                "serving": {"disaggregation": "auto"},
            },
        }
    )


def playground_case(high_rps: float) -> tuple[InferenceService, Trace]:
    """The playground's P/D spec and the step load ``tokenscale playground --pd`` plays."""
    from tokenscale.playground.load import shaped_trace  # noqa: PLC0415
    from tokenscale.playground.service import (  # noqa: PLC0415
        PD_SPEC,
        default_spec_path,
        load_service,
        spec_mix,
    )

    text = default_spec_path(PD_SPEC).read_text()
    service = load_service(text, PD_SPEC)
    svc = InferenceService.model_validate(service.manifest)
    low = svc.spec.workload.rps.mean / 2
    return svc, shaped_trace("step", 900.0, low, high_rps, mix=spec_mix(service))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=float, default=5.0, help="RPS before and after the step")
    parser.add_argument("--hold", type=float, default=300.0, help="seconds at 4 × base")
    parser.add_argument("--after", type=float, default=600.0, help="seconds back at base")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--workload-source",
        choices=("max", "observed", "forecast"),
        default=None,
        help="spec.scaling.policy.workloadSource for the scaled fleet (default: the spec's)",
    )
    parser.add_argument(
        "--playground",
        type=float,
        default=None,
        metavar="HIGH",
        help="the playground's P/D spec and step load to HIGH RPS (module docstring)",
    )
    args = parser.parse_args()
    started = time.monotonic()
    cold_start = 120.0
    if args.playground is None:
        svc = spec()
        trace = step(args.base, LONG_PROMPT, 4.0, 120.0, args.hold, args.after, seed=1)
    else:
        svc, trace = playground_case(args.playground)
        cold_start = 60.0
    if args.workload_source is not None:
        policy = svc.spec.scaling.policy.model_copy(
            update={"workload_source": args.workload_source}
        )
        scaling = svc.spec.scaling.model_copy(update={"policy": policy})
        svc = svc.model_copy(update={"spec": svc.spec.model_copy(update={"scaling": scaling})})
    plan = plan_service(svc.spec, svc.metadata.name)
    _, prefill, decode = pools(plan)
    e = engines(svc.spec, plan)
    span_h = (trace.requests[-1].arrival_s if trace.requests else 0.0) / 3600.0
    rows: list[dict[str, Any]] = []
    run = replay_scaled(svc.spec, plan, e, trace, cold_start_s=cold_start)
    peak = (run.replicas_max["prefill"], run.replicas_max["decode"])
    rows.append(
        {
            "fleet": "scaled",
            "prefill": f"{prefill.replicas}→{peak[0]} peak",
            "decode": f"{decode.replicas}→{peak[1]} peak",
            "gpu_hours": round(run.gpu_hours, 3),
            "ttft_p99_s": round(run.ttft_p99_s, 3),
            "tpot_p99_s": round(run.tpot_p99_s, 4),
            "meets_slo": run.meets_slo,
            "slo_attainment": round(run.slo_attainment, 3),
        }
    )
    static = [(prefill.replicas, decode.replicas, "static plan")]
    smallest = fewest_disaggregated(e, trace, svc.spec.slo, prefill.replicas, decode.replicas)
    if smallest is not None:
        static.append((smallest.prefill_replicas, smallest.decode_replicas, "static smallest"))
    for p, d, name in static:
        rec = replay_disaggregated(e.prefill, e.decode, p, d, e.transfer_s, trace)
        outs = rec.outcomes
        rows.append(
            {
                "fleet": name,
                "prefill": str(p),
                "decode": str(d),
                # a static fleet holds its GPUs for the trace's span
                "gpu_hours": round((p * e.prefill_gpus + d * e.decode_gpus) * span_h, 3),
                "ttft_p99_s": round(percentile([o.ttft_s for o in outs], 0.99), 3),
                "tpot_p99_s": round(
                    percentile([o.tpot_s for o in outs if o.output_tokens > 1], 0.99), 4
                ),
                "meets_slo": meets_slo(rec, svc.spec.slo),
                "slo_attainment": round(
                    sum(1 for o in outs if meets(o, svc.spec.slo)) / max(len(trace.requests), 1), 3
                ),
            }
        )
    took = time.monotonic() - started
    if args.json:
        json.dump({"requests": len(trace.requests), "rows": rows, "seconds": took}, sys.stdout)
        print()
        return
    print(f"{len(trace.requests)} requests, {trace.source}")
    print(
        "| fleet | prefill | decode | GPU-hours | TTFT P99 s | TPOT P99 s | SLO met | attainment |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['fleet']} | {r['prefill']} | {r['decode']} | {r['gpu_hours']} | "
            f"{r['ttft_p99_s']} | {r['tpot_p99_s']} | {'yes' if r['meets_slo'] else 'no'} | "
            f"{r['slo_attainment']:.1%} |"
        )
    print(f"({took:.0f} s)")


if __name__ == "__main__":
    main()
