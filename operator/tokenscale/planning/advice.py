"""PURE: what the plan knows and the spec's author may not — each a line with its numbers.

- a fixed ``tensorParallelSize`` where ``auto`` needs fewer GPUs;
- 16-bit weights where online FP8 (the GPU has FP8 cores) needs fewer GPUs;
- one replica: no redundancy;
- a latency SLO no user means in seconds (``ttftP99Seconds: 800``);
- a latency SLO inside one of vLLM's histogram buckets, where live P99 reads are interpolated;
- why a replica must run lightly loaded: its own P99 prefill (or its batch-1 TPOT) already
  takes half the SLO or more — the cause behind a huge replica count;
- the knee capping the batch below what the SLOs allow: the GPUs at the SLO batch (what the
  live engine sizes at) and the ``kneeTpotRatio`` that sizes the forecast there.

Each check costs at most one more plan (``auto``, FP8 or the SLO batch). None changes the plan.
"""

import math
from dataclasses import dataclass

from tokenscale.api.errors import SpecError
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.catalog.vllm_metrics import INTER_TOKEN_BUCKETS, TTFT_BUCKETS
from tokenscale.planning.conditions import Conditions, forecast_conditions
from tokenscale.planning.formulas import counted
from tokenscale.planning.planner import layout_of, perf_at, plan_at, plan_service
from tokenscale.planning.resolve import resolve
from tokenscale.planning.result import Plan

#: An E2E objective (seconds) above which the unit is probably milliseconds: a 1-hour request.
#: (Long answers can take that long, so it is a hint; a TTFT or TPOT objective no one means is
#: refused by the spec itself, ``api/slo.py``.)
IMPLAUSIBLE_SLO_SECONDS = {"e2e": 3600.0}
#: A bucket bound this close (relative) to the SLO counts as the bound itself.
BOUND_TOLERANCE = 0.01
#: The replica's own P99 prefill (or batch-1 TPOT) above this share of the SLO leaves a replica
#: little room for anybody else's work.
SLO_SHARE_NEARLY_IDLE = 0.5
_SIXTEEN_BIT = ("bf16", "fp16", "fp32")


@dataclass(frozen=True)
class _SloField:
    key: str
    kind: str
    buckets: tuple[float, ...] | None
    metric: str


_SLO_FIELDS = (
    _SloField("ttftP99Seconds", "ttft", TTFT_BUCKETS, "vllm:time_to_first_token_seconds"),
    _SloField(
        "tpotP99Seconds", "tpot", INTER_TOKEN_BUCKETS, "vllm:request_time_per_output_token_seconds"
    ),
    _SloField("e2eP99Seconds", "e2e", None, ""),
    _SloField("ttftP95Seconds", "ttft", TTFT_BUCKETS, "vllm:time_to_first_token_seconds"),
    _SloField(
        "tpotP95Seconds", "tpot", INTER_TOKEN_BUCKETS, "vllm:request_time_per_output_token_seconds"
    ),
    _SloField("e2eP95Seconds", "e2e", None, ""),
)


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:,.0f} ms" if ms >= 10 or ms == int(ms) else f"{ms:,.1f} ms"


def _secs(seconds: float) -> str:
    return _ms(seconds) if seconds < 1 else f"{seconds:,.3g} s"


def _range(lo: float, hi: float) -> str:
    """``75–100 ms``, ``1–2.5 s``, ``0.5–1 s``."""
    if hi < 1:
        return f"{lo * 1e3:g}–{hi * 1e3:g} ms"
    return f"{lo:g}–{hi:g} s"


def slo_unit_advice(spec: InferenceServiceSpec) -> list[str]:
    """``ttftP99Seconds: 800 — did you mean milliseconds?`` for values no user means."""
    out = []
    values = spec.slo.model_dump(by_alias=True)
    for f in _SLO_FIELDS:
        value = values.get(f.key)
        bound = IMPLAUSIBLE_SLO_SECONDS.get(f.kind)
        if value is not None and bound is not None and value >= bound:
            out.append(
                f"spec.slo.{f.key}: {value:g} — did you mean milliseconds "
                f"({f.key}: {value / 1e3:g})? The unit is seconds."
            )
    return out


def bucket_of(value: float, buckets: tuple[float, ...]) -> tuple[float, float] | None:
    """The histogram bucket ``(lo, hi]`` strictly containing ``value`` (None on or near a bound,
    or beyond the largest finite one)."""
    lo = 0.0
    for hi in buckets:
        if abs(value - hi) <= BOUND_TOLERANCE * hi:
            return None
        if value < hi:
            return lo, hi
        lo = hi
    return None


def bucket_advice(spec: InferenceServiceSpec) -> list[str]:
    """An SLO inside a vLLM histogram bucket: live P99 reads there are interpolations."""
    out = []
    values = spec.slo.model_dump(by_alias=True)
    for f in _SLO_FIELDS:
        value = values.get(f.key)
        if value is None or f.buckets is None:
            continue
        bucket = bucket_of(value, f.buckets)
        if bucket is None:
            continue
        lo, hi = bucket
        out.append(
            f"spec.slo.{f.key}: {_secs(value)} sits inside vLLM's {_range(lo, hi)} "
            f"{f.kind.upper()} bucket ({f.metric}): live P99 reads there are interpolated — "
            "scale-up reads the share of requests over the SLO as a range (it acts when "
            "surely over the error budget), scale-down the bucket's range; "
            f"{f'{_secs(lo)} or ' if lo > 0 else ''}{_secs(hi)} reads exactly"
        )
    return out


def _replicas_run(p: Plan) -> int | None:
    """The replicas a plan runs: its need within ``minReplicas`` (as ``tensorParallelSize:
    auto`` compares layouts), or the need itself where ``maxReplicas`` or a pin falls short
    of it (the advice compares what serves the load)."""
    if p.replicas is None:
        return None
    return max(p.replicas.total, p.replicas.with_redundancy)


def _gpus_needed(p: Plan) -> int | None:
    if len(p.pools) > 1 and p.replicas is not None:  # a mix, a P/D pair: the pools' GPUs
        d = p.disaggregation if p.is_disaggregated else None
        need = d.gpus_needed if d is not None else None
        return max(sum(x.gpus for x in p.pools), need or 0)
    n = _replicas_run(p)
    return None if n is None else n * p.gpus_per_replica


def _gpus(n: int) -> str:
    return counted(n, "GPU")


def _fleet(p: Plan) -> str:
    if len(p.pools) > 1:
        return " + ".join(
            f"{x.replicas} {x.name} × TP {x.variant.tensor_parallel_size}"
            for x in p.pools
            if x.replicas > 0
        )
    n = _replicas_run(p)
    assert n is not None
    shape = f"TP {p.tensor_parallel_size}"
    if p.gpus_per_replica != p.tensor_parallel_size:
        shape = f"{p.gpus_per_replica} GPUs"
    return f"{n} × {shape}"


def tp_auto_advice(spec: InferenceServiceSpec, plan: Plan, name: str = "") -> list[str]:
    """A pinned TP where ``auto`` (every TP the model allows) needs fewer GPUs."""
    if not isinstance(spec.hardware.tensor_parallel_size, int):
        return []
    mine = _gpus_needed(plan)
    hw = spec.hardware.model_copy(update={"tensor_parallel_size": "auto"})
    try:
        auto = plan_service(spec.model_copy(update={"hardware": hw}), name)
    except SpecError:
        return []
    theirs = _gpus_needed(auto)
    if theirs is None or not auto.feasible or (mine is not None and theirs >= mine):
        return []
    yours = f"your {mine:,} ({_fleet(plan)})" if mine is not None else "a TP that cannot serve"
    return [f"tensorParallelSize: auto needs {_gpus(theirs)} ({_fleet(auto)}) instead of {yours}"]


def fp8_advice(spec: InferenceServiceSpec, plan: Plan, name: str = "") -> list[str]:
    """16-bit weights on a GPU with FP8 cores, where online FP8 needs fewer GPUs."""
    if plan.weight_dtype not in _SIXTEEN_BIT:
        return []
    try:
        gpu = resolve(spec, name).gpu
    except SpecError:
        return []
    if not gpu.fp8_tflops:
        return []
    model = spec.model.model_copy(update={"weight_dtype": "fp8"})
    try:
        fp8 = plan_service(spec.model_copy(update={"model": model}), name)
    except SpecError:
        return []
    mine, theirs = _gpus_needed(plan), _gpus_needed(fp8)
    if theirs is None or not fp8.feasible or (mine is not None and theirs >= mine):
        return []
    yours = f"{mine:,}" if mine is not None else "none that serves"
    return [
        f"FP8 weights (weightDtype: fp8, vLLM's online quantization): {_gpus(theirs)} "
        f"({_fleet(fp8)}) instead of {yours}; check the model's quality on your own evals"
    ]


def redundancy_advice(spec: InferenceServiceSpec, plan: Plan) -> list[str]:
    """One replica: a pod restart, a node drain or a rollout stops the service."""
    if plan.replicas is None or plan.replicas.total != 1 or spec.scaling.replicas is not None:
        return []
    return [
        "one replica: no redundancy — a pod restart, a node drain or a rollout stops the "
        "service (spec.scaling.minReplicas: 2 or redundancy.spareReplicas: 1 keeps one serving)"
    ]


def nearly_idle_advice(spec: InferenceServiceSpec, plan: Plan, name: str = "") -> list[str]:
    """The cause behind a replica that must run lightly loaded: its own P99 prefill, or its
    TPOT at batch 1, already takes half the SLO or more."""
    if plan.kv_capacity_blocks_per_replica <= 0:
        return []  # does not fit: the infeasible reason says so
    try:
        r = resolve(spec, name)
    except SpecError:
        return []
    perf = perf_at(r, forecast_conditions(r), layout_of(plan), plan.max_num_batched_tokens)
    w, slo = spec.workload, spec.slo
    shape = (
        f"TP {plan.tensor_parallel_size}"
        if plan.gpus_per_replica == plan.tensor_parallel_size
        else f"{plan.gpus_per_replica} GPUs per replica"
    )
    out = []
    if slo.ttft_p99_seconds is not None:
        prompt = w.input_tokens.p99_or_mean
        own = perf.own_ttft_seconds(1, prompt)
        if own >= SLO_SHARE_NEARLY_IDLE * slo.ttft_p99_seconds:
            left = max(slo.ttft_p99_seconds - own, 0.0)
            out.append(
                f"{shape} on {plan.gpu}: one P99 prompt ({prompt:,.0f} tokens) takes "
                f"{_secs(own)} to prefill against the {_secs(slo.ttft_p99_seconds)} TTFT P99 SLO, "
                f"leaving {_secs(left)} for waiting behind other prompts, so each replica must run "
                "lightly loaded — a larger tensorParallelSize, a faster GPU or a looser "
                "ttftP99Seconds serves with fewer replicas"
            )
    if slo.tpot_p99_seconds is not None:
        one = perf.tpot_seconds(1)
        if one >= SLO_SHARE_NEARLY_IDLE * slo.tpot_p99_seconds:
            out.append(
                f"{shape} on {plan.gpu}: one sequence alone decodes at {_ms(one)} per token "
                f"against the {_ms(slo.tpot_p99_seconds)} TPOT P99 SLO (reading "
                f"{plan.weight_bytes / plan.gpus_per_replica / 2**30:,.1f} GiB of weights per GPU "
                "per step) — a larger tensorParallelSize, quantized weights or a looser "
                "tpotP99Seconds leaves room for a batch"
            )
    return out


def knee_advice(spec: InferenceServiceSpec, plan: Plan, name: str = "") -> list[str]:
    """The knee caps the batch below the SLO batch and the SLO batch needs fewer GPUs: say how
    many, and the ``kneeTpotRatio`` that lifts the cap to it (docs/planner.md, "The knee
    against the SLO batch")."""
    lim = plan.concurrency_limits
    if plan.replicas is None or not plan.feasible or lim.slo is None or lim.slo <= lim.knee:
        return []
    try:
        r = resolve(spec, name)
    except SpecError:
        return []
    layout = layout_of(plan)
    at_slo = plan_at(r, Conditions(workload=spec.workload, knee="slo"), layout)
    mine, theirs = _gpus_needed(plan), _gpus_needed(at_slo)
    if mine is None or theirs is None or not at_slo.feasible or theirs >= mine:
        return []
    perf = perf_at(r, forecast_conditions(r), layout, plan.max_num_batched_tokens)
    ratio = math.ceil(perf.tpot_seconds(lim.slo) / perf.knee_floor_seconds(lim.slo) * 10.0) / 10.0
    return [
        f"sized at the knee (batch {lim.knee:,.0f}, TPOT {perf.assumptions.knee_tpot_ratio:g} × "
        f"the weight-read floor) where the SLOs allow batch {lim.slo:,.0f}: {_gpus(theirs)} "
        f"({_fleet(at_slo)}) instead of {mine:,} — the operator's live sizing uses the SLO "
        f"batch; spec.assumptions.kneeTpotRatio: {ratio:g} plans the launch fleet there too"
    ]


def advise(spec: InferenceServiceSpec, plan: Plan, name: str = "") -> list[str]:
    """Every advice line for ``plan`` (the plan of ``spec``), most consequential first."""
    return (
        slo_unit_advice(spec)
        + nearly_idle_advice(spec, plan, name)
        + tp_auto_advice(spec, plan, name)
        + fp8_advice(spec, plan, name)
        + knee_advice(spec, plan, name)
        + redundancy_advice(spec, plan)
        + bucket_advice(spec)
    )
