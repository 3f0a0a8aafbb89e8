"""Keep one plan among the ``maxLoras`` candidates and say what the adapters cost.

With ``spec.lora.maxLoras`` given there is one candidate. Otherwise the planner plans each
candidate (``planning/lora.py``, :func:`~tokenscale.planning.lora.max_loras_candidates`) and
keeps, among the feasible plans needing the fewest GPUs, the smallest ``maxLoras`` whose
requests per second per replica are within :data:`RATE_SLACK` of the best: a larger one only
takes KV pool for slots the traffic does not use.
"""

from collections.abc import Callable

from tokenscale.planning.formulas import GIB
from tokenscale.planning.lora import LoraSetup, expected_distinct
from tokenscale.planning.performance import PerfModel
from tokenscale.planning.result import LoraChoice, LoraEstimate, Plan

#: A larger ``maxLoras`` must add more than this share of requests/s per replica to be kept.
RATE_SLACK = 0.01
#: vLLM's own ``--max-loras`` default (``vllm/config/lora.py``).
VLLM_DEFAULT_MAX_LORAS = 1


def _gpus(p: Plan) -> int | None:
    if not p.feasible or p.replicas is None:
        return None
    return p.replicas.with_redundancy * p.gpus_per_replica


def _keep(plans: list[tuple[int, Plan]]) -> tuple[int, Plan, str]:
    feasible = [(m, p, g) for m, p in plans if (g := _gpus(p)) is not None]
    if not feasible:
        m, p = plans[0]
        return m, p, "no candidate is feasible: the smallest is kept"
    fewest = min(g for _, _, g in feasible)
    best = [(m, p) for m, p, g in feasible if g == fewest]
    top = max(p.rps_per_replica for _, p in best)
    m, p = min(
        ((m, p) for m, p in best if p.rps_per_replica >= (1.0 - RATE_SLACK) * top),
        key=lambda mp: mp[0],
    )
    tried = ", ".join(str(c) for c, _ in plans)
    return (
        m,
        p,
        f"recommended: the fewest GPUs ({fewest}) and within {RATE_SLACK:.0%} of the best "
        f"requests/s per replica among maxLoras {tried}",
    )


def _swaps(setup: LoraSetup, p: Plan) -> float:
    return p.rps_per_replica * setup.gpu_miss


def choose_max_loras(
    setup: LoraSetup,
    plans: list[tuple[int, Plan]],
    bare: Plan,
    perf_pair: Callable[[int, Plan], tuple[PerfModel, PerfModel]],
    tp: int,
    timed: bool,
) -> Plan:
    """The plan to keep, with its :class:`LoraEstimate`. ``bare`` is the same layout without
    LoRA (the KV pool the slots come out of); ``perf_pair(m, plan)`` the timing models with and
    without LoRA at ``plan``'s token budget; ``timed`` is False where the LoRA kernels are not
    modelled (multi-node layouts)."""
    if setup.max_loras_given:
        m, plan = plans[0]
        reason = "spec.lora.maxLoras"
    else:
        m, plan, reason = _keep(plans)
    chosen = setup.with_max_loras(m)
    with_lora, without = perf_pair(m, plan)
    batch = plan.operating_batch
    ratio = with_lora.output_tps(batch) / without.output_tps(batch) if batch > 0 else 1.0
    slots = plan.memory_per_gpu.lora_bytes
    swaps = _swaps(chosen, plan)
    notes = list(chosen.notes)
    if not timed:
        notes.append("LoRA kernel time and loads are not modelled for multi-node layouts")
    elif plan.speculative is not None and plan.speculative.enabled:
        notes.append(
            "LoRA kernel time and loads are not modelled with speculative decoding on (the "
            "speculative step replaces them); the slots still come out of the KV pool"
        )
    rank = max(chosen.ranks)
    rank_words = (
        f"rank {rank}" if rank == min(chosen.ranks) else f"ranks {min(chosen.ranks)}–{rank}"
    )
    count = len(chosen.names)
    summary = (
        f"{count} adapter{'s' if count != 1 else ''}, {rank_words}: KV pool "
        f"−{slots / GIB:.2f} GiB per GPU, {ratio - 1.0:+.1%} throughput at the operating batch, "
        f"{swaps:.2g} swaps/s per replica (maxLoras {m})"
    )
    default = next((p for c, p in plans if c == VLLM_DEFAULT_MAX_LORAS), None)
    if default is not None and m != VLLM_DEFAULT_MAX_LORAS:
        g_default, g_m = _gpus(default), _gpus(plan)
        if g_default is not None and g_m is not None:
            reason += f"; vLLM's default maxLoras {VLLM_DEFAULT_MAX_LORAS} needs {g_default} GPUs"
        elif g_m is not None:
            reason += f"; vLLM's default maxLoras {VLLM_DEFAULT_MAX_LORAS} is infeasible"
    estimate = LoraEstimate(
        adapters=count,
        max_lora_rank=chosen.max_lora_rank,
        max_loras=m,
        max_loras_reason=reason,
        max_cpu_loras=chosen.max_cpu_loras,
        summary=summary,
        mean_adapter_bytes=chosen.mean_adapter_bytes,
        host_cache_bytes=sum(sorted(chosen.adapter_bytes, reverse=True)[: chosen.max_cpu_loras]),
        slots_bytes_per_gpu=slots,
        kv_pool_without_bytes=bare.memory_per_gpu.kv_pool_bytes,
        throughput_ratio=ratio,
        distinct_at_batch=expected_distinct(list(chosen.shares), batch, m),
        gpu_miss_fraction=chosen.gpu_miss,
        host_miss_fraction=chosen.host_miss,
        swaps_per_s_per_replica=swaps,
        source_loads_per_s_per_replica=plan.rps_per_replica * chosen.host_miss,
        load_seconds_host=chosen.host_load_seconds(tp),
        load_seconds_source=chosen.source_load_seconds(tp),
        compared=[
            LoraChoice(
                max_loras=c,
                gpus=_gpus(p),
                rps_per_replica=p.rps_per_replica,
                swaps_per_s_per_replica=_swaps(setup.with_max_loras(c), p),
            )
            for c, p in plans
        ],
        notes=notes,
    )
    warnings = [*plan.warnings, *(n for n in notes if n not in plan.warnings)]
    return plan.model_copy(update={"lora": estimate, "warnings": warnings})
