"""Plan one InferenceService: three explicit questions.

1. :func:`~tokenscale.planning.resolve.resolve` — what the spec resolves to (GPU, model shapes,
   vLLM defaults; invalid input raises ``SpecError``).
2. :func:`plan_at` — a plan for that :class:`Resolved` under :class:`Conditions` (workload,
   per-phase calibration, knee policy, profile) at one tensor-parallel size: **estimate** from
   the model (memory, KV, knobs, operating point, sizing, latency at the load each replica
   carries), **override** with a bench profile where one applies, **assemble** the Plan.
3. :func:`plan_service` — the forecast: resolve, ``plan_at`` every valid layout, choose.

A **layout** is TP on one node, or a replica that spans nodes (``planning/parallel.py``):
TP × PP pipeline stages, or for MoE models DP attention ranks with expert parallel. Multi-node
layouts are planned only where one could need fewer GPUs than the best single-node plan (or
nothing on one node serves), and only the smallest that fit per family (plus one node more),
within ``spec.hardware.maxNodesPerReplica``. A pinned ``tensorParallelSize`` pins TP; the
pipeline and expert-parallel layouts at that TP are still considered.

Auto compares layouts on what they *need* (``replicas.with_redundancy × GPUs per replica``,
before ``minReplicas``/``maxReplicas`` apply) and keeps the feasible one with the fewest GPUs;
ties go to the lower GPU-hours per 1M output tokens, then to fewer nodes per replica, then to
the smaller TP (more, smaller replicas fail smaller). A layout whose need exceeds
``maxReplicas`` is not feasible: the plan says so with the shortfall. The decision engine and
the simulator call ``plan_at`` with the layout the fleet runs (:func:`layout_of`), never
letting the model re-choose it.
"""

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.slo import Slo
from tokenscale.api.workload import TokenDistribution, Workload
from tokenscale.planning.conditions import Conditions, forecast_conditions
from tokenscale.planning.decode_gpu import decode_bandwidth_factor
from tokenscale.planning.disaggregation import (
    RATIO_SLACK,
    Fabric,
    PoolPair,
    RoleEngine,
    best_pair,
    fabric_between,
    pools,
    role_pools,
)
from tokenscale.planning.formulas import (
    GIB,
    counted,
    littles_law_concurrency,
    token_rates,
    weight_bytes,
)
from tokenscale.planning.inputs import bytes_per_param, resident_bytes_per_param
from tokenscale.planning.knobs import Knobs, choose_knobs
from tokenscale.planning.kv_wait import KvWait, fleet_replicas, kv_wait_batch
from tokenscale.planning.load import (
    LoadPoint,
    at_load,
    batch_at_rate,
    closed_loop,
    concurrency_batch,
    curve,
    point_at_batch,
    queued,
)
from tokenscale.planning.lora import lora_perf, max_loras_candidates
from tokenscale.planning.lora_plan import choose_max_loras
from tokenscale.planning.measured import MeasuredPoint, measured_point, token_mismatch
from tokenscale.planning.memory import (
    KvGeometry,
    MemoryBudget,
    activation_peak_bytes,
    kv_capacity_blocks,
    kv_geometry,
    memory_budget,
)
from tokenscale.planning.name_check import name_mismatch_warning
from tokenscale.planning.operating_point import (
    OperatingPoint,
    find_operating_point,
    slo_estimates,
)
from tokenscale.planning.parallel import (
    Layout,
    LayoutPerfModel,
    inter_node_bytes_per_s,
    kv_lanes,
    kv_layer_share,
    layouts_to_plan,
    weight_bytes_per_gpu,
)
from tokenscale.planning.performance import (
    PerfModel,
    link_bytes_per_s,
    peak_flops,
    weight_read_efficiency,
)
from tokenscale.planning.pools import serve_pool, variant_of, with_pools
from tokenscale.planning.pricing import Costs, Pricing, price_plan
from tokenscale.planning.queueing import prompt_scv
from tokenscale.planning.resolve import Resolved, resolve
from tokenscale.planning.result import (
    ConcurrencyLimits,
    CurveStep,
    Disaggregation,
    LoadEstimate,
    MemoryBreakdown,
    NoCoordination,
    Plan,
    SloCheck,
    TpCandidate,
)
from tokenscale.planning.sizing import ConstraintInput, Sizing, SizingInputs, size
from tokenscale.planning.speculative import choose_speculative, not_modelled, speculative_perf

LIVE_KNEE_TPOT_RATIO = 1e6


def layout_of(plan: Plan) -> Layout:
    """The parallel layout a plan was made at (what the fleet runs)."""
    return Layout(
        tp=plan.tensor_parallel_size,
        pp=plan.pipeline_parallel_size,
        dp=plan.data_parallel_size,
        ep=plan.expert_parallel,
        nodes=plan.nodes_per_replica,
    )


def _as_layout(tp: "int | Layout") -> Layout:
    return tp if isinstance(tp, Layout) else Layout(tp=tp)


def model_weight_bytes(r: Resolved) -> float:
    """Bytes of weights vLLM loads: ``params × bytes per param`` (int4 with its format's scales:
    ``resident_bytes_per_param``), except that quantized checkpoints (and online FP8) keep the
    embeddings and the LM head in 16 bits (AWQ, GPTQ, compressed-tensors and ``--quantization
    fp8`` quantize the linear layers only)."""
    params, bpp = r.model.params, resident_bytes_per_param(r.model)
    if bpp >= 2.0:
        return weight_bytes(params.total, bpp)
    kept = params.embedding + params.lm_head
    return weight_bytes(params.total - kept, bpp) + weight_bytes(kept, 2.0)


def perf_at(
    r: Resolved,
    conditions: Conditions,
    tp: "int | Layout",
    max_num_batched_tokens: int | None = None,
) -> PerfModel:
    """The timing model of one replica at ``tp`` (a TP size, or a multi-node layout) under
    ``conditions`` (calibration applied; the knee lifted under the ``slo`` policy when an SLO
    is set)."""
    layout = _as_layout(tp)
    spec, model, gpu = r.spec, r.model, r.gpu
    w, serving = conditions.workload, spec.serving
    a = conditions.calibration.apply(spec.assumptions)
    if conditions.knee == "slo" and spec.slo.any_set:
        a = a.model_copy(update={"knee_tpot_ratio": LIVE_KNEE_TPOT_RATIO})
    budget = (
        max_num_batched_tokens
        or serving.max_num_batched_tokens
        or r.defaults.max_num_batched_tokens
    )
    base = PerfModel(
        arch=model.architecture,
        params=model.params,
        geometry=kv_geometry(model.architecture, model.kv_bytes_per_element, layout.tp),
        weight_bytes_per_param=bytes_per_param(model.weight_dtype),
        tp=layout.tp,
        hbm_bytes_per_s=gpu.hbm_bandwidth_gbps * 1e9,
        link_bytes_per_s=link_bytes_per_s(gpu),
        flops_per_s=peak_flops(gpu, model.weight_dtype)[0],
        assumptions=a,
        max_num_batched_tokens=budget,
        chunked_prefill=serving.enable_chunked_prefill,
        mean_input_tokens=w.input_tokens.mean,
        mean_output_tokens=w.output_tokens.mean,
        prefix_cache_hit_rate=w.prefix_cache_hit_rate if serving.enable_prefix_caching else 0.0,
        tail_input_tokens=w.input_tokens.p99_or_mean,
        tail_output_tokens=w.output_tokens.p99_or_mean,
        prompt_length_scv=prompt_scv(w.input_tokens, _longest_prompt(r, w)),
        weight_read_efficiency=weight_read_efficiency(model.weight_dtype),
        decode_bandwidth_factor=decode_bandwidth_factor(r.gpu_key),
    )
    if layout.pp == 1 and layout.dp == 1:
        s = r.speculative
        if s is not None and s.enabled:
            return speculative_perf(base, s)
        return lora_perf(base, r.lora) if r.lora is not None else base
    fabric, _ = inter_node_bytes_per_s(spec.hardware.inter_node_gbps or gpu.inter_node_gbps)
    same = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    return LayoutPerfModel(**same, layout=layout, inter_node_bytes_per_s=fabric)


def _longest_prompt(r: Resolved, w: Workload) -> float:
    """The longest prompt vLLM accepts with a P99 answer: the context cap (the workload's, else
    the model's) less the P99 answer."""
    cap = w.max_context_tokens or r.model.architecture.max_context_tokens
    return max(float(cap) - w.output_tokens.p99_or_mean, 1.0)


def replica_perf_model(spec: InferenceServiceSpec, plan: Plan) -> PerfModel:
    """The timing model behind ``plan`` (its TP and token budget), for the fleet simulator."""
    r = as_planned(resolve(spec, plan.name), plan)
    return perf_at(r, forecast_conditions(r), layout_of(plan), plan.max_num_batched_tokens)


def _max_model_len(
    r: Resolved,
    w: Workload,
    capacity_tokens: float,
    held: float,
    reasons: list[str],
    warnings: list[str],
) -> int:
    """``--max-model-len``: the workload's cap, else the model's max lowered to fit the KV pool
    (as vLLM's ``--max-model-len auto`` would)."""
    arch = r.model.architecture
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
        block = r.spec.serving.block_size
        fitted = int(capacity_tokens // block * block)
        warnings.append(
            f"max model len lowered from the model's {arch.max_context_tokens:,} to {fitted:,} "
            "tokens to fit the KV pool (set spec.workload.maxContextTokens to choose)"
        )
        return max(fitted, block)
    return arch.max_context_tokens


@dataclass(frozen=True)
class _Estimate:
    """What the model says about one replica at one layout, before any measurement."""

    layout: Layout
    perf: PerfModel
    knobs: Knobs
    budget: MemoryBudget
    blocks: int
    capacity_tokens: float
    max_len: int
    op: OperatingPoint
    held_mean: float
    held_p99: float
    reserve: float
    kv_batch: float
    kv_wait: KvWait | None
    """Where the seat wait, not the room, sets ``kv_batch`` (``planning/kv_wait.py``)."""
    kv_wait_replicas: float | None
    """The replicas that seat wait takes at the design rate (``kv_batch`` is what each
    carries)."""
    concurrency_batch: float
    reasons: list[str]
    warnings: list[str]


#: ``operating_point_limited_by`` when the KV pool, at the workload's token mix, holds fewer
#: sequences than the knee, the SLOs and ``maxNumSeqs`` allow.
KV_LIMIT = "KV pool"
#: ``operating_point_limited_by`` when the batch, at the adapters' shares, would span more
#: adapters than ``maxLoras`` slots (``planning/lora.py``).
LORA_LIMIT = "LoRA slots"


def _estimate(r: Resolved, c: Conditions, layout: Layout) -> _Estimate:
    """One replica at ``layout``. With data-parallel ranks the batch, the sequence cap and the
    KV capacity are the replica's (every rank's summed); ``--max-num-seqs`` is per rank."""
    spec, model, w, serving, a = r.spec, r.model, c.workload, r.spec.serving, r.spec.assumptions
    arch = model.architecture
    tp, lanes = layout.tp, kv_lanes(layout)
    reasons: list[str] = []
    warnings: list[str] = [*model.notes, *filter(None, [name_mismatch_warning(spec)])]
    models: dict[int, PerfModel] = {}

    def perf_for(budget: int) -> PerfModel:
        """One timing model per chunk budget (their memos serve the knob and the final search)."""
        if budget not in models:
            models[budget] = perf_at(r, c, layout, budget)
        return models[budget]

    knobs = _knobs(r, c, lanes, perf_for)
    warnings.extend(knobs.warnings)
    seqs, batched = knobs.max_num_seqs, knobs.max_num_batched_tokens
    geom = kv_geometry(arch, model.kv_bytes_per_element, tp)
    budget, blocks = _kv_pool(r, layout, geom, batched, seqs)
    capacity = float(blocks * serving.block_size)
    if budget.kv_pool_bytes <= 0:
        reasons.append(_no_fit(r, layout, budget))
    max_len_hint = w.max_context_tokens or arch.max_context_tokens
    max_len = _max_model_len(
        r, w, capacity / lanes, geom.tokens_held(max_len_hint), reasons, warnings
    )
    perf = perf_for(batched)
    if not serving.enable_chunked_prefill and batched < max_len:
        # vLLM raises the budget to max_model_len without chunked prefill
        knobs = Knobs(max_len, seqs, "max_model_len: chunked prefill is off", False)
        perf = perf_at(r, c, layout, max_len)
    p99_ctx = w.input_tokens.p99_or_mean + w.output_tokens.p99_or_mean
    if p99_ctx > max_len:
        reasons.append(
            f"a P99 request ({w.input_tokens.p99_or_mean:,.0f} in + "
            f"{w.output_tokens.p99_or_mean:,.0f} out = {p99_ctx:,.0f} tokens) exceeds the max "
            f"context {max_len:,}; vLLM would reject it"
        )
    warnings.extend(_workload_warnings(w, serving.enable_chunked_prefill))
    op = find_operating_point(perf, spec.slo, w.input_tokens, w.output_tokens, seqs)
    held_mean = geom.tokens_held(w.input_tokens.mean + w.output_tokens.mean / 2.0)
    held_p99 = geom.tokens_held(min(p99_ctx, float(max_len)))
    reserve = max(0.0, held_p99 - held_mean) * lanes  # a P99 request may sit on every rank
    kv_batch, kv_wait, kv_wait_replicas = _kv_batch(
        r, c, perf, capacity, held_mean, reserve, lanes, op.batch
    )
    if capacity > 0 and kv_batch < 1:
        reasons.append(
            f"one P99 request needs {held_p99:,.0f} KV tokens; with it a replica's "
            f"{capacity:,.0f} × {a.kv_target_utilization:.2f} leaves no room for a mean request"
        )
    if 1 <= kv_batch < op.batch:  # the batch runs only as wide as the pool holds at this mix
        op = dataclasses.replace(op, batch=kv_batch, limited_by=KV_LIMIT)
    slot_cap = r.lora.batch_cap if r.lora is not None else None
    if slot_cap is not None and slot_cap < op.batch:  # requests of other adapters wait
        op = dataclasses.replace(op, batch=slot_cap, limited_by=LORA_LIMIT)
    return _Estimate(
        layout=layout,
        perf=perf,
        knobs=knobs,
        budget=budget,
        blocks=blocks,
        capacity_tokens=capacity,
        max_len=max_len,
        op=op,
        held_mean=held_mean,
        held_p99=held_p99,
        reserve=reserve,
        kv_batch=kv_batch,
        kv_wait=kv_wait,
        kv_wait_replicas=kv_wait_replicas,
        concurrency_batch=concurrency_batch(perf, float(op.safe_concurrency)),
        reasons=reasons,
        warnings=warnings,
    )


def _kv_batch(
    r: Resolved,
    c: Conditions,
    perf: PerfModel,
    capacity: float,
    held_mean: float,
    reserve: float,
    lanes: int,
    op_batch: float,
) -> tuple[float, KvWait | None, float | None]:
    """The batch the KV pool holds: its room at the target utilisation, less one P99 request,
    over a mean request's tokens — or less, where at the room's batch the TTFT tail would wait
    for a seat: the batch each replica carries when the fleet is sized so that it does not
    (``planning/kv_wait.py``; then also the reason and the replicas it takes)."""
    room = (capacity * r.spec.assumptions.kv_target_utilization - reserve) / held_mean
    if room < 1:
        return room, None, None
    seats = capacity / lanes / held_mean
    w = c.workload
    wait = kv_wait_batch(perf, r.spec.slo, seats, lanes, min(room, op_batch), w.input_tokens.mean)
    design_rps = w.rps.design_rps
    if wait is None or wait.batch < 1 or design_rps <= 0:
        return room, None, None
    need = fleet_replicas(perf, wait, lanes, design_rps)
    batch = batch_at_rate(perf, design_rps / need, min(room, op_batch))
    if batch is None or batch >= min(room, op_batch):
        return room, None, None
    return batch, wait, need


def _knobs(r: Resolved, c: Conditions, lanes: int, perf_for: Callable[[int], PerfModel]) -> Knobs:
    """The chunk budget and the sequence cap: those the fleet runs where the spec says so
    (``knobs_as_run``), else the ones chosen for the SLO (``--max-num-seqs`` per rank, × the
    ``lanes`` that hold KV)."""
    spec, w, serving = r.spec, c.workload, r.spec.serving
    if r.knobs_as_run is not None:
        run_budget, run_seqs = r.knobs_as_run
        knobs = Knobs(
            run_budget,
            run_seqs * lanes,
            f"as the fleet runs: --max-num-batched-tokens {run_budget:,}, "
            f"--max-num-seqs {run_seqs:,}",
            False,
        )
    else:
        knobs = choose_knobs(
            perf_for,
            spec.slo,
            w.input_tokens,
            w.output_tokens,
            r.defaults.max_num_batched_tokens,
            r.defaults.max_num_seqs * lanes,
            serving.max_num_batched_tokens,
            serving.max_num_seqs * lanes if serving.max_num_seqs else None,
            serving.enable_chunked_prefill,
        )
    return knobs


def _workload_warnings(w: Workload, chunked_prefill: bool) -> list[str]:
    """What the workload leaves the estimate to assume, or to suffer."""
    out = [
        f"no spec.workload.{label}Tokens.p99: the mean is used as P99"
        for label, tokens in (("input", w.input_tokens), ("output", w.output_tokens))
        if tokens.p99 is None
    ]
    if not chunked_prefill and w.input_tokens.p99_or_mean > 2048:
        out.append("chunked prefill is off: long prompts stall every decode (TPOT P99)")
    return out


def _kv_pool(
    r: Resolved, layout: Layout, geom: KvGeometry, batched: int, seqs: int
) -> tuple[MemoryBudget, int]:
    """A GPU's memory at ``layout`` (weights, the draft's, activations, NCCL) and the KV blocks
    that leave the replica (a GPU holds its stage's layers' KV; each DP rank a pool of its
    own)."""
    model, arch, a, serving = r.model, r.model.architecture, r.spec.assumptions, r.spec.serving
    tp, lanes = layout.tp, kv_lanes(layout)
    spec = r.spec
    per_gpu = (
        model_weight_bytes(r) / tp  # one node: main's accounting, 16-bit embeddings included
        if layout.gpus == tp
        else weight_bytes_per_gpu(model.params, arch, layout, resident_bytes_per_param(model))
    )
    draft = r.speculative if r.speculative is not None and r.speculative.enabled else None
    if draft is not None:  # the proposer's weights sit beside the target's, same TP
        per_gpu += draft.draft_weight_bytes / tp
    activation = (
        a.activation_peak_gib * GIB
        if a.activation_peak_gib is not None
        else activation_peak_bytes(arch, tp, batched, math.ceil(seqs / lanes))
    )
    if r.lora is not None and a.activation_peak_gib is None:
        activation += r.lora.shrink_buffer_bytes(batched)
    budget = memory_budget(
        r.gpu, spec.hardware.gpu_memory_utilization, per_gpu * tp, tp, activation, a
    )
    if r.lora is not None:  # the slots are allocated before the KV cache is sized
        budget = dataclasses.replace(budget, lora_bytes=r.lora.slots_bytes(tp))
    if layout.gpus > 1 and budget.nccl_bytes == 0.0:
        budget = dataclasses.replace(budget, nccl_bytes=a.nccl_buffer_gib * GIB)
    # a GPU holds its stage's layers' KV; each DP rank a pool of its own
    stage = dataclasses.replace(
        geom, bytes_per_token_per_rank=geom.bytes_per_token_per_rank * kv_layer_share(arch, layout)
    )
    if draft is not None:  # the proposer's KV blocks come from the same pool
        stage = dataclasses.replace(
            stage,
            bytes_per_token_per_rank=stage.bytes_per_token_per_rank
            + draft.draft_kv_bytes_per_token / tp,
        )
    blocks = kv_capacity_blocks(budget.kv_pool_bytes, stage, serving.block_size) * lanes
    return budget, blocks


def _no_fit(r: Resolved, layout: Layout, budget: MemoryBudget) -> str:
    """Why the weights and overheads leave no KV pool at ``layout``."""
    tp = layout.tp
    where = f"as {layout.describe()}" if layout.gpus > tp else f"at TP={tp}"
    overheads = budget.usable_bytes - budget.weights_bytes - budget.kv_pool_bytes
    return (
        f"does not fit {where}: weights {budget.weights_bytes / GIB:,.1f} GiB + "
        f"overheads {overheads / GIB:,.1f} GiB "
        f"per GPU exceed the usable {budget.usable_bytes / GIB:,.1f} GiB "
        f"({r.spec.hardware.gpu_memory_utilization:.2f} × {r.gpu.memory_gib:,.1f} GiB)"
    )


def _unreachable(e: _Estimate, r: Resolved, c: Conditions) -> str | None:
    if e.op.slo_batch != 0:
        return None
    w = c.workload
    misses = [
        s
        for s in slo_estimates(e.perf, r.spec.slo, 1, w.input_tokens, w.output_tokens)
        if not s.met
    ]
    return "SLO unreachable even at batch 1: " + "; ".join(
        f"{s.name} estimate {s.estimate_s:.3f}s > target {s.target_s:.3f}s" for s in misses
    )


def _size(e: _Estimate, r: Resolved, c: Conditions, measured: MeasuredPoint | None) -> Sizing:
    """The three constraints at the batches that limit them (planning/sizing.py)."""
    perf, w = e.perf, c.workload

    def holding(batch: float) -> ConstraintInput:
        """At ``batch`` decoding, a request holds its slot ``batch / completions per s``."""
        return ConstraintInput(batch, batch / perf.request_rate(batch))

    b_c = e.concurrency_batch
    # in flight per replica at the concurrency batch, queued prompts included (≤ the safe
    # concurrency): Little's law over the time a request spends in the replica
    in_flight = b_c + queued(perf, b_c)
    throughput = holding(float(e.op.batch))
    slots = (
        ConstraintInput(in_flight, in_flight / perf.request_rate(b_c))
        if b_c > 0
        else ConstraintInput(1.0, 0.0)
    )
    if measured is not None:
        throughput = slots = ConstraintInput(measured.concurrency, measured.request_s)
    return size(
        SizingInputs(
            design_rps=w.rps.design_rps,
            output_tokens_mean=w.output_tokens.mean,
            throughput=throughput,
            slots=slots,
            kv=holding(e.kv_batch) if e.kv_batch >= 1 else ConstraintInput(1.0, 0.0),
            kv_tokens_mean_request=e.held_mean,
            kv_tokens_reserve=e.reserve,
            kv_capacity_tokens=e.capacity_tokens,
            kv_target_utilization=r.spec.assumptions.kv_target_utilization,
            kv_wait=_kv_wait_note(e),
        ),
        r.spec.scaling,
    )


def _kv_wait_note(e: _Estimate) -> str | None:
    """Why the KV constraint's batch is below the pool's room, when it is."""
    if e.kv_wait is None or e.kv_wait_replicas is None:
        return None
    need = e.kv_wait_replicas
    return e.kv_wait.describe(kv_lanes(e.layout)) + (
        f"; behind a load-aware gateway the fleet's seats pool: {need:,.2f} replicas keep it"
        if need > 1
        else ""
    )


def _load(e: _Estimate, c: Conditions, replicas: int) -> tuple[LoadPoint, bool]:
    """Latency at the load each of ``replicas`` carries (saturated: at the operating batch)."""
    w = c.workload
    rps = w.rps.design_rps / replicas if replicas > 0 else 0.0
    point = at_load(
        e.perf,
        rps,
        w.input_tokens,
        w.output_tokens,
        float(e.knobs.max_num_seqs),
        within=float(e.op.batch),
    )
    if point is not None:
        return point, False
    return point_at_batch(e.perf, float(e.op.batch), w.input_tokens, w.output_tokens), True


def plan_at(r: Resolved, conditions: Conditions, tp: int | Layout) -> Plan:
    """Plan ``r`` under ``conditions`` at tensor-parallel size ``tp`` on one node, or at a
    multi-node :class:`Layout` (no layout choice). With ``spec.serving.speculative`` the plan is
    made with and without it (``planning/speculative.py`` keeps one and says why); with
    ``spec.lora`` at each ``maxLoras`` candidate (``planning/lora_plan.py`` keeps one)."""
    setup = r.lora
    if setup is None:
        return _plan_speculative(r, conditions, tp)
    layout = _as_layout(tp)
    plans = [
        (
            m,
            _plan_speculative(
                dataclasses.replace(r, lora=setup.with_max_loras(m)), conditions, layout
            ),
        )
        for m in max_loras_candidates(setup)
    ]
    bare = _plan_speculative(dataclasses.replace(r, lora=None), conditions, layout)

    def perf_pair(m: int, plan: Plan) -> tuple[PerfModel, PerfModel]:
        with_m = as_planned(dataclasses.replace(r, lora=setup.with_max_loras(m)), plan)
        return (
            perf_at(with_m, conditions, layout, plan.max_num_batched_tokens),
            perf_at(
                dataclasses.replace(with_m, lora=None),
                conditions,
                layout,
                plan.max_num_batched_tokens,
            ),
        )

    return choose_max_loras(
        setup, plans, bare, perf_pair, layout.tp, layout.pp == 1 and layout.dp == 1
    )


def _plan_speculative(r: Resolved, conditions: Conditions, tp: int | Layout) -> Plan:
    s = r.speculative
    if s is None:
        return _plan_at(r, conditions, tp)
    layout = _as_layout(tp)
    r_off = dataclasses.replace(r, speculative=dataclasses.replace(s, enabled=False))
    off = _plan_at(r_off, conditions, layout)
    if layout.pp > 1 or layout.dp > 1:
        return not_modelled(s, off, f"not modelled for {layout.describe()} replicas")
    r_on = dataclasses.replace(r, speculative=dataclasses.replace(s, enabled=True))
    on = _plan_at(r_on, conditions, layout)
    return choose_speculative(
        s,
        on,
        off,
        perf_at(r_on, conditions, layout, on.max_num_batched_tokens),
        perf_at(r_off, conditions, layout, on.max_num_batched_tokens),
    )


def as_planned(r: Resolved, plan: Plan) -> Resolved:
    """``r`` with speculation on exactly when ``plan`` has it on, LoRA at the plan's
    ``maxLoras`` and the plan's chunk budget and sequence cap (the timing model of the plan
    the fleet runs: a re-plan at live conditions does not choose flags the fleet lacks)."""
    r = dataclasses.replace(r, knobs_as_run=(plan.max_num_batched_tokens, plan.max_num_seqs))
    if r.lora is not None and plan.lora is not None:
        pinned = r.lora.with_max_loras(plan.lora.max_loras)
        r = dataclasses.replace(r, lora=dataclasses.replace(pinned, max_loras_given=True))
    s = r.speculative
    if s is None:
        return r
    on = plan.speculative is not None and plan.speculative.enabled
    return dataclasses.replace(r, speculative=dataclasses.replace(s, enabled=on))


def _plan_at(r: Resolved, conditions: Conditions, tp: int | Layout) -> Plan:
    layout = _as_layout(tp)
    e = _estimate(r, conditions, layout)
    reasons, warnings = list(e.reasons), list(e.warnings)
    w = conditions.workload
    measured = None
    if conditions.use_profile:
        measured = measured_point(
            r.spec.profile, r.spec.slo, layout.tp, r.gpu_key, warnings, r.spec.model.name
        )
    if measured is not None:
        mismatch = token_mismatch(measured, w.input_tokens.mean, w.output_tokens.mean)
        if mismatch:
            warnings.append(mismatch)
    elif (why := _unreachable(e, r, conditions)) is not None:
        reasons.append(why)
    sizing = _size(e, r, conditions, measured)
    warnings.extend(sizing.warnings)
    if sizing.shortfall is not None and not reasons:  # a bound matters only where it can serve
        reasons.append(sizing.shortfall)
    return _assemble(r, conditions, e, sizing, measured, reasons, warnings)


#: The best published expert-parallel throughput per GPU the timing model is compared with
#: (benchmarks/accuracy/multinode.yaml): decode-only, with dual-batch overlap.
EP_REFERENCE = (
    "2.2k output tok/s per H200 for DeepSeek-R1, decode-only with dual-batch overlap (vLLM "
    "blog, 'vLLM Large Scale Serving: DeepSeek @ 2.2k tok/s/H200 with Wide-EP', 2025-12-17)"
)


def ep_upper_bound_warning(output_tps_per_gpu: float) -> str:
    """Why an expert-parallel estimate is a bound, not a point: no measurement calibrates it."""
    return (
        f"expert-parallel timing is not calibrated against measurements: "
        f"{output_tps_per_gpu:,.0f} output tok/s per GPU is an upper bound and TPOT a lower "
        f"bound (the best published figure: {EP_REFERENCE}); set spec.profile from a load test "
        "of this layout to plan on measured figures"
    )


def _assemble(
    r: Resolved,
    c: Conditions,
    e: _Estimate,
    sizing: Sizing,
    measured: MeasuredPoint | None,
    reasons: list[str],
    warnings: list[str],
) -> Plan:
    spec, w, perf, a = r.spec, c.workload, e.perf, r.spec.assumptions
    layout = e.layout
    physical = not [x for x in reasons if x != sizing.shortfall]
    total = sizing.replicas.total
    load, saturated = _load(e, c, total)
    if saturated:
        warnings.append(
            f"{counted(total, 'replica')} cannot carry {w.rps.design_rps:,.2f} RPS: latency "
            "estimates are "
            "at the operating batch, the queue would grow"
        )
    f = _figures(e, w, load, measured)
    if layout.ep and measured is None:
        warnings.append(ep_upper_bound_warning(f.out_tps_replica / layout.gpus))
    checks = _slo_checks(perf, spec.slo, w, load.batch, measured)
    batch, rps_replica, out_tps_replica = f.batch, f.rps_replica, f.out_tps_replica
    mean_request_s = f.mean_request_s
    design_rps = w.rps.design_rps
    input_tps, output_tps = token_rates(design_rps, w.input_tokens.mean, w.output_tokens.mean)
    prices = Pricing.for_gpu(spec.cost, r.gpu_key)
    costs = price_plan(
        prices,
        layout.gpus,
        total,
        out_tps_replica,
        rps_replica * w.input_tokens.mean,
        rps_replica,
    )
    if prices.gpu_hour_price is None:
        warnings.append("no spec.cost.gpuHourPrice: cost figures are omitted")
    op = e.op
    return Plan(
        **_replica_fields(r, e),
        max_concurrency_per_replica=measured.concurrency
        if measured is not None
        else float(op.safe_concurrency),
        concurrency_limits=_limits(e, a.kv_target_utilization),
        design_rps=design_rps,
        input_tps=input_tps,
        output_tps=output_tps,
        concurrency=littles_law_concurrency(design_rps, mean_request_s),
        mean_request_s=mean_request_s,
        operating_batch=batch,
        ttft_p99_estimate_s=f.ttft99,
        tpot_estimate_s=f.tpot,
        tpot_p99_estimate_s=f.tpot99,
        e2e_p99_estimate_s=f.e2e99,
        e2e_p99_at_capacity_s=f.e2e99_full,
        prefill_p99_s=perf.prefill_seconds(
            w.input_tokens.p99_or_mean * (1.0 - perf.prefix_cache_hit_rate),
            w.input_tokens.p99_or_mean * perf.prefix_cache_hit_rate,
        ),
        decode_step_s=perf.step_seconds(float(op.batch)),
        slo_checks=checks,
        at_load=LoadEstimate(**vars(load), saturated=saturated),
        output_tps_per_replica=out_tps_replica,
        input_tps_per_replica=rps_replica * w.input_tokens.mean,
        rps_per_replica=rps_replica,
        replicas=sizing.replicas if physical else None,
        constraints=sizing.constraints,
        binding_constraint=sizing.binding,
        gpus_total=total * layout.gpus if physical else None,
        **_cost_fields(costs, physical, spec.cost.currency),
        feasible=not reasons,
        infeasible_reasons=reasons,
        warnings=warnings,
        assumptions=_assumptions(r, c, e),
        tp_candidates=[],
        sources=f.sources,
    )


@dataclass(frozen=True)
class _Figures:
    """A replica's rate and latencies at the operating point: modelled, or measured where a
    measurement of this layout is given (``sources`` says which)."""

    batch: float
    rps_replica: float
    out_tps_replica: float
    ttft99: float
    tpot: float
    tpot99: float
    e2e99: float
    e2e99_full: float
    mean_request_s: float
    sources: dict[str, str]


def _figures(
    e: _Estimate, w: Workload, load: LoadPoint, measured: MeasuredPoint | None
) -> _Figures:
    perf, batch = e.perf, float(e.op.batch)
    # the longest a request takes when a replica carries all its SLOs allow: independent of
    # the replica count (so a scale never changes the pod template built from it)
    e2e99_full = point_at_batch(perf, batch, w.input_tokens, w.output_tokens).e2e_p99_s
    modelled = _Figures(
        batch,
        perf.request_rate(batch),
        perf.output_tps(batch),
        load.ttft_p99_s,
        load.tpot_mean_s,
        load.tpot_p99_s,
        load.e2e_p99_s,
        e2e99_full,
        load.e2e_mean_s,
        {},
    )
    if measured is None:
        return modelled
    m = measured.step

    def given(value: float | None, otherwise: float) -> float:
        return value if value is not None else otherwise

    keys = ("rps_per_replica", "operating_batch", "latency_estimates")
    return dataclasses.replace(
        modelled,
        batch=measured.concurrency,
        mean_request_s=measured.request_s,
        tpot=given(m.tpot_p50_seconds, modelled.tpot),
        ttft99=given(m.ttft_p99_seconds, modelled.ttft99),
        tpot99=given(m.tpot_p99_seconds, modelled.tpot99),
        e2e99_full=given(m.e2e_p99_seconds, modelled.e2e99_full),
        rps_replica=m.requests_per_second,
        out_tps_replica=m.requests_per_second * w.output_tokens.mean,
        sources=dict.fromkeys(keys, measured.source),
    )


def _replica_fields(r: Resolved, e: _Estimate) -> dict[str, Any]:
    """The plan's model, layout, flags, memory and KV pool: what one replica is."""
    model, layout, geom = r.model, e.layout, e.perf.geometry
    return {
        "name": r.name,
        "model": r.spec.model.name,
        "model_source": model.source,
        "gpu": r.gpu_key,
        "weight_dtype": model.weight_dtype,
        "checkpoint_weight_dtype": model.checkpoint_dtype,
        "kv_cache_dtype": "fp8" if model.kv_bytes_per_element == 1.0 else "auto",
        "params": model.params.total,
        "active_params": model.params.active,
        "weight_bytes": model_weight_bytes(r),
        "kv_bytes_per_token": geom.bytes_per_token,
        "kv_bytes_per_token_per_gpu": geom.bytes_per_token_per_rank,
        "tensor_parallel_size": layout.tp,
        "pipeline_parallel_size": layout.pp,
        "data_parallel_size": layout.dp,
        "expert_parallel": layout.ep,
        "gpus_per_replica": layout.gpus,
        "nodes_per_replica": layout.nodes,
        "max_model_len": e.max_len,
        "max_num_seqs": math.ceil(e.knobs.max_num_seqs / kv_lanes(layout)),
        "max_num_batched_tokens": e.knobs.max_num_batched_tokens,
        "serving_knobs_reason": e.knobs.reason,
        "memory_per_gpu": _memory(e.budget),
        "kv_capacity_tokens_per_replica": e.capacity_tokens,
        "kv_capacity_blocks_per_replica": e.blocks,
        "kv_bytes_per_request_mean": geom.bytes_per_token * e.held_mean,
        "kv_bytes_per_request_p99": geom.bytes_per_token * e.held_p99,
    }


def _cost_fields(costs: Costs, physical: bool, currency: str) -> dict[str, Any]:
    """The plan's cost figures (the fleet's hourly cost only where the plan can serve)."""
    return {
        "gpu_hours_per_million_output_tokens": costs.gpu_hours_per_million_output_tokens,
        "cost_per_hour": costs.fleet_cost_per_hour if physical else None,
        "cost_per_million_output_tokens": costs.per_million_output,
        "cost_per_million_input_tokens": costs.per_million_input,
        "cost_per_million_tokens": costs.per_million_blended,
        "cost_per_request": costs.per_request,
        "currency": currency,
    }


def _memory(budget: MemoryBudget) -> MemoryBreakdown:
    return MemoryBreakdown(
        gpu_total_bytes=budget.total_bytes,
        usable_bytes=budget.usable_bytes,
        weights_bytes=budget.weights_bytes,
        activation_bytes=budget.activation_bytes,
        cuda_graph_bytes=budget.cuda_graph_bytes,
        nccl_bytes=budget.nccl_bytes,
        runtime_bytes=budget.runtime_bytes,
        lora_bytes=budget.lora_bytes,
        kv_pool_bytes=budget.kv_pool_bytes,
    )


def _limits(e: _Estimate, kv_target_utilization: float) -> ConcurrencyLimits:
    """What bounds a replica's concurrency: its flags, the SLO, the knee, the KV pool."""
    op = e.op
    return ConcurrencyLimits(
        max_num_seqs=e.knobs.max_num_seqs,
        slo=float(op.slo_batch) if op.slo_batch is not None else None,
        knee=float(op.knee),
        kv_mean_context=e.capacity_tokens * kv_target_utilization / e.held_mean,
        kv_p99_context=e.capacity_tokens / e.held_p99 if e.held_p99 > 0 else 0.0,
    )


def _assumptions(r: Resolved, c: Conditions, e: _Estimate) -> dict[str, Any]:
    """The plan's assumptions: the timing model's and the hardware figures it used."""
    flops, flops_note = peak_flops(r.gpu, r.model.weight_dtype)
    return {
        **e.perf.assumptions.model_dump(mode="json"),
        "peak_tflops": flops / 1e12,
        "peak_tflops_note": flops_note,
        "hbm_bandwidth_gbps": r.gpu.hbm_bandwidth_gbps,
        "link_gbps_per_direction": link_bytes_per_s(r.gpu) / 1e9,
        "kv_bytes_per_element": r.model.kv_bytes_per_element,
        "serving_defaults": r.defaults.source,
        "operating_point_limited_by": e.op.limited_by,
        "calibration_prefill": c.calibration.prefill,
        "calibration_decode": c.calibration.decode,
        "knee_policy": c.knee,
    }


def _slo_checks(
    perf: PerfModel, slo_spec: Slo, w: Workload, batch: float, measured: MeasuredPoint | None
) -> list[SloCheck]:
    """The model's estimates at the load each replica carries, or the measured P99s where a
    profile applies."""
    estimates = slo_estimates(perf, slo_spec, batch, w.input_tokens, w.output_tokens)
    seen: dict[str, float | None] = {}
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


def _gpus_needed(p: Plan) -> int | None:
    """GPUs the layout needs before ``minReplicas``/``maxReplicas`` apply."""
    if p.replicas is None:
        return None
    return p.replicas.with_redundancy * p.gpus_per_replica


def _candidate(p: Plan) -> TpCandidate:
    need = _gpus_needed(p)
    if p.feasible and p.replicas is not None:
        layout = layout_of(p)
        shape = layout.describe() if layout.nodes > 1 or layout.dp > 1 else f"TP {layout.tp}"
        reason = f"{counted(p.replicas.total, 'replica')} × {shape}"
    else:
        reason = "; ".join(p.infeasible_reasons)
    return TpCandidate(
        tensor_parallel_size=p.tensor_parallel_size,
        pipeline_parallel_size=p.pipeline_parallel_size,
        data_parallel_size=p.data_parallel_size,
        expert_parallel=p.expert_parallel,
        nodes_per_replica=p.nodes_per_replica,
        feasible=p.feasible,
        replicas=p.replicas.total if p.replicas is not None else None,
        gpus=p.gpus_total,
        replicas_needed=p.replicas.with_redundancy if p.replicas is not None else None,
        gpus_needed=need,
        cost_per_million_output_tokens=p.cost_per_million_output_tokens,
        reason=reason,
    )


def _choose(plans: list[Plan]) -> Plan:
    """Compare layouts on what they need, then the bounds: feasible first, the fewest GPUs
    deployed (``minReplicas`` applied: two layouts that need 2 GPUs are not equal when one
    must run two replicas of 2), then needed; else the layout that needs the fewest GPUs
    (capped by maxReplicas); else the first that fits."""

    def key(p: Plan) -> tuple[int, float, int, int]:
        return (
            _gpus_needed(p) or 0,
            p.gpu_hours_per_million_output_tokens or 0.0,
            p.nodes_per_replica,
            p.tensor_parallel_size,
        )

    def deployed(p: Plan) -> tuple[int, tuple[int, float, int, int]]:
        total = p.replicas.total if p.replicas is not None else 0
        return (total * p.gpus_per_replica, key(p))

    feasible = [p for p in plans if p.feasible]
    if feasible:
        return min(feasible, key=deployed)
    counted = [p for p in plans if p.replicas is not None]
    if counted:
        return min(counted, key=key)
    fits = [p for p in plans if p.kv_capacity_blocks_per_replica > 0]
    return fits[0] if fits else plans[-1]


def _layouts(r: Resolved, sizes: list[int]) -> list[Layout]:
    """Single-node TPs, and the multi-node layouts worth planning (planning/parallel.py)."""
    hw, a, model = r.spec.hardware, r.spec.assumptions, r.model
    fixed = (a.runtime_overhead_gib + a.cuda_graph_gib + a.nccl_buffer_gib + 2.0) * GIB
    budget = r.gpu.memory_gib * GIB * hw.gpu_memory_utilization - fixed
    return layouts_to_plan(
        model.architecture,
        model.params,
        resident_bytes_per_param(model),
        sizes,
        hw.gpus_per_node,
        hw.max_nodes_per_replica,
        budget,
    )


def with_curve(r: Resolved, conditions: Conditions, plan: Plan) -> Plan:
    """``plan`` with its predicted load-test curve (concurrency 1, 2, 4, … up to the KV limit
    or maxNumSeqs); empty when the plan cannot serve. Computed for the forecast's chosen plan
    only: the engine's live questions do not need it."""
    if plan.replicas is None:
        return plan
    perf = perf_at(as_planned(r, plan), conditions, layout_of(plan), plan.max_num_batched_tokens)
    w = conditions.workload
    limit = min(float(plan.max_num_seqs), max(plan.concurrency_limits.kv_mean_context, 1.0))
    points = curve(perf, w.input_tokens, w.output_tokens, limit)
    return plan.model_copy(update={"curve": points})


def predicted_step(
    r: Resolved, plan: Plan, concurrency: int, input_tokens: float, output_tokens: float
) -> CurveStep:
    """The model's prediction for one closed-loop bench step (``concurrency`` clients sending
    ``input_tokens``/``output_tokens`` requests) on a replica of ``plan`` (its TP and budget)."""
    w = r.spec.workload.model_copy(
        update={
            "input_tokens": TokenDistribution(mean=max(input_tokens, 1.0)),
            "output_tokens": TokenDistribution(mean=max(output_tokens, 1.0)),
        }
    )
    perf = perf_at(
        as_planned(r, plan), Conditions(workload=w), layout_of(plan), plan.max_num_batched_tokens
    )
    return closed_loop(perf, concurrency, w.input_tokens, w.output_tokens)


def plan_service(spec: InferenceServiceSpec, name: str = "") -> Plan:
    """Plan ``spec``. Raises :class:`SpecError` for invalid input; infeasibility is a Plan.
    Its pools: one ``serve`` pool, or the prefill and decode pools when it runs disaggregated
    (planning/pools.py)."""
    r = resolve(spec, name)
    conditions = forecast_conditions(r)
    plan = _plan_layouts(r, conditions)
    if plan.pools:  # disaggregated: with_disaggregation made its two pools
        return plan
    price = Pricing.for_gpu(r.spec.cost, r.gpu_key).gpu_hour_price
    return with_pools(plan, [serve_pool(plan, price)], NoCoordination())


#: The fix a model too large for the layouts tried is given (a mix's variants say another:
#: planning/variants.py's ``on_one_node``).
MORE_NODES_FIX = "raise spec.hardware.maxNodesPerReplica, or quantize"


def _plan_layouts(r: Resolved, conditions: Conditions) -> Plan:
    """The chosen layout's plan, with every layout tried (``tp_candidates``)."""
    spec = r.spec
    sizes = r.tp_sizes()
    single = [Layout(tp=tp) for tp in sizes]
    plans = [plan_at(r, conditions, layout) for layout in single]
    # a multi-node replica needs at least its own GPUs: plan one only where that could beat
    # the best single-node need (or nothing on one node serves)
    best = min((n for p in plans if p.feasible and (n := _gpus_needed(p))), default=None)
    plans += [
        plan_at(r, conditions, layout)
        for layout in _layouts(r, sizes)
        if layout not in single and (best is None or layout.gpus < best)
    ]
    if len(plans) == 1:
        return with_disaggregation(r, conditions, with_curve(r, conditions, plans[0]))
    chosen = with_disaggregation(r, conditions, with_curve(r, conditions, _choose(plans)))
    candidates = [_candidate(p) for p in plans]
    if not any(p.feasible for p in plans) and all(
        p.kv_capacity_blocks_per_replica == 0 for p in plans
    ):
        hw = spec.hardware
        reason = (
            f"does not fit at any TP ({', '.join(str(t) for t in sizes)}) on up to "
            f"{hw.max_nodes_per_replica} node(s) per replica: {chosen.weight_bytes / GIB:,.1f} "
            f"GiB of weights on {r.gpu.memory_gib:,.1f} GiB GPUs, {hw.gpus_per_node} per node "
            f"({MORE_NODES_FIX})"
        )
        return chosen.model_copy(
            update={
                "infeasible_reasons": [reason, *chosen.infeasible_reasons],
                "tp_candidates": candidates,
            }
        )
    return chosen.model_copy(update={"tp_candidates": candidates})


def role_engine(r: Resolved, c: Conditions, layout: Layout) -> tuple[RoleEngine, RoleEngine]:
    """A prefill and a decode replica at ``layout``: the memory, KV and engine flags of an
    aggregated replica there (``_estimate``), except that a prefill worker, with no decode to
    protect from long chunks, takes at least vLLM's default token budget per step (fewer steps:
    fewer weight reads and step overheads per prompt) unless spec.serving pins one."""
    e = _estimate(r, c, layout)
    decode = RoleEngine(
        layout=layout,
        perf=e.perf,
        kv_capacity_tokens=e.capacity_tokens,
        kv_capacity_blocks=e.blocks,
        max_model_len=e.max_len,
        max_num_seqs=math.ceil(e.knobs.max_num_seqs / kv_lanes(layout)),
        max_num_batched_tokens=e.knobs.max_num_batched_tokens,
        reasons=tuple(e.reasons),
    )
    budget = e.knobs.max_num_batched_tokens
    if r.spec.serving.max_num_batched_tokens is None:
        budget = max(budget, r.defaults.max_num_batched_tokens)
    if budget == decode.max_num_batched_tokens:
        return decode, decode
    prefill = dataclasses.replace(
        decode, perf=perf_at(r, c, layout, budget), max_num_batched_tokens=budget
    )
    return prefill, decode


def role_engines(r: Resolved, c: Conditions) -> list[tuple[RoleEngine, RoleEngine]]:
    """(prefill, decode) engines at every single-node TP, and at the multi-node layouts only
    when no single-node replica fits."""
    sizes = r.tp_sizes()
    single = [role_engine(r, c, Layout(tp=tp)) for tp in sizes]
    if any(not d.reasons for _, d in single):
        return single
    multi = [role_engine(r, c, x) for x in _layouts(r, sizes) if x.nodes > 1]
    return single + multi


def disaggregated_pair(r: Resolved, c: Conditions) -> PoolPair | None:
    """The two pools at the pair of layouts needing the fewest GPUs (planning/disaggregation)."""
    spec, a = r.spec, r.spec.assumptions
    engines = role_engines(r, c)
    nvlink = link_bytes_per_s(r.gpu)
    inter = spec.hardware.inter_node_gbps or r.gpu.inter_node_gbps
    per_node = spec.hardware.gpus_per_node

    def fabric_for(p: RoleEngine, d: RoleEngine, gpus: int | None) -> Fabric:
        same = p.layout.nodes == 1 and d.layout.nodes == 1 and (gpus is None or gpus <= per_node)
        return fabric_between(
            same,
            nvlink,
            inter,
            a.interconnect_efficiency,
            a.inter_node_efficiency,
            a.kv_transfer_latency_seconds,
        )

    return best_pair(
        [p for p, _ in engines],
        [d for _, d in engines],
        fabric_for,
        spec.slo,
        c.workload,
        spec.scaling,
        a.kv_target_utilization,
        Pricing.for_gpu(spec.cost, r.gpu_key).gpu_hour_price,
    )


def _why(agg: Plan, pair: PoolPair, agg_stall_s: float, enabled: bool, mode: str) -> str:
    """The choice in numbers: GPUs each way and what limits each architecture."""
    p, d = pools(pair)
    agg_need = _gpus_needed(agg) if agg.feasible else None
    two = (
        f"{p.replicas_with_redundancy} prefill × "
        f"{_shape(p.tensor_parallel_size, p.nodes_per_replica)} + "
        f"{d.replicas_with_redundancy} decode × "
        f"{_shape(d.tensor_parallel_size, d.nodes_per_replica)} = "
        f"{counted(pair.gpus_needed, 'GPU')}"
    )
    one = (
        f"{agg_need} aggregated ({agg.replicas.with_redundancy if agg.replicas else 0} × "
        f"{_shape(agg.tensor_parallel_size, agg.nodes_per_replica)})"
        if agg_need is not None
        else "aggregated cannot serve (" + "; ".join(agg.infeasible_reasons)[:160] + ")"
    )
    limited = agg.assumptions.get("operating_point_limited_by")
    detail = (
        f"aggregated runs batch {agg.operating_batch:,.0f} (limited by {limited}; a P99 prompt's "
        f"chunk stalls its decode steps {agg_stall_s * 1e3:,.0f} ms), decode-only batch "
        f"{pair.decode.batch:,.0f} (limited by {pair.decode.limited_by}); prefill at "
        f"{pair.prefill.utilization:.0%} utilization (limited by {pair.prefill.limited_by}); "
        f"a P99 prompt's KV moves in {pair.transfer_p99_s * 1e3:,.1f} ms ({pair.fabric.note})"
    )
    if not pair.feasible:
        return f"disaggregated cannot serve: {'; '.join(pair.reasons)}; {one}"
    if mode == "on":
        verdict = "disaggregated (spec.serving.disaggregation: on)"
    elif enabled:
        verdict = (
            "disaggregated: fewer GPUs"
            if agg_need is None or pair.gpus_needed < agg_need
            else "disaggregated: cheaper at equal GPUs"
        )
    else:
        verdict = "aggregated: no more GPUs than disaggregated"
    return f"{verdict}: {two} vs {one}; {detail}"


def _shape(tp: int, nodes: int) -> str:
    return f"TP {tp}" + (f" on {nodes} nodes" if nodes > 1 else "")


def with_disaggregation(r: Resolved, c: Conditions, agg: Plan) -> Plan:
    """``agg`` with its :class:`Disaggregation` (``spec.serving.disaggregation`` on or auto);
    unchanged when off. When enabled, ``gpus_total`` and the cost keys are both pools'."""
    mode = r.spec.serving.disaggregation
    if mode == "off":
        return agg
    pair = disaggregated_pair(r, c)
    if pair is None:
        return agg
    agg_need = _gpus_needed(agg) if agg.feasible else None
    prices = Pricing.for_gpu(r.spec.cost, r.gpu_key)
    if mode == "on":
        enabled = True
    else:
        enabled = pair.feasible and (agg_need is None or pair.gpus_needed < agg_need)
    stall = perf_at(r, c, layout_of(agg), agg.max_num_batched_tokens).tail_chunk_seconds
    reason = _why(agg, pair, stall, enabled, mode)
    p, d = pools(pair)
    w = c.workload
    gpu_s_per_request = p.gpus_per_replica / max(p.rps_per_replica, 1e-12) + (
        d.gpus_per_replica / max(d.rps_per_replica, 1e-12)
    )
    rps_per_gpu = 1.0 / gpu_s_per_request
    costs = price_plan(
        prices,
        1,
        pair.gpus_total,
        rps_per_gpu * w.output_tokens.mean,
        rps_per_gpu * w.input_tokens.mean,
        rps_per_gpu,
    )
    info = Disaggregation(
        mode=mode,
        enabled=enabled,
        reason=reason,
        feasible=pair.feasible,
        infeasible_reasons=pair.reasons,
        prefill=p,
        decode=d,
        kv_transfer_s=pair.transfer_p99_s,
        kv_transfer_mean_s=pair.transfer_mean_s,
        fabric=pair.fabric.note,
        kv_transfer_bytes_per_s=pair.fabric.bytes_per_s * pair.lanes,
        kv_transfer_latency_s=pair.fabric.latency_s,
        ratio=p.replicas / d.replicas if d.replicas > 0 else None,
        gpus_needed=pair.gpus_needed,
        gpus_total=pair.gpus_total,
        aggregated_gpus_needed=agg_need,
        cost_per_hour=costs.fleet_cost_per_hour,
        ttft_p99_estimate_s=pair.prefill.ttft_p99_s,
        tpot_p99_estimate_s=pair.decode.tpot_p99_s,
        tpot_estimate_s=pair.decode.tpot_mean_s,
        e2e_p99_estimate_s=pair.e2e_p99_s,
    )
    update: dict[str, object] = {"disaggregation": info}
    if enabled:
        physical = pair.feasible
        scaling_note = (
            "disaggregated: each pool starts at its planned count (prefill "
            f"{p.replicas}, decode {d.replicas}); with live metrics the operator scales each "
            "role on its own signals and keeps prefill ÷ decode within ×/÷ "
            f"{RATIO_SLACK:g} of the plan's "
            "ratio; GPU quotas are not checked per role"
        )
        update |= {
            "warnings": [*agg.warnings, scaling_note],
            "gpus_total": pair.gpus_total,
            "cost_per_hour": costs.fleet_cost_per_hour,
            "gpu_hours_per_million_output_tokens": costs.gpu_hours_per_million_output_tokens,
            "cost_per_million_output_tokens": costs.per_million_output,
            "cost_per_million_input_tokens": costs.per_million_input,
            "cost_per_million_tokens": costs.per_million_blended,
            "cost_per_request": costs.per_request,
            "feasible": physical,
            "infeasible_reasons": [f"disaggregated: {x}" for x in pair.reasons],
            "at_load": None,  # the aggregated replica's: per pool in pools[]
        }
        variant = variant_of(agg, prices.gpu_hour_price)
        return with_pools(agg.model_copy(update=update), *role_pools(pair, w, variant))
    return agg.model_copy(update=update)
