"""Plan one InferenceService: resolve inputs, size at each TP, choose, explain.

``tensorParallelSize: auto`` plans every valid TP in {1, 2, 4, 8} that fits on a node and
chooses the feasible one with the fewest GPUs in the fleet (``replicas × TP``); ties go to the
lower cost per 1M output tokens, then to the smaller TP (more, smaller replicas fail smaller).
"""

from dataclasses import dataclass

from tokenscale.api.hardware import GpuSpec
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning.formulas import GIB, littles_law_concurrency, token_rates, weight_bytes
from tokenscale.planning.inputs import (
    ResolvedModel,
    ServingDefaults,
    bytes_per_param,
    check_tp,
    resolve_gpu,
    resolve_model,
    valid_tp_sizes,
    vllm_serving_defaults,
)
from tokenscale.planning.measured import MeasuredPoint, measured_point, token_mismatch
from tokenscale.planning.memory import (
    activation_peak_bytes,
    kv_capacity_blocks,
    kv_geometry,
    memory_budget,
)
from tokenscale.planning.operating_point import find_operating_point, slo_estimates
from tokenscale.planning.performance import PerfModel, link_bytes_per_s, peak_flops
from tokenscale.planning.pricing import Pricing, price_plan
from tokenscale.planning.result import (
    ConcurrencyLimits,
    MemoryBreakdown,
    Plan,
    SloCheck,
    TpCandidate,
)
from tokenscale.planning.sizing import ConstraintInput, SizingInputs, size


@dataclass(frozen=True)
class _Context:
    spec: InferenceServiceSpec
    name: str
    gpu: GpuSpec
    gpu_key: str
    model: ResolvedModel
    defaults: ServingDefaults


def _resolve(spec: InferenceServiceSpec, name: str) -> _Context:
    gpu = resolve_gpu(spec)
    return _Context(
        spec=spec,
        name=name,
        gpu=gpu,
        gpu_key=spec.hardware.gpu or gpu.name,
        model=resolve_model(spec),
        defaults=vllm_serving_defaults(gpu),
    )


def _perf_model(ctx: _Context, tp: int, max_num_batched_tokens: int) -> PerfModel:
    spec, model, gpu = ctx.spec, ctx.model, ctx.gpu
    w, serving = spec.workload, spec.serving
    return PerfModel(
        arch=model.architecture,
        params=model.params,
        geometry=kv_geometry(model.architecture, model.kv_bytes_per_element, tp),
        weight_bytes_per_param=bytes_per_param(model.weight_dtype),
        tp=tp,
        hbm_bytes_per_s=gpu.hbm_bandwidth_gbps * 1e9,
        link_bytes_per_s=link_bytes_per_s(gpu),
        flops_per_s=peak_flops(gpu, model.weight_dtype)[0],
        assumptions=spec.assumptions,
        max_num_batched_tokens=max_num_batched_tokens,
        chunked_prefill=serving.enable_chunked_prefill,
        mean_input_tokens=w.input_tokens.mean,
        mean_output_tokens=w.output_tokens.mean,
        prefix_cache_hit_rate=w.prefix_cache_hit_rate if serving.enable_prefix_caching else 0.0,
    )


def predict_tpot(spec: InferenceServiceSpec, tensor_parallel_size: int, batch: float) -> float:
    """The planner's TPOT for ``batch`` running sequences per replica (for calibration)."""
    ctx = _resolve(spec, "")
    batched = spec.serving.max_num_batched_tokens or ctx.defaults.max_num_batched_tokens
    return _perf_model(ctx, tensor_parallel_size, batched).tpot_seconds(max(batch, 1.0))


def replica_perf_model(spec: InferenceServiceSpec, plan: Plan) -> PerfModel:
    """The timing model behind ``plan`` (its TP and token budget), for the fleet simulator."""
    return _perf_model(
        _resolve(spec, plan.name), plan.tensor_parallel_size, plan.max_num_batched_tokens
    )


def _max_model_len(
    ctx: _Context, capacity_tokens: float, held: float, reasons: list[str], warnings: list[str]
) -> int:
    """``--max-model-len``: the workload's cap, else the model's max lowered to fit the KV pool
    (as vLLM's ``--max-model-len auto`` would)."""
    arch, w = ctx.model.architecture, ctx.spec.workload
    if w.max_context_tokens is not None:
        if w.max_context_tokens > arch.max_context_tokens:
            reasons.append(
                f"context exceeds the model's max: spec.workload.maxContextTokens="
                f"{w.max_context_tokens:,} > {arch.max_context_tokens:,}"
            )
        elif capacity_tokens > 0 and held > capacity_tokens:
            reasons.append(
                f"one request at maxContextTokens={w.max_context_tokens:,} needs {held:,.0f} KV "
                f"tokens but a replica holds {capacity_tokens:,.0f}; vLLM would refuse to start. "
                "Lower maxContextTokens, use more GPUs per replica, or FP8 KV"
            )
        return w.max_context_tokens
    if capacity_tokens > 0 and held > capacity_tokens:
        block = ctx.spec.serving.block_size
        fitted = int(capacity_tokens // block * block)
        warnings.append(
            f"max model len lowered from the model's {arch.max_context_tokens:,} to {fitted:,} "
            "tokens to fit the KV pool (set spec.workload.maxContextTokens to choose)"
        )
        return max(fitted, block)
    return arch.max_context_tokens


def _plan_at(ctx: _Context, tp: int) -> Plan:
    spec, model, gpu = ctx.spec, ctx.model, ctx.gpu
    arch, a, w, serving = model.architecture, spec.assumptions, spec.workload, spec.serving
    reasons: list[str] = []
    warnings: list[str] = []
    bpp = bytes_per_param(model.weight_dtype)
    weights = weight_bytes(model.params.total, bpp)
    geom = kv_geometry(arch, model.kv_bytes_per_element, tp)
    seqs = serving.max_num_seqs or ctx.defaults.max_num_seqs
    batched = serving.max_num_batched_tokens or ctx.defaults.max_num_batched_tokens
    activation = (
        a.activation_peak_gib * GIB
        if a.activation_peak_gib is not None
        else activation_peak_bytes(arch, tp, batched, seqs)
    )
    budget = memory_budget(gpu, spec.hardware.gpu_memory_utilization, weights, tp, activation, a)
    blocks = kv_capacity_blocks(budget.kv_pool_bytes, geom, serving.block_size)
    capacity = float(blocks * serving.block_size)
    if budget.kv_pool_bytes <= 0:
        overheads = budget.usable_bytes - budget.weights_bytes - budget.kv_pool_bytes
        reasons.append(
            f"does not fit at TP={tp}: weights {budget.weights_bytes / GIB:,.1f} GiB + "
            f"overheads {overheads / GIB:,.1f} GiB "
            f"per GPU exceed the usable {budget.usable_bytes / GIB:,.1f} GiB "
            f"({spec.hardware.gpu_memory_utilization:.2f} × {gpu.memory_gib:,.1f} GiB)"
        )
    model_max = arch.max_context_tokens
    max_len_hint = w.max_context_tokens or model_max
    max_len = _max_model_len(ctx, capacity, geom.tokens_held(max_len_hint), reasons, warnings)
    if not serving.enable_chunked_prefill and batched < max_len:
        batched = max_len  # vLLM raises the budget to max_model_len without chunked prefill
    p99_ctx = w.input_tokens.p99_or_mean + w.output_tokens.p99_or_mean
    if p99_ctx > max_len:
        reasons.append(
            f"a P99 request ({w.input_tokens.p99_or_mean:,.0f} in + "
            f"{w.output_tokens.p99_or_mean:,.0f} out = {p99_ctx:,.0f} tokens) exceeds the max "
            f"context {max_len:,}; vLLM would reject it"
        )
    for label, tokens in (("input", w.input_tokens), ("output", w.output_tokens)):
        if tokens.p99 is None:
            warnings.append(f"no spec.workload.{label}Tokens.p99: the mean is used as P99")
    flops, flops_note = peak_flops(gpu, model.weight_dtype)
    perf = _perf_model(ctx, tp, batched)
    op = find_operating_point(perf, spec.slo, w.input_tokens, w.output_tokens, seqs)
    measured = measured_point(spec.profile, spec.slo, tp, ctx.gpu_key, warnings)
    if measured is not None:
        mismatch = token_mismatch(measured, w.input_tokens.mean, w.output_tokens.mean)
        if mismatch:
            warnings.append(mismatch)
    if op.slo_batch == 0 and measured is None:
        misses = [
            e
            for e in slo_estimates(perf, spec.slo, 1, w.input_tokens, w.output_tokens)
            if not e.met
        ]
        reasons.append(
            "SLO unreachable even at batch 1: "
            + "; ".join(
                f"{e.name} estimate {e.estimate_s:.3f}s > target {e.target_s:.3f}s" for e in misses
            )
        )
    batch = float(op.batch)
    tpot = perf.tpot_seconds(batch)
    ttft99 = perf.ttft_seconds(batch, w.input_tokens.p99_or_mean)

    def request_s(b: float) -> float:
        """In-flight time of a mean request at batch b: TTFT (with queueing) + decode."""
        return perf.ttft_seconds(b, w.input_tokens.mean) + w.output_tokens.mean * (
            perf.tpot_seconds(b)
        )

    def running_s(b: float) -> float:
        """Time a mean request holds a batch slot and KV at batch b: b / completions per s."""
        return b / perf.request_rate(b)

    mean_request_s = request_s(batch)
    sources: dict[str, str] = {}
    if measured is not None:
        m = measured.step
        batch = measured.concurrency
        mean_request_s = measured.request_s
        tpot = m.tpot_p50_seconds if m.tpot_p50_seconds is not None else tpot
        ttft99 = m.ttft_p99_seconds if m.ttft_p99_seconds is not None else ttft99
        for key in ("rps_per_replica", "operating_batch", "latency_estimates"):
            sources[key] = measured.source
    design_rps = w.rps.design_rps
    input_tps, output_tps = token_rates(design_rps, w.input_tokens.mean, w.output_tokens.mean)
    concurrency = littles_law_concurrency(design_rps, mean_request_s)
    out_tps_replica = perf.output_tps(batch)
    rps_replica = perf.request_rate(batch)
    if measured is not None:
        rps_replica = measured.step.requests_per_second
        out_tps_replica = rps_replica * w.output_tokens.mean
    held_mean = geom.tokens_held(w.input_tokens.mean + w.output_tokens.mean / 2.0)
    held_p99 = geom.tokens_held(min(p99_ctx, float(max_len)))
    reserve = max(0.0, held_p99 - held_mean)
    kv_batch = (capacity * a.kv_target_utilization - reserve) / held_mean
    if capacity > 0 and kv_batch < 1:
        reasons.append(
            f"one P99 request needs {held_p99:,.0f} KV tokens; with it a replica's "
            f"{capacity:,.0f} × {a.kv_target_utilization:.2f} leaves no room for a mean request"
        )
    safe = float(op.safe_concurrency)
    throughput_in = ConstraintInput(batch, running_s(batch))
    slots_in = ConstraintInput(safe, request_s(safe))
    if measured is not None:
        safe = measured.concurrency
        throughput_in = slots_in = ConstraintInput(safe, measured.request_s)
    sizing = size(
        SizingInputs(
            design_rps=design_rps,
            output_tokens_mean=w.output_tokens.mean,
            throughput=throughput_in,
            slots=slots_in,
            kv=ConstraintInput(kv_batch, running_s(kv_batch))
            if kv_batch >= 1
            else ConstraintInput(1.0, 0.0),
            kv_tokens_mean_request=held_mean,
            kv_tokens_reserve=reserve,
            kv_capacity_tokens=capacity,
            kv_target_utilization=a.kv_target_utilization,
        ),
        spec.scaling,
    )
    warnings.extend(sizing.warnings)
    if not serving.enable_chunked_prefill and w.input_tokens.p99_or_mean > 2048:
        warnings.append("chunked prefill is off: long prompts stall every decode (TPOT P99)")
    prices = Pricing.for_gpu(spec.cost, ctx.gpu_key)
    costs = price_plan(
        prices,
        tp,
        sizing.replicas.total,
        out_tps_replica,
        rps_replica * w.input_tokens.mean,
        rps_replica,
    )
    if prices.gpu_hour_price is None:
        warnings.append("no spec.cost.gpuHourPrice: cost figures are omitted")
    return Plan(
        name=ctx.name,
        model=spec.model.name,
        model_source=model.source,
        gpu=ctx.gpu_key,
        weight_dtype=model.weight_dtype,
        checkpoint_weight_dtype=model.checkpoint_dtype,
        kv_cache_dtype="fp8" if model.kv_bytes_per_element == 1.0 else "auto",
        params=model.params.total,
        active_params=model.params.active,
        weight_bytes=weights,
        kv_bytes_per_token=geom.bytes_per_token,
        kv_bytes_per_token_per_gpu=geom.bytes_per_token_per_rank,
        tensor_parallel_size=tp,
        max_model_len=max_len,
        max_num_seqs=seqs,
        max_num_batched_tokens=batched,
        memory_per_gpu=MemoryBreakdown(
            gpu_total_bytes=budget.total_bytes,
            usable_bytes=budget.usable_bytes,
            weights_bytes=budget.weights_bytes,
            activation_bytes=budget.activation_bytes,
            cuda_graph_bytes=budget.cuda_graph_bytes,
            nccl_bytes=budget.nccl_bytes,
            runtime_bytes=budget.runtime_bytes,
            kv_pool_bytes=budget.kv_pool_bytes,
        ),
        kv_capacity_tokens_per_replica=capacity,
        kv_capacity_blocks_per_replica=blocks,
        kv_bytes_per_request_mean=geom.bytes_per_token * held_mean,
        kv_bytes_per_request_p99=geom.bytes_per_token * held_p99,
        max_concurrency_per_replica=safe,
        concurrency_limits=ConcurrencyLimits(
            max_num_seqs=seqs,
            slo=float(op.slo_batch) if op.slo_batch is not None else None,
            knee=float(op.knee),
            kv_mean_context=capacity * a.kv_target_utilization / held_mean,
            kv_p99_context=capacity / held_p99 if held_p99 > 0 else 0.0,
        ),
        design_rps=design_rps,
        input_tps=input_tps,
        output_tps=output_tps,
        concurrency=concurrency,
        mean_request_s=mean_request_s,
        operating_batch=batch,
        ttft_p99_estimate_s=ttft99,
        tpot_estimate_s=tpot,
        e2e_p99_estimate_s=ttft99 + w.output_tokens.p99_or_mean * tpot,
        prefill_p99_s=perf.prefill_seconds(
            w.input_tokens.p99_or_mean * (1.0 - perf.prefix_cache_hit_rate)
        ),
        decode_step_s=perf.step_seconds(batch),
        slo_checks=_slo_checks(perf, spec, batch, measured),
        output_tps_per_replica=out_tps_replica,
        input_tps_per_replica=rps_replica * w.input_tokens.mean,
        rps_per_replica=rps_replica,
        replicas=sizing.replicas,
        constraints=sizing.constraints,
        binding_constraint=sizing.binding,
        gpus_total=sizing.replicas.total * tp,
        gpu_hours_per_million_output_tokens=costs.gpu_hours_per_million_output_tokens,
        cost_per_hour=costs.fleet_cost_per_hour,
        cost_per_million_output_tokens=costs.per_million_output,
        cost_per_million_input_tokens=costs.per_million_input,
        cost_per_million_tokens=costs.per_million_blended,
        cost_per_request=costs.per_request,
        currency=spec.cost.currency,
        feasible=not reasons,
        infeasible_reasons=reasons,
        warnings=warnings,
        assumptions={
            **a.model_dump(mode="json"),
            "peak_tflops": flops / 1e12,
            "peak_tflops_note": flops_note,
            "hbm_bandwidth_gbps": gpu.hbm_bandwidth_gbps,
            "interconnect_gbps": link_bytes_per_s(gpu) / 1e9,
            "kv_bytes_per_element": model.kv_bytes_per_element,
            "serving_defaults": ctx.defaults.source,
            "operating_point_limited_by": op.limited_by,
        },
        tp_candidates=[],
        sources=sources,
    )


def _slo_checks(
    perf: PerfModel, spec: InferenceServiceSpec, batch: float, measured: MeasuredPoint | None
) -> list[SloCheck]:
    """The model's estimates, or the measured P99s where a profile applies."""
    w = spec.workload
    estimates = slo_estimates(perf, spec.slo, batch, w.input_tokens, w.output_tokens)
    if measured is not None:
        m = measured.step
        seen = {
            "ttft_p99": m.ttft_p99_seconds,
            "tpot_p99": m.tpot_p99_seconds,
            "e2e_p99": m.e2e_p99_seconds,
            "ttft_p95": m.ttft_p95_seconds,
            "tpot_p95": m.tpot_p95_seconds,
            "e2e_p95": m.e2e_p95_seconds,
        }
        return [
            SloCheck(name=e.name, target_s=e.target_s, estimate_s=v, met=v <= e.target_s)
            if (v := seen.get(e.name)) is not None
            else SloCheck(name=e.name, target_s=e.target_s, estimate_s=e.estimate_s, met=e.met)
            for e in estimates
        ]
    return [
        SloCheck(name=e.name, target_s=e.target_s, estimate_s=e.estimate_s, met=e.met)
        for e in estimates
    ]


def _candidate(p: Plan) -> TpCandidate:
    reason = (
        "; ".join(p.infeasible_reasons)
        if not p.feasible
        else (f"{p.replicas.total} replicas × TP {p.tensor_parallel_size}")
    )
    return TpCandidate(
        tensor_parallel_size=p.tensor_parallel_size,
        feasible=p.feasible,
        replicas=p.replicas.total,
        gpus=p.gpus_total,
        cost_per_million_output_tokens=p.cost_per_million_output_tokens,
        reason=reason,
    )


def _choose(plans: list[Plan]) -> Plan:
    feasible = [p for p in plans if p.feasible]
    if feasible:
        return min(
            feasible,
            key=lambda p: (
                p.gpus_total,
                p.gpu_hours_per_million_output_tokens or 0.0,
                p.tensor_parallel_size,
            ),
        )
    fits = [p for p in plans if p.kv_capacity_blocks_per_replica > 0]
    return fits[0] if fits else plans[-1]


def plan_service(spec: InferenceServiceSpec, name: str = "") -> Plan:
    """Plan ``spec``. Raises :class:`SpecError` for invalid input; infeasibility is a Plan."""
    ctx = _resolve(spec, name)
    arch, hw = ctx.model.architecture, spec.hardware
    if hw.tensor_parallel_size != "auto":
        check_tp(arch, hw.tensor_parallel_size, hw.gpus_per_node)
        return _plan_at(ctx, hw.tensor_parallel_size)
    sizes = valid_tp_sizes(arch, hw.gpus_per_node)
    if not sizes:
        check_tp(arch, 1, hw.gpus_per_node)  # raises with the reason
    plans = [_plan_at(ctx, tp) for tp in sizes]
    chosen = _choose(plans)
    candidates = [_candidate(p) for p in plans]
    if not any(p.feasible for p in plans) and all(
        p.kv_capacity_blocks_per_replica == 0 for p in plans
    ):
        need = chosen.weight_bytes / GIB
        reason = (
            f"does not fit at any TP ({', '.join(str(t) for t in sizes)}): "
            f"{need:,.1f} GiB of weights on {ctx.gpu.memory_gib:,.1f} GiB GPUs, at most "
            f"{max(sizes)} per replica (gpusPerNode={hw.gpus_per_node})"
        )
        return chosen.model_copy(
            update={
                "infeasible_reasons": [reason, *chosen.infeasible_reasons],
                "tp_candidates": candidates,
            }
        )
    return chosen.model_copy(update={"tp_candidates": candidates})
