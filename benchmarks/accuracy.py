"""Score the planner against published vLLM measurements; print every error.

Run: ``python benchmarks/accuracy.py`` (``--json`` for machine-readable output).

The data is ``benchmarks/accuracy/measurements.yaml`` (sources in
``benchmarks/accuracy/README.md``). Each entry is rebuilt as an InferenceService spec (same
model, GPU, TP, weight and KV dtype, ``gpuMemoryUtilization``, context and block size, fixed
input/output lengths) and planned with :func:`tokenscale.planning.plan_service`; latencies come
from the replica's :class:`~tokenscale.planning.PerfModel`:

- KV capacity: ``plan.kv_capacity_tokens_per_replica`` (a measured ``Available KV cache
  memory: X GiB`` is turned into tokens exactly as vLLM does: whole blocks of
  ``block_size × KV bytes per token per GPU``)
- TPOT at concurrency C: ``tpot_seconds(C)``; an offline batch of B prompts:
  ``prefill_seconds(B × in) + (out − 1) × step_seconds(B)``
- TTFT at concurrency 1: ``own_ttft_seconds(0, in)`` (the prefill plus the fixed per-request
  latency outside the GPU)
- throughput at concurrency C: ``output_tps(C)`` (and ``output_tps(C) / output_tps(1)``)

Engine version: vLLM reserves CUDA-graph memory before it sizes the KV pool only since 0.21
(before, graphs were captured out of the ``gpu_memory_utilization`` slack; vLLM issue 46462
quotes the start-up notice), and not at all under ``--enforce-eager``; such entries get
``assumptions.cudaGraphGiB: 0``, a fact about the deployment like its
``gpuMemoryUtilization``.

Split: entries sorted by id; every third one (positions 2, 5, 8, … counting from 0) is held
out, the rest is the fit set that the model's constants were tuned on. Entries added later
carry ``split: fit`` or ``split: held-out`` (the same rule applied to the added batch, sorted by
id) and are left out of the count, so adding data never moves an entry between the sets.

Validity: every entry says whether it measures what it claims (``validity``, with a one-line
``validity_reason``): ``measured`` entries are scored as points; ``lower-bound`` entries as
bounds (the estimate may not fall below the measurement by more than the group's mean target);
``excluded`` entries stay in the file, keep their place in the split count, and are not scored.

The targets are reported, not asserted: scoring always exits 0.

``--check [FILE]`` is the physics gate instead (the repository's file by default): every
entry's implied FLOP/s and HBM bytes/s against its GPU's datasheet peaks
(:mod:`tokenscale.planning.physics`); exit 1 naming each rejected entry that is not already
``excluded``, 0 when all pass, 2 when the file cannot be read as a measurements file.
"""

import sys

# The script's own folder holds ``operator.py``, which would shadow the standard library's
# ``operator`` module when run as ``python benchmarks/accuracy.py``: drop it from the path first.
if sys.path and sys.path[0].rstrip("/").endswith("benchmarks"):
    del sys.path[0]

import argparse
import json
import math
import re
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "operator"))

from tokenscale.api import InferenceService, InferenceServiceSpec  # noqa: E402
from tokenscale.api.hardware import GpuSpec  # noqa: E402
from tokenscale.catalog.gpus import GPU_CATALOG  # noqa: E402
from tokenscale.catalog.models import find_model  # noqa: E402
from tokenscale.planning import (  # noqa: E402
    PerfModel,
    physics,
    plan_service,
    replica_perf_model,
)

DATA = ROOT / "benchmarks" / "accuracy" / "measurements.yaml"
GIB = 1024**3

#: metric group of each kind
GROUPS = {
    "kv_capacity_tokens": "kv",
    "kv_cache_gib": "kv",
    "kv_capacity_blocks": "kv",
    "tpot_s": "decode",
    "batch_latency_s": "decode",
    "ttft_s": "ttft",
    "throughput_tok_s": "throughput",
    "throughput_ratio": "throughput",
}

#: (mean target, worst target or None) per group, as fractions
TARGETS: dict[str, tuple[float, float | None]] = {
    "kv": (0.03, 0.08),
    "decode": (0.10, 0.20),
    "ttft": (0.15, None),
    "throughput": (0.15, None),
}

VALIDITY = ("measured", "lower-bound", "excluded")


@dataclass(frozen=True)
class Row:
    id: str
    split: str
    kind: str
    group: str
    model: str
    gpu: str
    tp: int
    weight_dtype: str
    measured: float
    estimate: float
    unit: str
    error: float
    source: str
    validity: str = "measured"
    bound_held: bool | None = None
    """For a lower bound: whether the estimate stays above ``measured × (1 − mean target)``."""


def _config(data: dict[str, Any], entry: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The spec's model section and the config.json fields for one entry."""
    name = entry.get("model_config", entry["model"])
    if name in data.get("models", {}):
        cfg = dict(data["models"][name]["config"])
    else:
        catalog = find_model(name)
        if catalog is None:
            raise SystemExit(
                f"{entry['id']}: model {name!r} is neither in the catalog nor in models:"
            )
        if entry["weight_dtype"] not in ("int4", "int8"):
            return {"catalog": catalog.key}, catalog.config
        cfg = dict(catalog.config)
    if entry["weight_dtype"] in ("int4", "int8") and "quantization_config" not in cfg:
        # the measured checkpoint is the pre-quantized one (its config.json carries this);
        # the base model's shapes are the same
        method = "awq" if "awq" in str(entry["model"]).lower() else "gptq"
        bits = 4 if entry["weight_dtype"] == "int4" else 8
        cfg["quantization_config"] = {"quant_method": method, "bits": bits}
    return {"hfConfig": cfg}, cfg


def _kv_bytes_per_token_per_gpu(cfg: dict[str, Any], tp: int, kv_dtype: str) -> float:
    layers = int(cfg["num_hidden_layers"])
    heads = int(cfg["num_attention_heads"])
    kv_heads = int(cfg.get("num_key_value_heads") or heads)
    head_dim = int(cfg.get("head_dim") or int(cfg["hidden_size"]) // heads)
    return 2.0 * layers * max(1, kv_heads // tp) * head_dim * (1.0 if kv_dtype == "fp8" else 2.0)


def _reserves_cuda_graphs(entry: dict[str, Any]) -> bool:
    """Whether the measured engine set CUDA-graph memory aside before sizing the KV pool."""
    if entry.get("enforce_eager"):
        return False
    if "reserves_cuda_graphs" in entry:
        return bool(entry["reserves_cuda_graphs"])
    found = re.search(r"(\d+)\.(\d+)", str(entry.get("vllm", "")))
    return found is None or (int(found[1]), int(found[2])) >= (0, 21)


def build_spec(
    data: dict[str, Any], entry: dict[str, Any], overrides: dict[str, float] | None = None
) -> InferenceServiceSpec:
    """The entry as an InferenceService spec; ``overrides`` are ``spec.assumptions`` fields."""
    model_source, _ = _config(data, entry)
    inp = int(entry.get("input_tokens", 1000))
    out = int(entry.get("output_tokens", 200))
    hardware: dict[str, Any] = {
        "tensorParallelSize": int(entry["tp"]),
        "gpuMemoryUtilization": float(entry.get("gpu_memory_utilization", 0.9)),
    }
    gpu = entry["gpu"]
    if gpu in GPU_CATALOG:
        hardware["gpu"] = gpu
    else:
        hardware["gpuSpec"] = data["gpus"][gpu]["spec"]
    serving: dict[str, Any] = {"blockSize": int(entry.get("block_size", 16))}
    if entry.get("max_num_seqs"):
        serving["maxNumSeqs"] = int(entry["max_num_seqs"])
    if entry.get("max_num_batched_tokens"):
        serving["maxNumBatchedTokens"] = int(entry["max_num_batched_tokens"])
    manifest = {
        "apiVersion": "tokenscale.io/v1alpha1",
        "kind": "InferenceService",
        "metadata": {"name": entry["id"]},
        "spec": {
            "model": {
                "name": str(entry["model"]).split(" ")[0],
                **model_source,
                "weightDtype": entry["weight_dtype"],
                "kvCacheDtype": "fp8" if entry.get("kv_dtype") == "fp8" else "auto",
            },
            "hardware": hardware,
            "workload": {
                "rps": {"mean": 1},
                "inputTokens": {"mean": inp},
                "outputTokens": {"mean": out},
                "maxContextTokens": int(entry.get("max_model_len", inp + out)),
            },
            "serving": serving,
            "assumptions": (
                ({} if _reserves_cuda_graphs(entry) else {"cudaGraphGiB": 0}) | (overrides or {})
            ),
        },
    }
    return InferenceService.model_validate(manifest).spec


def validity(entry: dict[str, Any]) -> str:
    v = str(entry.get("validity", "measured"))
    if v not in VALIDITY:
        raise SystemExit(f"{entry['id']}: validity {v!r} is not one of {', '.join(VALIDITY)}")
    return v


def split_of(data: dict[str, Any]) -> dict[str, str]:
    """Each entry's set: pinned by ``split:``, else every third of the unpinned ones by id."""
    position = 0
    out = {}
    for e in sorted(data["measurements"], key=lambda e: str(e["id"])):
        if e.get("split") in ("fit", "held-out"):
            out[str(e["id"])] = str(e["split"])
        else:
            out[str(e["id"])] = "held-out" if position % 3 == 2 else "fit"
            position += 1
    return out


def estimate(
    data: dict[str, Any], entry: dict[str, Any], overrides: dict[str, float] | None = None
) -> tuple[float, float]:
    """(measured, estimate) in the unit the comparison is made in."""
    spec = build_spec(data, entry, overrides)
    plan = plan_service(spec)
    kind, value = entry["kind"], float(entry["value"])
    if kind == "kv_capacity_tokens":
        return value, float(plan.kv_capacity_tokens_per_replica)
    if kind == "kv_capacity_blocks":
        block = int(entry.get("block_size", 16))
        return value * block, float(plan.kv_capacity_tokens_per_replica)
    if kind == "kv_cache_gib":
        _, cfg = _config(data, entry)
        block = int(entry.get("block_size", 16))
        per_token = _kv_bytes_per_token_per_gpu(
            cfg, int(entry["tp"]), entry.get("kv_dtype", "auto")
        )
        measured_tokens = math.floor(value * GIB / (block * per_token)) * block
        return float(measured_tokens), float(plan.kv_capacity_tokens_per_replica)
    perf = replica_perf_model(spec, plan)
    inp = float(entry["input_tokens"])
    out = float(entry["output_tokens"])
    if kind == "tpot_s":
        tpot = perf.tpot_seconds(float(entry["concurrency"]))
        if entry["unit"].startswith("tok/s"):
            return value, 1.0 / tpot
        return value, tpot * 1e3
    if kind == "batch_latency_s":
        b = float(entry["batch"])
        return value, perf.prefill_seconds(b * inp) + (out - 1.0) * perf.step_seconds(b)
    if kind == "ttft_s":
        return value, perf.own_ttft_seconds(0.0, inp) * 1e3
    if kind == "throughput_tok_s":
        return value, perf.output_tps(float(entry["concurrency"]))
    if kind == "throughput_ratio":
        return value, perf.output_tps(float(entry["concurrency"])) / perf.output_tps(1.0)
    raise SystemExit(f"{entry['id']}: unknown kind {kind!r}")


def evaluate(data: dict[str, Any], overrides: dict[str, float] | None = None) -> list[Row]:
    entries = sorted(data["measurements"], key=lambda e: str(e["id"]))
    splits = split_of(data)
    rows = []
    for e in entries:
        split = splits[str(e["id"])]
        measured, est = estimate(data, e, overrides)
        unit = "tokens" if e["kind"].startswith("kv_") else str(e["unit"])
        v = validity(e)
        group = GROUPS[e["kind"]]
        held = est >= measured * (1.0 - TARGETS[group][0]) if v == "lower-bound" else None
        rows.append(
            Row(
                id=str(e["id"]),
                split=split,
                kind=str(e["kind"]),
                group=GROUPS[e["kind"]],
                model=str(e["model"]).split(" ")[0],
                gpu=str(e["gpu"]),
                tp=int(e["tp"]),
                weight_dtype=str(e["weight_dtype"]),
                measured=measured,
                estimate=est,
                unit=unit,
                error=est / measured - 1.0,
                source=str(e["source"]),
                validity=v,
                bound_held=held,
            )
        )
    return rows


def summarize(rows: list[Row]) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for split in ("fit", "held-out", "all"):
        out[split] = {}
        for group, (mean_target, worst_target) in TARGETS.items():
            mine = [r for r in rows if r.group == group and split in ("all", r.split)]
            errs = [abs(r.error) for r in mine if r.validity == "measured"]
            bounds = [r for r in mine if r.validity == "lower-bound"]
            if not errs and not bounds:
                continue
            mean = statistics.fmean(errs) if errs else 0.0
            worst = max(errs) if errs else 0.0
            held = sum(1 for r in bounds if r.bound_held)
            met = (
                mean <= mean_target
                and (worst_target is None or worst <= worst_target)
                and held == len(bounds)
            )
            out[split][group] = {
                "n": len(errs),
                "mean_abs_error": mean,
                "worst_abs_error": worst,
                "target_mean": mean_target,
                "target_worst": worst_target,
                "bounds": len(bounds),
                "bounds_held": held,
                "excluded": sum(1 for r in mine if r.validity == "excluded"),
                "met": met,
            }
    return out


@dataclass(frozen=True)
class Check:
    id: str
    validity: str
    possible: bool | None
    """None: nothing to check alone (a ratio)."""
    reason: str


def _perf(data: dict[str, Any], entry: dict[str, Any]) -> tuple[PerfModel, GpuSpec]:
    spec = build_spec(data, entry)
    plan = plan_service(spec)
    gpu = entry["gpu"]
    if gpu in GPU_CATALOG:
        gpu_spec = GPU_CATALOG[gpu].spec
    else:
        gpu_spec = GpuSpec.model_validate(data["gpus"][gpu]["spec"])
    return replica_perf_model(spec, plan), gpu_spec


def _seconds(entry: dict[str, Any]) -> float:
    value, unit = float(entry["value"]), str(entry["unit"])
    if unit.startswith("tok/s"):
        return 1.0 / value
    return value / 1e3 if unit == "ms" else value


def _series(entry: dict[str, Any]) -> tuple[str, ...]:
    keys = ("source", "model", "gpu", "tp", "weight_dtype", "kv_dtype", "vllm", "concurrency")
    return tuple(str(entry.get(k)) for k in keys)


def physics_check(data: dict[str, Any]) -> list[Check]:
    """Every entry against its GPU's peaks (:mod:`tokenscale.planning.physics`), and every
    pair of TTFTs of one series on their difference."""
    entries = sorted(data["measurements"], key=lambda e: str(e["id"]))
    verdicts: dict[str, list[physics.Verdict]] = {str(e["id"]): [] for e in entries}
    perfs = {}
    for e in entries:
        perf, gpu = _perf(data, e)
        perfs[str(e["id"])] = (perf, gpu)
        kind, dtype, tp = e["kind"], e["weight_dtype"], int(e["tp"])
        inp = float(e.get("input_tokens", 0))
        out = float(e.get("output_tokens", 0))
        if kind.startswith("kv_"):
            measured, _ = estimate(data, e)
            verdicts[str(e["id"])].append(physics.kv_pool_verdict(perf, gpu, measured))
            continue
        if kind == "ttft_s":
            work = physics.prefill_work(perf, inp, _seconds(e))
        elif kind == "tpot_s":
            work = physics.decode_step_work(
                perf, float(e["concurrency"]), inp + out / 2.0, _seconds(e)
            )
        elif kind == "batch_latency_s":
            work = physics.batch_latency_work(perf, float(e["batch"]), inp, out, _seconds(e))
        elif kind == "throughput_tok_s":
            work = physics.throughput_work(
                perf, float(e["concurrency"]), inp, out, float(e["value"])
            )
        else:
            continue
        verdicts[str(e["id"])].append(physics.judge(work, gpu, dtype, tp))
    ttfts: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for e in entries:
        if e["kind"] == "ttft_s":
            ttfts.setdefault(_series(e), []).append(e)
    for series in ttfts.values():
        series.sort(key=lambda e: float(e["input_tokens"]))
        for i, short in enumerate(series):
            if float(short["input_tokens"]) < physics.MARGINAL_MIN_TOKENS:
                continue
            for long in series[i + 1 :]:
                perf, gpu = perfs[str(long["id"])]
                work = physics.marginal_prefill_work(
                    perf,
                    (float(short["input_tokens"]), _seconds(short)),
                    (float(long["input_tokens"]), _seconds(long)),
                )
                v = physics.judge(work, gpu, long["weight_dtype"], int(long["tp"]))
                if not v.possible:
                    verdicts[str(short["id"])].append(v)
                    verdicts[str(long["id"])].append(v)
    checks = []
    for e in entries:
        found = verdicts[str(e["id"])]
        if not found:
            checks.append(Check(str(e["id"]), validity(e), None, "a ratio: nothing to check alone"))
            continue
        bad = [v for v in found if not v.possible]
        shown = bad or found
        checks.append(Check(str(e["id"]), validity(e), not bad, "; ".join(v.reason for v in shown)))
    return checks


def run_check(path: Path) -> int:
    """Print the gate's verdict per entry; 1 when an entry that is not excluded is rejected,
    2 when the file cannot be read as a measurements file."""
    try:
        data = yaml.safe_load(path.read_text())
        checks = physics_check(data)
    except (OSError, yaml.YAMLError) as exc:
        print(f"{path}: cannot read it: {exc}", file=sys.stderr)
        return 2
    except (KeyError, TypeError, ValueError) as exc:
        print(
            f"{path}: not a measurements file as benchmarks/accuracy/README.md describes it "
            f"(a `measurements:` list of entries with id, kind, model, gpu, tp, weight_dtype, "
            f"value, unit): {type(exc).__name__} {exc}",
            file=sys.stderr,
        )
        return 2
    failed = 0
    for c in checks:
        if c.possible is None:
            status = "n/a"
        elif c.possible:
            status = "ok"
        elif c.validity == "excluded":
            status = "rejected (excluded)"
        else:
            status = "REJECTED"
            failed += 1
        print(f"{c.id:44} {status:20} {c.reason}")
    print(
        f"\n{failed} rejected entr{'y' if failed == 1 else 'ies'} not excluded "
        f"(margin {physics.PHYSICS_MARGIN:.0%} over the datasheet peaks)"
    )
    return 1 if failed else 0


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument(
        "--check",
        nargs="?",
        const=DATA,
        type=Path,
        metavar="FILE",
        help="the physics gate on FILE (default: the repository's measurements) instead",
    )
    args = parser.parse_args()
    if args.check is not None:
        return run_check(args.check)
    data = yaml.safe_load(DATA.read_text())
    rows = evaluate(data)
    summary = summarize(rows)
    if args.json:
        print(json.dumps({"entries": [asdict(r) for r in rows], "summary": summary}, indent=2))
        return 0
    print(
        f"{'id':44} {'set':8} {'validity':11} {'GPU':15} {'TP':>2} {'dtype':5} "
        f"{'measured':>12} {'estimate':>12} {'unit':9} {'error':>7}"
    )
    for r in rows:
        mark = ""
        if r.bound_held is not None:
            mark = " bound held" if r.bound_held else " BOUND MISSED"
        print(
            f"{r.id:44} {r.split:8} {r.validity:11} {r.gpu:15} {r.tp:>2} {r.weight_dtype:5} "
            f"{_fmt(r.measured):>12} {_fmt(r.estimate):>12} {r.unit[:9]:9} {r.error:+7.1%}{mark}"
        )
    print()
    print(f"{'set':9} {'metric':11} {'n':>3} {'mean |err|':>10} {'worst':>8} {'bounds':>7}  target")
    for split, groups in summary.items():
        for group, s in groups.items():
            worst_t = f", worst ≤ {s['target_worst']:.0%}" if s["target_worst"] else ""
            verdict = "met" if s["met"] else "MISSED"
            bounds = f"{s['bounds_held']}/{s['bounds']}" if s["bounds"] else "-"
            mean = f"{s['mean_abs_error']:.1%}" if s["n"] else "-"
            worst = f"{s['worst_abs_error']:.1%}" if s["n"] else "-"
            print(
                f"{split:9} {group:11} {s['n']:>3} {mean:>10} {worst:>8} {bounds:>7}  "
                f"mean ≤ {s['target_mean']:.0%}{worst_t}: {verdict}"
            )
    excluded = sum(1 for r in rows if r.validity == "excluded")
    print(
        f"\n{len(rows)} measurements ({excluded} excluded, not scored; bounds held / bounds: "
        f"the estimate at most the group's mean target below a lower bound); "
        "sources: benchmarks/accuracy/README.md"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
