"""The planner's prefill/decode model against published measurements
(benchmarks/accuracy/disaggregation.yaml).

    PYTHONPATH=operator python benchmarks/accuracy_disaggregation.py [--json]

Each entry is rebuilt as a spec (model, GPU, weight dtype, prompt and answer lengths,
``disaggregation: on``, the roles' TP pinned) and the planner's own figures are read:

- ``kv_transfer_s``: the plan's transfer of a prompt of that length (``kv_transfer_latency_s +
  KV bytes per token × tokens held / kv_transfer_bytes_per_s``, the fabric the planner picks);
- ``pd_ttft_s``: TTFT through an idle pair (``disaggregation.prefill_ttft_seconds`` at
  utilization 0: the prompt's prefill on the prefill replica + that transfer + one decode step
  at batch 1 + the request overhead: ``requestOverheadSeconds`` + the prompt's tokens ×
  ``requestOverheadPerTokenSeconds``);
- ``pd_ttft_at_rate_s``: the same at the prefill replica's utilization under the measured rate
  (``rps × prefill_worker_service_seconds``), with the planner's own queue's mean wait (M/G/1,
  Pollaczek–Khinchine, the prompts' spread; a measured mean TTFT is scored against a mean); the
  row carries that utilization, so an overloaded measurement shows whether the planner saw the
  overload too;
- ``prefill_s`` / ``decode_step_s``: the prefill role's ``prefill_seconds`` of the prompt and
  the decode role's ``step_seconds`` at the entry's ``batch`` (the phase models both pools run);
- ``itl_ratio`` (excluded: SGLang): the decode pool's step at the batch it settles at, over the
  aggregated replica's mean TPOT at its load (``at_load``).

A TTFT measured through vLLM's toy P/D proxy (``proxy_requests: 2``: the proxy sends the prefill
as one full request and the decode as another) carries one request overhead per request, each
with the whole prompt (both servers tokenize it).

The error is ``estimate / measured − 1``; the median absolute error of the entries that are not
``validity: excluded`` is printed per source, per split (``fit`` / ``held-out``: whole sources,
``split`` in ``sources:``), per kind, and per source and split together.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import yaml

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.catalog.models import find_model
from tokenscale.planning import forecast_conditions, plan_at, plan_service, resolve
from tokenscale.planning.disaggregation import prefill_ttft_seconds
from tokenscale.planning.load import at_load
from tokenscale.planning.parallel import Layout
from tokenscale.planning.planner import perf_at, role_engine

DATA = Path(__file__).resolve().parent / "accuracy" / "disaggregation.yaml"


def _spec(data: dict[str, Any], m: dict[str, Any], tp: int, rps: float) -> InferenceServiceSpec:
    """The entry as a spec; ``layout.same_node: false`` caps ``gpusPerNode`` at one role's TP, so
    the planner's pair crosses nodes as the measured one did."""
    name = m["model"]
    if name in data.get("models", {}):
        model: dict[str, Any] = {"name": name, "hfConfig": data["models"][name]["config"]}
    else:
        entry = find_model(name)
        if entry is None:
            raise SystemExit(f"{m['id']}: {name} is neither in the catalog nor in models:")
        model = {"name": name, "catalog": entry.key}
        if m["weight_dtype"] in ("int4", "int8"):  # the measured checkpoint is GPTQ-quantized
            bits = 4 if m["weight_dtype"] == "int4" else 8
            quant = {"quant_method": "gptq", "bits": bits}
            model = {"name": name, "hfConfig": {**entry.config, "quantization_config": quant}}
    model["weightDtype"] = m["weight_dtype"]
    gpu = m["gpu"]
    hardware: dict[str, Any] = {"tensorParallelSize": tp}
    if m["layout"].get("same_node") is False:
        hardware["gpusPerNode"] = tp
    if gpu in data.get("gpus", {}):
        hardware["gpuSpec"] = data["gpus"][gpu]["spec"]
    else:
        hardware["gpu"] = gpu
    n_in, n_out = m["input_tokens"], m["output_tokens"]
    return InferenceServiceSpec.model_validate(
        {
            "model": model,
            "hardware": hardware,
            "workload": {
                "rps": {"mean": rps},
                "inputTokens": {"mean": n_in},
                "outputTokens": {"mean": n_out},
                "maxContextTokens": max(n_in + n_out, 2048),
            },
            "serving": {"disaggregation": "on", "enablePrefixCaching": False},
        }
    )


def _transfer(spec: InferenceServiceSpec, tokens: float) -> float:
    d = plan_service(spec).disaggregation
    if d is None or d.kv_transfer_bytes_per_s is None:
        raise SystemExit("the plan has no disaggregation")
    r = resolve(spec)
    geometry = perf_at(r, forecast_conditions(r), spec.hardware.tensor_parallel_size).geometry  # type: ignore[arg-type]
    held = geometry.tokens_held(tokens)
    return (d.kv_transfer_latency_s or 0.0) + geometry.bytes_per_token * held / (
        d.kv_transfer_bytes_per_s
    )


def _ttft(spec: InferenceServiceSpec, tokens: float, rps: float) -> tuple[float, float]:
    """TTFT through the pair at ``rps`` (0: idle) and the prefill replica's utilization."""
    r = resolve(spec)
    c = forecast_conditions(r)
    tp = int(spec.hardware.tensor_parallel_size)  # type: ignore[arg-type]
    prefill, decode = role_engine(r, c, Layout(tp=tp))
    rho = rps * prefill.perf.prefill_worker_service_seconds
    ttft = prefill_ttft_seconds(
        prefill.perf, rho, tokens, _transfer(spec, tokens), decode.perf.step_seconds(1.0)
    )
    return ttft, rho


def _phase(spec: InferenceServiceSpec, kind: str, tokens: float, batch: float) -> float:
    """The prefill role's prefill of ``tokens`` or the decode role's step at ``batch``, s."""
    r = resolve(spec)
    tp = int(spec.hardware.tensor_parallel_size)  # type: ignore[arg-type]
    prefill, decode = role_engine(r, forecast_conditions(r), Layout(tp=tp))
    if kind == "prefill_s":
        return prefill.perf.prefill_seconds(tokens)
    return decode.perf.step_seconds(batch)


def _itl_ratio(data: dict[str, Any], m: dict[str, Any]) -> float:
    lay, rps = m["layout"], float(m["rps"])
    agg_spec = _spec(data, m, lay["aggregated_tp"], rps)
    r = resolve(agg_spec)
    c = forecast_conditions(r)
    plan = plan_at(r, c, lay["aggregated_tp"])
    perf = perf_at(r, c, lay["aggregated_tp"], plan.max_num_batched_tokens)
    w = agg_spec.workload
    point = at_load(
        perf,
        rps / lay["aggregated_replicas"],
        w.input_tokens,
        w.output_tokens,
        float(plan.max_num_seqs),
    )
    if point is None:
        raise SystemExit(f"{m['id']}: the aggregated replicas saturate at {rps} RPS")
    pd_spec = _spec(data, m, lay["decode_tp"], rps)
    pr = resolve(pd_spec)
    _, decode = role_engine(pr, forecast_conditions(pr), Layout(tp=lay["decode_tp"]))
    batch = 1.0
    for _ in range(50):  # the batch a decode replica settles at: λ × out × t_step(B)
        batch = max(1.0, rps * m["output_tokens"] * decode.perf.step_seconds(batch))
    return decode.perf.step_seconds(batch) / point.tpot_mean_s


def estimate(data: dict[str, Any], m: dict[str, Any]) -> tuple[float, float, float | None]:
    """(measured, estimate) in seconds (a ratio for ``itl_ratio``) and, for a TTFT under load,
    the prefill replica's utilization."""
    utilization: float | None = None
    if m["kind"] == "itl_ratio":
        est = _itl_ratio(data, m)
    else:
        rps = float(m.get("rps") or 0.0) if m["kind"] == "pd_ttft_at_rate_s" else 0.0
        spec = _spec(data, m, m["layout"]["prefill_tp"], rps or 1.0)
        tokens = float(m["input_tokens"])
        if m["kind"] == "kv_transfer_s":
            est = _transfer(spec, tokens)
        elif m["kind"] in ("prefill_s", "decode_step_s"):
            est = _phase(spec, m["kind"], tokens, float(m["batch"]))
        else:
            est, rho = _ttft(spec, tokens, rps)
            extra = int(m.get("proxy_requests", 1)) - 1
            a = spec.assumptions
            est += extra * (
                a.request_overhead_seconds + tokens * a.request_overhead_per_token_seconds
            )
            utilization = rho if m["kind"] == "pd_ttft_at_rate_s" else None
    measured = m["value"] / 1000.0 if m["unit"] == "ms" else m["value"]
    return float(measured), float(est), utilization


def split_of(data: dict[str, Any], m: dict[str, Any]) -> str:
    """The entry's set: its source's (held out whole, never row by row)."""
    return "held-out" if data["sources"][m["source"]].get("split") == "held-out" else "fit"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data = yaml.safe_load(DATA.read_text())
    rows: list[dict[str, Any]] = []
    for m in data["measurements"]:
        measured, est, utilization = estimate(data, m)
        rows.append(
            {
                "id": m["id"],
                "kind": m["kind"],
                "split": split_of(data, m),
                "source": m["source"],
                "validity": m["validity"],
                "scored": m["validity"] != "excluded",
                "measured": measured,
                "estimate": est,
                "error": est / measured - 1.0,
                "prefill_utilization": utilization,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        flag = "" if row["scored"] else "  (excluded)"
        if row["prefill_utilization"] is not None:
            flag = f"  prefill utilization {row['prefill_utilization']:.2f}{flag}"
        print(
            f"{row['id']:42} {row['split']:8} measured {row['measured']:.5g}  estimate "
            f"{row['estimate']:.5g}  error {row['error']:+.1%}{flag}"
        )
    scored = [r for r in rows if r["scored"]]
    print()
    for label, key in (("source", "source"), ("split", "split"), ("kind", "kind")):
        for value in sorted({r[key] for r in scored}):
            errs = [abs(r["error"]) for r in scored if r[key] == value]
            print(
                f"median |error| by {label} {value}: {statistics.median(errs):.1%} (n={len(errs)})"
            )
    for source in sorted({r["source"] for r in scored}):
        for split in ("fit", "held-out"):
            errs = [abs(r["error"]) for r in scored if (r["source"], r["split"]) == (source, split)]
            if errs:
                print(
                    f"median |error| {source} {split}: {statistics.median(errs):.1%} "
                    f"(n={len(errs)})"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
