"""Prefill/decode disaggregation: size a prefill pool and a decode pool from the SLOs, and say
whether two pools need fewer GPUs than one.

**Prefill worker** (a vLLM engine that only prefills, ``--kv-transfer-config`` producer side):
prompts queue and are prefilled in steps of up to the chunk budget, so a worker at utilization
``ρ`` serves ``ρ / s`` prompts per second, ``s`` a prompt's service (its chunks' FLOPs and its
share of the steps' weight reads, over the prompts: ``prefill_worker_service_seconds``). Its
queue is one pool's at batch 0 (``PerfModel.prefill_worker_*``: the M/G/1 of ``queueing.py``
with the prefill's own service and spread over the prompts, no decode riding along its steps,
and the prompts that arrive while one waits sharing its last step). A prompt's TTFT is

``TTFT = wait + t_prefill(prompt) + t_transfer(prompt) + t_step_decode(B_d)
+ requestOverheadSeconds + prompt × requestOverheadPerTokenSeconds``

its mean with the Pollaczek–Khinchine wait (:func:`prefill_ttft_seconds`), a percentile with
the percentile of the prompts' own prefills and the wait together
(:func:`prefill_ttft_quantile_seconds`). The operating utilization is the largest ``ρ ≤``
:data:`PREFILL_MAX_UTILIZATION` whose TTFT (P99 against the P99 target, P95 against P95)
and E2E (TTFT + P99 answer × the decode pool's mean TPOT) meet the SLOs.

**KV transfer**: ``kvTransferLatencySeconds + KV bytes per token × tokens held(prompt) /
(bandwidth × efficiency × lanes)``. Inside one node the bytes cross NVLink (the GPU's
interconnect, at ``interconnectEfficiency``); across nodes the inter-node fabric
(``spec.hardware.interNodeGBps``, else the GPU's figure, else 100 GbE, at
``interNodeEfficiency``). Every GPU of the smaller of the two replicas sends its shard at once
(``lanes = min(GPUs per prefill replica, GPUs per decode replica)``). The service is planned on
one node's NVLink only when both pools fit on one node together; otherwise a prompt's KV crosses
nodes.

**Decode worker**: pure decode steps. TPOT at batch ``B`` is ``t_step(B)`` (mean) and
``t_step(B + z·√B)`` at a percentile (the Poisson spread of the batch): no prefill chunk ever
shares a step, which is the point of disaggregation. The operating batch is
``min(knee, SLO batch, maxNumSeqs)`` as for one pool. KV holds the transferred prompt plus the
output (prompt + half the output on average), from the moment the transfer starts.

Each pool is sized with the same three constraints and the same redundancy as one pool
(``sizing.py``), and ``spec.scaling``'s bounds apply to each pool. Each role picks its own
layout: every pair of candidate layouts is planned and the pair needing the fewest GPUs
(then costing less, then the smaller transfer) is kept.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

from tokenscale.api.scaling import Scaling
from tokenscale.api.slo import Slo
from tokenscale.api.workload import Workload
from tokenscale.planning.bisect import first_true, last_true
from tokenscale.planning.formulas import GB
from tokenscale.planning.load import Z_P99
from tokenscale.planning.operating_point import Z_P95
from tokenscale.planning.parallel import Layout, kv_lanes
from tokenscale.planning.performance import PerfModel
from tokenscale.planning.pools import PoolLoad, pool
from tokenscale.planning.result import (
    Constraint,
    DisaggregatedCoordination,
    Plan,
    Pool,
    PoolVariant,
    Replicas,
    RolePool,
)
from tokenscale.planning.sizing import ConstraintInput, Sizing, SizingInputs, size

#: The highest utilization a prefill worker is planned at with no TTFT SLO to bound it (the
#: prefill pool's knee: the queue allowance ρ/(1−ρ) is 4 prefills there and grows fast beyond).
PREFILL_MAX_UTILIZATION = 0.8
_BISECT = 40


@dataclass(frozen=True)
class RoleEngine:
    """One replica of one role at one layout: its timing model and what its memory holds."""

    layout: Layout
    perf: PerfModel
    kv_capacity_tokens: float
    kv_capacity_blocks: int
    max_model_len: int
    max_num_seqs: int
    """Per rank (the flag vLLM takes)."""
    max_num_batched_tokens: int
    reasons: tuple[str, ...]
    """Why this replica cannot serve at all (does not fit, context too long)."""


@dataclass(frozen=True)
class Fabric:
    """The link a prompt's KV crosses from a prefill to a decode worker."""

    bytes_per_s: float
    """Per GPU, at its efficiency."""
    latency_s: float
    note: str


def transfer_seconds(
    kv_bytes_per_token: float, tokens_held: float, fabric: Fabric, lanes: int
) -> float:
    """Seconds to move ``tokens_held`` tokens of KV over ``lanes`` GPUs' links of ``fabric``."""
    if tokens_held <= 0:
        return 0.0
    return fabric.latency_s + kv_bytes_per_token * tokens_held / (
        fabric.bytes_per_s * max(lanes, 1)
    )


@dataclass(frozen=True)
class _Decode:
    engine: RoleEngine
    batch: float
    safe: float
    limited_by: str
    slo_batch: float | None
    sizing: Sizing
    tpot_mean_s: float
    tpot_p99_s: float
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class _Prefill:
    engine: RoleEngine
    utilization: float
    limited_by: str
    sizing: Sizing
    ttft_p99_s: float
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class PoolPair:
    """The two pools at one pair of layouts over one fabric."""

    prefill: _Prefill
    decode: _Decode
    fabric: Fabric
    transfer_mean_s: float
    transfer_p99_s: float
    outputs_p99: float = 0.0
    """The workload's P99 answer, for the E2E estimate."""

    @property
    def lanes(self) -> int:
        """GPUs sending a prompt's KV at once: those of the smaller replica."""
        return min(self.prefill.engine.layout.gpus, self.decode.engine.layout.gpus)

    @property
    def reasons(self) -> list[str]:
        return [
            *(f"prefill: {r}" for r in self.prefill.reasons),
            *(f"decode: {r}" for r in self.decode.reasons),
        ]

    @property
    def feasible(self) -> bool:
        return not self.reasons

    @property
    def gpus_needed(self) -> int:
        p, d = self.prefill, self.decode
        return (
            p.sizing.replicas.with_redundancy * p.engine.layout.gpus
            + d.sizing.replicas.with_redundancy * d.engine.layout.gpus
        )

    @property
    def gpus_total(self) -> int:
        p, d = self.prefill, self.decode
        return (
            p.sizing.replicas.total * p.engine.layout.gpus
            + d.sizing.replicas.total * d.engine.layout.gpus
        )

    @property
    def e2e_p99_s(self) -> float:
        return self.prefill.ttft_p99_s + self.outputs_p99 * self.decode.tpot_mean_s


def _largest_int(lo: int, hi: int, ok: Callable[[int], bool]) -> int:
    """Largest n in [lo, hi] with ok(n) (monotone true then false); lo − 1 if none."""
    if hi < lo or not ok(lo):
        return lo - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _tpot_quantile(perf: PerfModel, batch: float, z: float) -> float:
    return perf.step_seconds(batch + z * math.sqrt(max(batch, 0.0)))


def decode_tpot_p99_seconds(perf: PerfModel, batch: float) -> float:
    """TPOT P99 of a decode-only worker at ``batch``: decode steps at the batch's Poisson P99,
    and nothing else (no prefill chunk shares a step)."""
    return _tpot_quantile(perf, batch, Z_P99)


def _held(perf: PerfModel, tokens: float) -> float:
    return perf.geometry.tokens_held(tokens)


def _decode_meets(perf: PerfModel, b: int, slo: Slo, w: Workload, ttft_floor_s: float) -> bool:
    """Whether a decode batch of ``b`` meets the TPOT SLOs and, after ``ttft_floor_s`` to the
    first token, the end-to-end ones."""
    if slo.tpot_p99_seconds is not None and (_tpot_quantile(perf, b, Z_P99) > slo.tpot_p99_seconds):
        return False
    if slo.tpot_p95_seconds is not None and (_tpot_quantile(perf, b, Z_P95) > slo.tpot_p95_seconds):
        return False
    for target, out in (
        (slo.e2e_p99_seconds, w.output_tokens.p99_or_mean),
        (slo.e2e_p95_seconds, w.output_tokens.p95 or w.output_tokens.mean),
    ):
        if target is not None and ttft_floor_s + out * perf.step_seconds(b) > target:
            return False
    return True


def _decode_limits(
    perf: PerfModel,
    seqs: int,
    slo: Slo,
    w: Workload,
    ttft_floor_s: float,
    reasons: list[str],
) -> tuple[dict[str, float], float | None]:
    """The batch's bounds before the KV pool's: ``maxNumSeqs``, the knee (TPOT at
    ``knee_tpot_ratio`` × the floor with the batch's shared work) and the SLO batch (None
    without SLOs; a reason appended when even batch 1 misses them)."""

    def ok(b: int) -> bool:
        return _decode_meets(perf, b, slo, w, ttft_floor_s)

    ratio = perf.assumptions.knee_tpot_ratio
    knee = max(
        1,
        _largest_int(1, seqs, lambda b: perf.step_seconds(b) <= ratio * perf.knee_floor_seconds(b)),
    )
    limits: dict[str, float] = {"maxNumSeqs": float(seqs), "knee": float(knee)}
    slo_b: float | None = None
    if slo.any_set:
        slo_b = float(_largest_int(1, seqs, ok))
        if slo_b >= 1:
            limits["SLO"] = slo_b
        else:
            reasons.append(
                f"TPOT SLO unreachable even at batch 1: a decode step takes "
                f"{_tpot_quantile(perf, 1, Z_P99) * 1e3:,.1f} ms at P99"
            )
    return limits, slo_b


def _plan_decode(
    engine: RoleEngine,
    slo: Slo,
    w: Workload,
    scaling: Scaling,
    kv_target: float,
    ttft_floor_s: float,
    transfer_mean_s: float,
) -> _Decode:
    perf = engine.perf
    lanes = kv_lanes(engine.layout)
    seqs = engine.max_num_seqs * lanes
    out_mean = max(w.output_tokens.mean, 1.0)
    reasons = list(engine.reasons)

    limits, slo_b = _decode_limits(perf, seqs, slo, w, ttft_floor_s, reasons)
    held_mean = _held(perf, w.input_tokens.mean + w.output_tokens.mean / 2.0)
    p99_ctx = min(w.input_tokens.p99_or_mean + w.output_tokens.p99_or_mean, engine.max_model_len)
    reserve = max(0.0, _held(perf, p99_ctx) - held_mean) * lanes
    kv_batch = (engine.kv_capacity_tokens * kv_target - reserve) / held_mean
    if kv_batch >= 1:  # the batch runs only as wide as the pool holds at this mix
        limits["KV pool"] = kv_batch
    limited_by = min(limits, key=lambda k: limits[k])
    batch = max(limits[limited_by], 1.0)
    safe = min(float(seqs), slo_b) if slo_b is not None and slo_b >= 1 else float(seqs)
    if engine.kv_capacity_tokens > 0 and kv_batch < 1:
        reasons.append("the KV pool holds no mean request beside a P99 one")

    def holding(b: float) -> ConstraintInput:
        return ConstraintInput(b, out_mean * perf.step_seconds(b))

    kv = (
        ConstraintInput(
            kv_batch, transfer_mean_s + out_mean * perf.step_seconds(min(kv_batch, seqs))
        )
        if kv_batch >= 1
        else ConstraintInput(1.0, 0.0)
    )
    sizing = size(
        SizingInputs(
            design_rps=w.rps.design_rps,
            output_tokens_mean=out_mean,
            throughput=holding(batch),
            slots=holding(safe),
            kv=kv,
            kv_tokens_mean_request=held_mean,
            kv_tokens_reserve=reserve,
            kv_capacity_tokens=engine.kv_capacity_tokens,
            kv_target_utilization=kv_target,
        ),
        scaling,
    )
    if sizing.shortfall is not None:
        reasons.append(sizing.shortfall)
    return _Decode(
        engine=engine,
        batch=batch,
        safe=safe,
        limited_by=limited_by,
        slo_batch=slo_b,
        sizing=sizing,
        tpot_mean_s=perf.step_seconds(batch),
        tpot_p99_s=_tpot_quantile(perf, batch, Z_P99),
        reasons=tuple(reasons),
    )


def prefill_ttft_seconds(
    perf: PerfModel,
    utilization: float,
    prompt_tokens: float,
    transfer_s: float,
    first_step_s: float,
) -> float:
    """Mean TTFT of a ``prompt_tokens`` prompt at a prefill worker running at ``utilization``
    (module docstring): the queue's mean wait + its own prefill + the KV transfer + the first
    decode step + the request overhead."""
    hit = perf.prefix_cache_hit_rate
    own = perf.prefill_seconds(prompt_tokens * (1.0 - hit), prompt_tokens * hit)
    return (
        perf.prefill_worker_wait_seconds(utilization)
        + own
        + transfer_s
        + first_step_s
        + perf.request_overhead_seconds(prompt_tokens)
    )


def prefill_ttft_quantile_seconds(
    perf: PerfModel,
    utilization: float,
    prompt_tokens: float,
    mean_prompt_tokens: float,
    transfer_s: float,
    first_step_s: float,
    tail: float,
) -> float:
    """The TTFT only a share ``tail`` of requests exceed (0.01: the P99), ``prompt_tokens``
    being the prompts' percentile there: the prefill worker's own prefill and queue at
    ``utilization`` (:meth:`PerfModel.prefill_worker_ttft_quantile_seconds`, the request
    overhead included), then that prompt's KV transfer and the first decode step."""
    return (
        perf.prefill_worker_ttft_quantile_seconds(
            utilization, prompt_tokens, mean_prompt_tokens, tail
        )
        + transfer_s
        + first_step_s
    )


def _plan_prefill(
    engine: RoleEngine,
    slo: Slo,
    w: Workload,
    scaling: Scaling,
    kv_target: float,
    transfer: Callable[[float], float],
    first_step_s: float,
    decode_tpot_mean_s: float,
) -> _Prefill:
    perf = engine.perf
    reasons = list(engine.reasons)
    in99 = w.input_tokens.p99_or_mean
    in95 = w.input_tokens.p95 or w.input_tokens.mean
    t99, t95 = transfer(in99), transfer(in95)

    def ttft(rho: float, prompt: float, transfer_s: float, tail: float) -> float:
        return prefill_ttft_quantile_seconds(
            perf, rho, prompt, w.input_tokens.mean, transfer_s, first_step_s, tail
        )

    def ok(rho: float) -> bool:
        ttft99 = ttft(rho, in99, t99, 0.01)
        ttft95 = ttft(rho, in95, t95, 0.05)
        checks = (
            (slo.ttft_p99_seconds, ttft99),
            (slo.ttft_p95_seconds, ttft95),
            (slo.e2e_p99_seconds, ttft99 + w.output_tokens.p99_or_mean * decode_tpot_mean_s),
            (
                slo.e2e_p95_seconds,
                ttft95 + (w.output_tokens.p95 or w.output_tokens.mean) * decode_tpot_mean_s,
            ),
        )
        return all(target is None or value <= target for target, value in checks)

    rho, limited_by = _highest_utilization(ok)
    if not ok(rho):
        reasons.append(
            f"TTFT SLO unreachable even idle: a P99 prompt's prefill + KV transfer + first "
            f"decode step take {ttft(0.0, in99, t99, 0.01):.3f}s"
        )
    t_mean = max(perf.prefill_worker_service_seconds, 1e-9)
    held_prompt = _held(perf, w.input_tokens.mean)
    lanes = kv_lanes(engine.layout)
    reserve = max(0.0, _held(perf, in99) - held_prompt) * lanes
    kv_batch = (engine.kv_capacity_tokens * kv_target - reserve) / max(held_prompt, 1.0)
    if engine.kv_capacity_tokens > 0 and kv_batch < 1:
        reasons.append("the KV pool holds no mean prompt beside a P99 one")
    sizing = size(
        SizingInputs(
            design_rps=w.rps.design_rps,
            output_tokens_mean=w.input_tokens.mean,
            throughput=ConstraintInput(rho, t_mean),
            slots=ConstraintInput(rho, t_mean),
            kv=ConstraintInput(kv_batch, t_mean + transfer(w.input_tokens.mean))
            if kv_batch >= 1
            else ConstraintInput(1.0, 0.0),
            kv_tokens_mean_request=held_prompt,
            kv_tokens_reserve=reserve,
            kv_capacity_tokens=engine.kv_capacity_tokens,
            kv_target_utilization=kv_target,
        ),
        scaling,
    )
    sizing = _prefill_sizing(sizing, w.rps.design_rps, rho, t_mean)
    if sizing.shortfall is not None:
        reasons.append(sizing.shortfall)
    return _Prefill(
        engine=engine,
        utilization=rho,
        limited_by=limited_by,
        sizing=sizing,
        ttft_p99_s=ttft(rho, in99, t99, 0.01),
        reasons=tuple(reasons),
    )


def _highest_utilization(ok: Callable[[float], bool]) -> tuple[float, str]:
    """The highest prefill utilization (up to the cap) at which ``ok`` holds, by bisection,
    and what limits it; ``1e-4`` when nothing does (the caller says why)."""
    if ok(PREFILL_MAX_UTILIZATION):
        return PREFILL_MAX_UTILIZATION, "prefill utilization cap"
    if not ok(1e-4):
        return 1e-4, "TTFT/E2E SLO"
    return last_true(ok, 1e-4, PREFILL_MAX_UTILIZATION, _BISECT, 0.0), "TTFT/E2E SLO"


def _prefill_sizing(sizing: Sizing, lam: float, rho: float, t_mean: float) -> Sizing:
    """The prefill pool's constraints in its own words: prompts per second at the utilization
    the SLOs allow; its queue bounded by that utilization; prompts holding KV."""
    per_replica = rho / t_mean
    constraints = [
        Constraint(
            name="throughput",
            replicas=sizing.constraints[0].replicas,
            formula=f"{lam:,.2f} prompts/s ÷ {per_replica:,.2f} per replica (prefill "
            f"{t_mean * 1e3:,.1f} ms per mean prompt at {rho:.0%} utilization)",
        ),
        Constraint(
            name="concurrency",
            replicas=sizing.constraints[1].replicas,
            formula="a prefill worker queues prompts (its utilization bounds the queue): as "
            "throughput",
        ),
        sizing.constraints[2].model_copy(
            update={
                "formula": sizing.constraints[2].formula.replace("holding KV", "prompts holding KV")
            }
        ),
    ]
    return Sizing(
        replicas=sizing.replicas,
        constraints=constraints,
        binding=sizing.binding,
        warnings=sizing.warnings,
        shortfall=sizing.shortfall,
    )


def plan_pair(
    prefill: RoleEngine,
    decode: RoleEngine,
    fabric: Fabric,
    slo: Slo,
    w: Workload,
    scaling: Scaling,
    kv_target: float,
) -> PoolPair:
    """Both pools at these layouts over ``fabric`` (module docstring)."""
    lanes = min(prefill.layout.gpus, decode.layout.gpus)  # PoolPair.lanes
    per_token = decode.perf.geometry.bytes_per_token

    def transfer(tokens: float) -> float:
        return transfer_seconds(per_token, _held(decode.perf, tokens), fabric, lanes)

    t_mean = transfer(w.input_tokens.mean)
    in99 = w.input_tokens.p99_or_mean
    hit = prefill.perf.prefix_cache_hit_rate
    floor = (
        prefill.perf.prefill_seconds(in99 * (1.0 - hit), in99 * hit)
        + transfer(in99)
        + decode.perf.step_seconds(1.0)
    )
    d = _plan_decode(decode, slo, w, scaling, kv_target, floor, t_mean)
    p = _plan_prefill(
        prefill,
        slo,
        w,
        scaling,
        kv_target,
        transfer,
        decode.perf.step_seconds(d.batch),
        d.tpot_mean_s,
    )
    return PoolPair(
        prefill=p,
        decode=d,
        fabric=fabric,
        transfer_mean_s=t_mean,
        transfer_p99_s=transfer(in99),
        outputs_p99=w.output_tokens.p99_or_mean,
    )


def pair_key(pair: PoolPair, gpu_hour_price: float | None) -> tuple[int, float, float, int]:
    """Fewest GPUs needed, then the cheaper, then the smaller transfer, then fewer nodes."""
    price = (gpu_hour_price or 0.0) * pair.gpus_needed
    nodes = pair.prefill.engine.layout.nodes + pair.decode.engine.layout.nodes
    return (pair.gpus_needed, price, pair.transfer_p99_s, nodes)


def best_pair(
    prefills: list[RoleEngine],
    decodes: list[RoleEngine],
    fabric_for: Callable[[RoleEngine, RoleEngine, int | None], Fabric],
    slo: Slo,
    w: Workload,
    scaling: Scaling,
    kv_target: float,
    gpu_hour_price: float | None,
) -> PoolPair | None:
    """The pair of layouts needing the fewest GPUs; feasible pairs first. ``fabric_for(p, d,
    gpus)`` names the link for a pair whose service needs ``gpus`` (None: before it is known);
    a pair is planned again when its need moves it off one node."""
    pairs: list[PoolPair] = []
    for pe in prefills:
        for de in decodes:
            pair = plan_pair(pe, de, fabric_for(pe, de, None), slo, w, scaling, kv_target)
            wider = fabric_for(pe, de, pair.gpus_needed)
            if wider != pair.fabric:
                pair = plan_pair(pe, de, wider, slo, w, scaling, kv_target)
            pairs.append(pair)
    if not pairs:
        return None
    feasible = [p for p in pairs if p.feasible]
    return min(feasible or pairs, key=lambda p: pair_key(p, gpu_hour_price))


def role_pool(
    role: str, engine: RoleEngine, sizing: Sizing, rps: float, point: float, limited_by: str
) -> RolePool:
    """The JSON shape of one pool."""
    layout, r = engine.layout, sizing.replicas
    return RolePool(
        role="prefill" if role == "prefill" else "decode",
        replicas=r.total,
        replicas_needed=r.needed,
        replicas_with_redundancy=r.with_redundancy,
        tensor_parallel_size=layout.tp,
        pipeline_parallel_size=layout.pp,
        data_parallel_size=layout.dp,
        expert_parallel=layout.ep,
        gpus_per_replica=layout.gpus,
        nodes_per_replica=layout.nodes,
        rps_per_replica=rps,
        operating_point=point,
        limited_by=limited_by,
        max_model_len=engine.max_model_len,
        max_num_seqs=engine.max_num_seqs,
        max_num_batched_tokens=engine.max_num_batched_tokens,
        kv_capacity_tokens_per_replica=engine.kv_capacity_tokens,
        kv_capacity_blocks_per_replica=engine.kv_capacity_blocks,
        constraints=sizing.constraints,
        binding_constraint=sizing.binding,
        gpus=r.total * layout.gpus,
        gpus_needed=r.with_redundancy * layout.gpus,
    )


def pools(pair: PoolPair) -> tuple[RolePool, RolePool]:
    """The prefill and decode pools of ``pair`` as the plan reports them."""
    p, d = pair.prefill, pair.decode
    t_mean = max(p.engine.perf.prefill_worker_service_seconds, 1e-9)
    prefill = role_pool(
        "prefill", p.engine, p.sizing, p.utilization / t_mean, p.utilization, p.limited_by
    )
    d_rps = d.batch / (max(d.engine.perf.mean_output_tokens, 1.0) * d.tpot_mean_s)
    decode = role_pool("decode", d.engine, d.sizing, d_rps, d.batch, d.limited_by)
    return prefill, decode


def fabric_between(
    same_node: bool,
    nvlink_bytes_per_s: float,
    inter_node_gbps: float | None,
    interconnect_efficiency: float,
    inter_node_efficiency: float,
    latency_s: float,
) -> Fabric:
    """NVLink inside a node, the inter-node fabric across nodes (module docstring)."""
    if same_node:
        return Fabric(
            nvlink_bytes_per_s * interconnect_efficiency,
            latency_s,
            f"NVLink inside one node ({nvlink_bytes_per_s / GB:,.0f} GB/s per GPU each way × "
            f"{interconnect_efficiency:.2f})",
        )
    line = (inter_node_gbps or 12.5) * GB
    source = (
        f"interNodeGBps {inter_node_gbps:g} GB/s per GPU"
        if inter_node_gbps is not None
        else "no interNodeGBps: assumed 100 GbE (12.5 GB/s per GPU)"
    )
    return Fabric(
        line * inter_node_efficiency,
        latency_s,
        f"across nodes ({source} × {inter_node_efficiency:.2f})",
    )


def role_plan(plan: Plan, role: str) -> Plan:
    """``plan`` as one role's replica: that pool's layout, engine flags, KV pool and count (what
    the renderer and the simulator run for the role). ``ValueError`` when the plan has no such
    pool."""
    d = plan.disaggregation
    pool = None if d is None else d.prefill if role == "prefill" else d.decode
    if d is None or pool is None:
        raise ValueError(f"plan {plan.name!r} has no {role} pool")
    e2e = d.e2e_p99_estimate_s or plan.e2e_p99_at_capacity_s
    need = {c.name: c.replicas for c in pool.constraints}
    return plan.model_copy(
        update={
            "tensor_parallel_size": pool.tensor_parallel_size,
            "pipeline_parallel_size": pool.pipeline_parallel_size,
            "data_parallel_size": pool.data_parallel_size,
            "expert_parallel": pool.expert_parallel,
            "gpus_per_replica": pool.gpus_per_replica,
            "nodes_per_replica": pool.nodes_per_replica,
            "max_model_len": pool.max_model_len,
            "max_num_seqs": pool.max_num_seqs,
            "max_num_batched_tokens": pool.max_num_batched_tokens,
            "kv_capacity_tokens_per_replica": pool.kv_capacity_tokens_per_replica,
            "kv_capacity_blocks_per_replica": pool.kv_capacity_blocks_per_replica,
            "rps_per_replica": pool.rps_per_replica,
            "e2e_p99_at_capacity_s": e2e,
            "replicas": Replicas(
                throughput=need.get("throughput", 0.0),
                concurrency=need.get("concurrency", 0.0),
                kv=need.get("kv", 0.0),
                needed=pool.replicas_needed,
                with_redundancy=pool.replicas_with_redundancy,
                total=pool.replicas,
            ),
            "binding_constraint": pool.binding_constraint,
            "constraints": pool.constraints,
        }
    )


RATIO_SLACK = 2.0
"""How far (×/÷) the live prefill ÷ decode ratio may move from the plan's before the lagging
role is raised (``scaling/roles.py``): wide enough that each role follows its own signals
through an ordinary change of prompt or answer length, narrow enough that neither pool idles
behind the other."""


def _decode_batch_at(perf: PerfModel, rps: float, out_mean: float, most: float) -> float:
    """The batch a decode replica carries at ``rps``: the fixed point ``b = rps × answer ×
    t_step(b)`` (Little's law), at most ``most`` (the operating batch: beyond it, saturated)."""
    if rps <= 0:
        return 0.0
    if rps * out_mean * perf.step_seconds(most) >= most:
        return most
    return first_true(lambda b: rps * out_mean * perf.step_seconds(b) <= b, 0.0, most, _BISECT, 0.0)


@dataclass(frozen=True)
class PairAtLoad:
    """The pair's latencies at the load each replica carries (not at the operating point)."""

    ttft_p99_s: float
    tpot_p99_s: float
    e2e_p99_s: float


def pair_at_load(pair: PoolPair, w: Workload, prefill_rps: float, decode_rps: float) -> PairAtLoad:
    """TTFT P99 at a prefill replica's share (its utilization ``rps × service``, the P99 of the
    prompts' own prefills and the wait together), TPOT P99 at a decode replica's share (the
    batch that share keeps), E2E P99 of the two (module docstring's formulas, at the load
    instead of the operating point)."""
    p, d = pair.prefill, pair.decode
    out_mean = max(w.output_tokens.mean, 1.0)
    batch = _decode_batch_at(d.engine.perf, decode_rps, out_mean, d.batch)
    step = d.engine.perf.step_seconds(max(batch, 1.0))
    rho = min(prefill_rps * p.engine.perf.prefill_worker_service_seconds, p.utilization)
    ttft = prefill_ttft_quantile_seconds(
        p.engine.perf,
        rho,
        w.input_tokens.p99_or_mean,
        w.input_tokens.mean,
        pair.transfer_p99_s,
        step,
        0.01,
    )
    return PairAtLoad(
        ttft_p99_s=ttft,
        tpot_p99_s=_tpot_quantile(d.engine.perf, max(batch, 1.0), Z_P99),
        e2e_p99_s=ttft + w.output_tokens.p99_or_mean * step,
    )


def role_pools(
    pair: PoolPair, w: Workload, variant: PoolVariant
) -> tuple[list[Pool], DisaggregatedCoordination]:
    """The prefill and decode pools of ``pair`` (``variant``: the GPU and its price; each role's
    own layout), and the ratio rule between them."""
    prefill, decode = pools(pair)
    design = w.rps.design_rps
    share = pair_at_load(
        pair,
        w,
        design / prefill.replicas if prefill.replicas else 0.0,
        design / decode.replicas if decode.replicas else 0.0,
    )
    out: list[Pool] = []
    for role in (prefill, decode):
        layout = variant.model_copy(
            update={
                "tensor_parallel_size": role.tensor_parallel_size,
                "pipeline_parallel_size": role.pipeline_parallel_size,
                "data_parallel_size": role.data_parallel_size,
                "expert_parallel": role.expert_parallel,
                "nodes_per_replica": role.nodes_per_replica,
                "gpus_per_replica": role.gpus_per_replica,
            }
        )
        is_prefill = role.role == "prefill"
        load = PoolLoad(
            load_rps=design,
            capacity_rps_per_replica=role.rps_per_replica,
            ttft_p99_s=share.ttft_p99_s if is_prefill else None,
            tpot_p99_s=None if is_prefill else share.tpot_p99_s,
            e2e_p99_s=None if is_prefill else share.e2e_p99_s,
        )
        out.append(pool(role.role, role.role, layout, role.replicas, load, role.binding_constraint))
    ratio = prefill.replicas / decode.replicas if decode.replicas > 0 else None
    rule = DisaggregatedCoordination(
        ratio=ratio,
        ratio_low=ratio / RATIO_SLACK if ratio is not None else None,
        ratio_high=ratio * RATIO_SLACK if ratio is not None else None,
        ratio_slack=RATIO_SLACK,
        reason=(
            "decode carries what prefill emits: each role scales on its own signals, and the "
            f"lagging role is raised when prefill ÷ decode leaves ×/÷ {RATIO_SLACK:g} of the "
            "plan's ratio"
        ),
    )
    return out, rule
