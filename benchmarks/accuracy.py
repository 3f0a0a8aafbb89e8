"""Score the planner against published vLLM measurements; print every error.

Run: ``python benchmarks/accuracy.py`` (``--json`` for machine-readable output).

One yardstick over the five files of ``benchmarks/accuracy/`` (sources in
``benchmarks/accuracy/README.md``): ``measurements.yaml`` (aggregated serving),
``disaggregation.yaml`` (prefill/decode pairs), ``speculative.yaml``, ``multinode.yaml`` and
``lora.yaml`` (LoRA adapters' step cost).
Each entry of ``measurements.yaml`` is rebuilt as an InferenceService spec (same model, GPU, TP,
weight and KV dtype, ``gpuMemoryUtilization``, context and block size, fixed input/output lengths)
and planned with :func:`tokenscale.planning.plan_service`; latencies come from the replica's
:class:`~tokenscale.planning.PerfModel`:

- KV capacity: ``plan.kv_capacity_tokens_per_replica`` (a measured ``Available KV cache
  memory: X GiB`` is turned into tokens exactly as vLLM does: whole blocks of
  ``block_size × KV bytes per token per GPU``)
- TPOT at concurrency C: ``tpot_seconds(C)``; an offline batch of B prompts:
  ``prefill_seconds(B × in) + (out − 1) × step_seconds(B)``
- TTFT at concurrency 1: ``own_ttft_seconds(0, in)`` (the request overhead + the prefill; no
  queue at concurrency 1)
- throughput at concurrency C: ``output_tps(C)`` (and ``output_tps(C) / output_tps(1)``)

The other files' entries are estimated by their own scripts' functions
(``accuracy_disaggregation.estimate``, ``accuracy_speculative.score``,
``accuracy_multinode.estimate``, ``accuracy_lora.score``) and scored here in the same groups:
KV capacity, decode (TPOT, batch latency, P/D decode step), TTFT (TTFT, P/D TTFT idle and under
load, P/D prefill), throughput, and four groups without a target — ``overhead`` (a TTFT at
concurrency 1 whose prefill is a few percent of it, ``measures: request-overhead``: it scores the
request overhead, not the prefill), ``transfer`` (a P/D KV transfer), ``speculative`` (the
speed-up) and ``lora`` (the LoRA part of a decode step, or the throughput with LoRA ÷ without).

Engine version: vLLM reserves CUDA-graph memory before it sizes the KV pool only since 0.21
(before, graphs were captured out of the ``gpu_memory_utilization`` slack; vLLM issue 46462
quotes the start-up notice), and not at all under ``--enforce-eager``; such entries get
``assumptions.cudaGraphGiB: 0``, a fact about the deployment like its
``gpuMemoryUtilization``.

Split: by source, not by row. Each source in a file's ``sources:`` says ``split: fit`` or
``split: held-out``; a held-out source is held out whole, so the held-out set can catch a wrong
engine or a wrong functional form, not only interpolate one sweep. The constants are fitted on
the fit set only.

Validity: every entry of every file says whether it measures what it claims (``validity``,
with a one-line ``validity_reason``): ``measured`` entries are scored as points; ``lower-bound``
entries as bounds (the estimate may not fall below the measurement by more than the group's mean
target); ``excluded`` entries stay in the file and are not scored.

The targets are reported, not asserted: scoring always exits 0.

``--check [FILE ...]`` is the physics gate instead (the five files by default): every
entry's implied FLOP/s, HBM bytes/s and link bytes/s against its GPU's datasheet peaks
(:mod:`tokenscale.planning.physics`); exit 1 naming each rejected entry that is not already
``excluded``, 0 when all pass, 2 when a file cannot be read as a measurements file.
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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from benchmarks import (  # noqa: E402
    accuracy_disaggregation,
    accuracy_lora,
    accuracy_multinode,
    accuracy_speculative,
)
from tokenscale.api import InferenceService, InferenceServiceSpec  # noqa: E402
from tokenscale.api.assumptions import Assumptions  # noqa: E402
from tokenscale.api.hardware import GpuSpec  # noqa: E402
from tokenscale.catalog.gpus import GPU_CATALOG  # noqa: E402
from tokenscale.catalog.models import find_model  # noqa: E402
from tokenscale.planning import (  # noqa: E402
    PerfModel,
    physics,
    plan_service,
    replica_perf_model,
)
from tokenscale.planning.performance import link_bytes_per_s  # noqa: E402

DATA = ROOT / "benchmarks" / "accuracy" / "measurements.yaml"
#: The five files of the yardstick, by the name used in the tables.
FILES = {
    name: ROOT / "benchmarks" / "accuracy" / f"{name}.yaml"
    for name in ("measurements", "disaggregation", "speculative", "multinode", "lora")
}
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
    # disaggregation.yaml
    "kv_transfer_s": "transfer",
    "pd_ttft_s": "ttft",
    "pd_ttft_at_rate_s": "ttft",
    "prefill_s": "ttft",
    "decode_step_s": "decode",
    "itl_ratio": "decode",
    # speculative.yaml (entries carry no kind: the speed-up)
    "speedup": "speculative",
    # multinode.yaml
    "throughput_tok_s_per_gpu": "throughput",
    "throughput_tok_s_per_node": "throughput",
    "layout_ratio": "throughput",
    # lora.yaml (entries carry no kind: the scorer names it)
    "lora_step_s": "lora",
    "lora_throughput_ratio": "lora",
}

#: (mean target, worst target or None) per group, as fractions; None: reported, no target
TARGETS: dict[str, tuple[float, float | None] | None] = {
    "kv": (0.03, 0.08),
    "decode": (0.10, 0.20),
    "ttft": (0.15, None),
    "throughput": (0.15, None),
    "overhead": None,
    "transfer": None,
    "speculative": None,
    "lora": None,
}

#: The group of an entry that ``measures: request-overhead``.
OVERHEAD = "request-overhead"

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
    file: str = "measurements"


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


#: Engine generations the planner does not describe (it describes today's vLLM), each with its
#: own per-step cost on top of ``stepOverheadSeconds``, fitted on the fit set's decode points of
#: that generation (``python benchmarks/accuracy_refit.py --engine``) and scored on the held-out
#: ones: vLLM before 0.6.0 spent much of each step on the CPU (the vLLM blog, "vLLM v0.6.0: 2.7x
#: Throughput Improvement and 5x Latency Reduction", 2024-09-05: for Llama 3 8B on one H100, 33 %
#: of the time in the HTTP server and 29 % in scheduling). Fit: PRs 3240 and 3692 (vLLM
#: 0.3.3/0.4.0, 15 points); held out: PR 4002 (0.4.0, 6 points).
ENGINE_STEP_OVERHEAD_S: dict[str, float] = {"vllm<0.6": 0.0035}


def engine_generation(entry: dict[str, Any]) -> str | None:
    """The entry's engine generation where it has its own term (``ENGINE_STEP_OVERHEAD_S``)."""
    found = re.search(r"(\d+)\.(\d+)", str(entry.get("vllm", "")))
    if found is not None and (int(found[1]), int(found[2])) < (0, 6):
        return "vllm<0.6"
    return None


def _engine_overrides(entry: dict[str, Any], overrides: dict[str, float]) -> dict[str, float]:
    generation = engine_generation(entry)
    if generation is None:
        return overrides
    step = overrides.get("stepOverheadSeconds", Assumptions().step_overhead_seconds)
    return overrides | {"stepOverheadSeconds": step + ENGINE_STEP_OVERHEAD_S[generation]}


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
                ({} if _reserves_cuda_graphs(entry) else {"cudaGraphGiB": 0})
                | _engine_overrides(entry, overrides or {})
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
    """Each entry's set: its source's ``split`` (a held-out source is held out whole)."""
    sources = data.get("sources") or {}
    out = {}
    for e in data["measurements"]:
        src = sources.get(e["source"]) or {}
        out[str(e["id"])] = "held-out" if src.get("split") == "held-out" else "fit"
    return out


def group_of(entry: dict[str, Any]) -> str:
    """The entry's group: its kind's, or ``overhead`` where it measures the request overhead."""
    if entry.get("measures") == OVERHEAD:
        return "overhead"
    return GROUPS[str(entry.get("kind", "speedup"))]


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
        group = group_of(e)
        rows.append(
            Row(
                id=str(e["id"]),
                split=split,
                kind=str(e["kind"]),
                group=group,
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
                bound_held=_bound_held(v, group, measured, est),
            )
        )
    return rows


def _bound_held(v: str, group: str, measured: float, est: float) -> bool | None:
    target = TARGETS[group]
    if v != "lower-bound":
        return None
    return est >= measured * (1.0 - (target[0] if target else 0.0))


def lora_kind(e: dict[str, Any]) -> str:
    """The kind of a lora.yaml entry: a decode step's LoRA part, or a throughput ratio."""
    return "lora_step_s" if e.get("itl_ms_with") is not None else "lora_throughput_ratio"


def _other_row(name: str, data: dict[str, Any], e: dict[str, Any], split: str) -> Row:
    """One entry of disaggregation.yaml, speculative.yaml, multinode.yaml or lora.yaml, scored."""
    kind = str(e.get("kind", "speedup"))
    if name == "lora":
        kind = lora_kind(e)
        e = e | {"kind": kind}
        scored = accuracy_lora.score(e | {"held_out": split == "held-out"})
        measured = float(scored.get("measured", math.nan))
        est = float(scored.get("estimate", math.nan))
        tp, unit = 1, "ms" if kind == "lora_step_s" else "ratio"
    elif name == "disaggregation":
        measured, est, _ = accuracy_disaggregation.estimate(data, e)
        tp, unit = int(e["layout"]["prefill_tp"]), "ratio" if kind == "itl_ratio" else "s"
    elif name == "speculative":
        scored = accuracy_speculative.score(e)
        measured, est = scored["speedup_measured"], scored["speedup_estimate"]
        tp, unit = int(e.get("tp", 1)), "×"
    else:
        measured = float(e["value"])
        got = accuracy_multinode.estimate(e)
        est = math.nan if got is None else got
        tp, unit = int(e["layout"]["tp"]), str(e["unit"])
    group, v = group_of(e), validity(e)
    return Row(
        id=str(e["id"]),
        split=split,
        kind=kind,
        group=group,
        model=str(e["model"]).split(" ")[0],
        gpu=str(e["gpu"]),
        tp=tp,
        weight_dtype=str(e.get("weight_dtype", "bf16")),
        measured=float(measured),
        estimate=float(est),
        unit=unit,
        error=float(est) / float(measured) - 1.0,
        source=str(e["source"]),
        validity=v,
        bound_held=_bound_held(v, group, float(measured), float(est)),
        file=name,
    )


def load_files(names: tuple[str, ...] = tuple(FILES)) -> dict[str, dict[str, Any]]:
    """The files by name; speculative entries completed by the file's ``defaults``."""
    out = {}
    for name in names:
        data = yaml.safe_load(FILES[name].read_text())
        if "defaults" in data:
            data = data | {"measurements": [data["defaults"] | e for e in data["measurements"]]}
        out[name] = data
    return out


def evaluate_all(
    files: dict[str, dict[str, Any]] | None = None, overrides: dict[str, float] | None = None
) -> list[Row]:
    """Every entry of every file, scored (``overrides`` apply to measurements.yaml's specs)."""
    files = load_files() if files is None else files
    rows: list[Row] = []
    for name, data in files.items():
        if name == "measurements":
            rows += evaluate(data, overrides)
            continue
        splits = split_of(data)
        for e in data["measurements"]:
            rows.append(_other_row(name, data, e, splits[str(e["id"])]))
    return rows


def summarize(rows: list[Row]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per set (fit, held-out, all) and group: the measured points' mean and worst absolute
    error, the bounds held, the entries excluded, and the verdict against the target."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for split in ("fit", "held-out", "all"):
        out[split] = {}
        for group, target in TARGETS.items():
            mine = [r for r in rows if r.group == group and split in ("all", r.split)]
            errs = [abs(r.error) for r in mine if r.validity == "measured"]
            bounds = [r for r in mine if r.validity == "lower-bound"]
            excluded = sum(1 for r in mine if r.validity == "excluded")
            if not errs and not bounds and not excluded:
                continue
            mean = statistics.fmean(errs) if errs else 0.0
            worst = max(errs) if errs else 0.0
            held = sum(1 for r in bounds if r.bound_held)
            mean_target, worst_target = target if target else (None, None)
            met = (
                None
                if mean_target is None or (not errs and not bounds)
                else (
                    mean <= mean_target
                    and (worst_target is None or worst <= worst_target)
                    and held == len(bounds)
                )
            )
            out[split][group] = {
                "n": len(errs),
                "mean_abs_error": mean,
                "worst_abs_error": worst,
                "target_mean": mean_target,
                "target_worst": worst_target,
                "bounds": len(bounds),
                "bounds_held": held,
                "excluded": excluded,
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


#: vLLM's default ``max_num_seqs``: where a throughput's concurrency is not stated, the gate
#: counts the fewest decode steps the engine could have run (the largest batch it allows).
DEFAULT_MAX_NUM_SEQS = 256


def gate_entry(e: dict[str, Any]) -> dict[str, Any] | None:
    """The entry of any of the five files as a measurements.yaml entry the gate can count the
    work of (the kind it is judged as, the replica's TP, seconds), or None: nothing to check."""
    kind = e.get("kind")
    if "itl_ms_without" in e or "throughput_without" in e:  # lora.yaml: the step without LoRA
        if e.get("itl_ms_without") is None or e.get("gpu") is None:
            return None
        return e | {"tp": 1, "weight_dtype": "bf16", "concurrency": e["batch"], "kind": "lora"}
    if kind is None:  # speculative.yaml: the TPOT without speculation, and the target's step
        if e.get("tpot_ms_without") is None and e.get("tpot_ms_with") is None:
            return None
        base = {"tp": int(e.get("tp", 1)), "weight_dtype": "bf16", "concurrency": e["batch"]}
        return e | base | {"kind": "speculative"}
    if kind in GROUPS and "layout" not in e:
        return e
    layout = e.get("layout") or {}
    if kind in ("kv_transfer_s", "pd_ttft_s", "pd_ttft_at_rate_s", "prefill_s"):
        return e | {"tp": int(layout["prefill_tp"]), "max_model_len": int(e["input_tokens"]) + 1}
    if kind == "decode_step_s":
        return e | {"tp": int(layout["decode_tp"]), "max_model_len": int(e["input_tokens"]) + 1}
    if kind == "throughput_tok_s":
        model = accuracy_multinode.catalog_key(e)
        return e | {
            "model_config": model,
            "tp": int(layout["tp"]),
            "concurrency": e.get("concurrency") or DEFAULT_MAX_NUM_SEQS,
        }
    return None


def _link_bytes_per_s(gpu: GpuSpec, same_node: bool) -> float | None:
    """The fastest a KV transfer's bytes can leave one GPU: its NVLink/Infinity Fabric figure
    one way inside a node (the planner's :func:`link_bytes_per_s`: the datasheet counts both
    directions), its NIC share across nodes (the datasheet figure, no efficiency)."""
    if same_node:
        return None if gpu.interconnect_gbps is None else link_bytes_per_s(gpu)
    return None if gpu.inter_node_gbps is None else gpu.inter_node_gbps * 1e9


def _transfer_verdict(perf: PerfModel, gpu: GpuSpec, e: dict[str, Any]) -> physics.Verdict:
    same_node = bool(e["layout"].get("same_node"))
    link = _link_bytes_per_s(gpu, same_node)
    tokens = float(e["input_tokens"])
    return physics.transfer_verdict(perf, link, tokens, _seconds(e), same_node)


def _verdict(
    data: dict[str, Any], e: dict[str, Any], perf: PerfModel, gpu: GpuSpec
) -> physics.Verdict:
    kind, dtype, tp = e["kind"], e["weight_dtype"], int(e["tp"])
    inp = float(e.get("input_tokens") or 0)
    out = float(e.get("output_tokens") or 0)
    if kind.startswith("kv_capacity") or kind == "kv_cache_gib":
        measured, _ = estimate(data, e)
        return physics.kv_pool_verdict(perf, gpu, measured)
    if kind == "kv_transfer_s":
        return _transfer_verdict(perf, gpu, e)
    if kind in ("ttft_s", "pd_ttft_s", "pd_ttft_at_rate_s", "prefill_s"):
        work = physics.prefill_work(perf, inp, _seconds(e))
    elif kind == "tpot_s":
        work = physics.decode_step_work(perf, float(e["concurrency"]), inp + out / 2.0, _seconds(e))
    elif kind == "decode_step_s":
        work = physics.decode_step_work(perf, float(e["batch"]), inp, _seconds(e))
    elif kind == "speculative":
        # the TPOT without speculation is a decode step; with it, a target step emits τ tokens
        # (the target's weights read at least once per step): the tighter of the two
        steps = []
        if e.get("tpot_ms_without") is not None:
            steps.append(float(e["tpot_ms_without"]) / 1e3)
        if e.get("tpot_ms_with") is not None:
            steps.append(float(e["tpot_ms_with"]) / 1e3 * float(e["mean_accepted_length"]))
        work = physics.decode_step_work(perf, float(e["batch"]), inp + out / 2.0, min(steps))
    elif kind == "lora":
        # a decode step at the entry's batch, with or without LoRA: the weights read once
        step = min(float(e["itl_ms_without"]), float(e["itl_ms_with"])) / 1e3
        work = physics.decode_step_work(perf, float(e["batch"]), inp + out / 2.0, step)
    elif kind == "batch_latency_s":
        work = physics.batch_latency_work(perf, float(e["batch"]), inp, out, _seconds(e))
    else:  # throughput_tok_s
        work = physics.throughput_work(perf, float(e["concurrency"]), inp, out, float(e["value"]))
    return physics.judge(work, gpu, dtype, tp)


def physics_check(data: dict[str, Any]) -> list[Check]:
    """Every entry against its GPU's peaks (:mod:`tokenscale.planning.physics`), and every
    pair of TTFTs of one series on their difference. ``data`` is any of the five files."""
    if "defaults" in data:
        data = data | {"measurements": [data["defaults"] | e for e in data["measurements"]]}
    entries = sorted(data["measurements"], key=lambda e: str(e["id"]))
    gated = {str(e["id"]): gate_entry(e) for e in entries}
    verdicts: dict[str, list[physics.Verdict]] = {str(e["id"]): [] for e in entries}
    perfs = {}
    for e in entries:
        g = gated[str(e["id"])]
        if g is None:
            continue
        perf, gpu = _perf(data, g)
        perfs[str(e["id"])] = (perf, gpu)
        verdicts[str(e["id"])].append(_verdict(data, g, perf, gpu))
    ttfts: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for e in entries:
        g = gated[str(e["id"])]
        if g is not None and g["kind"] in ("ttft_s", "pd_ttft_s", "prefill_s"):
            ttfts.setdefault((g["kind"], *_series(g)), []).append(g)
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
            checks.append(Check(str(e["id"]), validity(e), None, _nothing_alone(e)))
            continue
        bad = [v for v in found if not v.possible]
        shown = bad or found
        checks.append(Check(str(e["id"]), validity(e), not bad, "; ".join(v.reason for v in shown)))
    return checks


def _nothing_alone(e: dict[str, Any]) -> str:
    kind = e.get("kind")
    if "throughput_without" in e:
        return "a throughput with LoRA ÷ without: a ratio, nothing to check alone"
    if "itl_ms_without" in e:
        return "a step whose GPU the source does not state: nothing to count"
    if kind is None:
        return "a speed-up: a ratio, nothing to check alone"
    if kind in ("throughput_tok_s_per_gpu", "throughput_tok_s_per_node"):
        return "a per-GPU figure of a layout the source does not state: nothing to count"
    return "a ratio: nothing to check alone"


def run_check(paths: list[Path]) -> int:
    """Print the gate's verdict per entry of each file; 1 when an entry that is not excluded is
    rejected, 2 when a file cannot be read as a measurements file."""
    failed = 0
    for path in paths:
        try:
            data = yaml.safe_load(path.read_text())
            checks = physics_check(data)
        except (OSError, yaml.YAMLError) as exc:
            print(f"{path}: cannot read it: {exc}", file=sys.stderr)
            return 2
        except (KeyError, TypeError, ValueError, AttributeError, SystemExit) as exc:
            print(
                f"{path}: not a measurements file as benchmarks/accuracy/README.md describes it "
                f"(a `measurements:` list of entries with id, kind, model, gpu, tp, weight_dtype, "
                f"value, unit): {type(exc).__name__} {exc}",
                file=sys.stderr,
            )
            return 2
        print(f"== {path.name}")
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


def _print_rows(rows: list[Row]) -> None:
    print(
        f"{'file':14} {'id':44} {'set':8} {'validity':11} {'group':11} {'GPU':15} {'TP':>2} "
        f"{'measured':>12} {'estimate':>12} {'unit':9} {'error':>7}"
    )
    for r in rows:
        mark = ""
        if r.bound_held is not None:
            mark = " bound held" if r.bound_held else " BOUND MISSED"
        err = "" if math.isnan(r.error) else f"{r.error:+7.1%}"
        print(
            f"{r.file:14} {r.id:44} {r.split:8} {r.validity:11} {r.group:11} {r.gpu:15} "
            f"{r.tp:>2} {_fmt(r.measured):>12} {_fmt(r.estimate):>12} {r.unit[:9]:9} "
            f"{err:>7}{mark}"
        )


def print_summary(summary: dict[str, dict[str, dict[str, Any]]]) -> None:
    """The per-set, per-group table: n, mean and worst |error|, bounds, excluded, verdict."""
    print(
        f"{'set':9} {'group':11} {'n':>3} {'mean |err|':>10} {'worst':>8} {'bounds':>7} "
        f"{'excl':>4}  target"
    )
    for split, groups in summary.items():
        for group, s in groups.items():
            if s["target_mean"] is None:
                verdict = "no target"
            else:
                worst_t = f", worst ≤ {s['target_worst']:.0%}" if s["target_worst"] else ""
                state = "-" if s["met"] is None else ("met" if s["met"] else "MISSED")
                verdict = f"mean ≤ {s['target_mean']:.0%}{worst_t}: {state}"
            bounds = f"{s['bounds_held']}/{s['bounds']}" if s["bounds"] else "-"
            mean = f"{s['mean_abs_error']:.1%}" if s["n"] else "-"
            worst = f"{s['worst_abs_error']:.1%}" if s["n"] else "-"
            print(
                f"{split:9} {group:11} {s['n']:>3} {mean:>10} {worst:>8} {bounds:>7} "
                f"{s['excluded']:>4}  {verdict}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument(
        "--check",
        nargs="*",
        type=Path,
        metavar="FILE",
        help="the physics gate on FILE(s) (default: the five files of benchmarks/accuracy/) "
        "instead",
    )
    args = parser.parse_args()
    if args.check is not None:
        return run_check(args.check or list(FILES.values()))
    rows = evaluate_all()
    summary = summarize(rows)
    if args.json:
        print(json.dumps({"entries": [asdict(r) for r in rows], "summary": summary}, indent=2))
        return 0
    _print_rows(rows)
    print()
    print_summary(summary)
    excluded = sum(1 for r in rows if r.validity == "excluded")
    print(
        f"\n{len(rows)} entries in {len(FILES)} files ({excluded} excluded, not scored; "
        "bounds held / bounds: the estimate at most the group's mean target below a lower "
        "bound; held-out: whole sources); sources: benchmarks/accuracy/README.md"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
