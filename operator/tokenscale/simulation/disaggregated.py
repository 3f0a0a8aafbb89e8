"""Both architectures replaying one trace: a shared pool, or prefill and decode pools.

Both are fixed fleets of the one fleet (``fleet.py``) replayed by the one loop (``loop.py``)
with a pinned policy, every request served to completion.

- **Aggregated**: ``n`` engines of the plan's replica behind a least-loaded gateway (the
  fleet's routing), no scaling.
- **Disaggregated**: ``p`` prefill engines and ``d`` decode engines (``planning.disaggregation``
  ``role_plan``: each role's layout, flags and KV pool). A request enters the least-loaded prefill
  engine as a one-token request (vLLM's prefill worker runs ``max_tokens=1``); when its prefill
  ends, its KV takes ``latency + KV bytes per token × tokens held / bandwidth`` (the plan's
  ``kv_transfer_bytes_per_s`` and ``kv_transfer_latency_s``) to reach the least-loaded decode
  engine, which admits it with the prompt's KV already computed (like a prefix-cache hit) and
  generates every output token, the first included. Latencies count from the arrival at the
  prefill pool; the decode engine holds the request's KV blocks from the transfer's end.

:func:`fewest_aggregated` and :func:`fewest_disaggregated` search the smallest static fleet of
each architecture whose replay meets the SLO (P99s after a 20 % warm-up, ``capacity.meets_slo``):
the simulator's answer to "which architecture is cheaper", to hold the planner's ``auto`` to.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.slo import Slo
from tokenscale.planning import Plan, plan_service
from tokenscale.planning.disaggregation import role_plan
from tokenscale.simulation.capacity import meets_slo
from tokenscale.simulation.fleet import Fleet, Handoff, PoolEngine
from tokenscale.simulation.loop import Clock, replay
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import ReplicaConfig, SimRequest, replica_config
from tokenscale.simulation.search import smallest
from tokenscale.simulation.trace import Trace, TraceRequest, percentile

#: Largest fleet the searches try per pool before giving up.
MAX_SEARCH_REPLICAS = 256


@dataclass(frozen=True)
class ArchitectureRun:
    """One static fleet's replay: its size and what the requests saw."""

    architecture: str
    prefill_replicas: int
    decode_replicas: int
    gpus: int
    requests: int
    ttft_p99_s: float
    tpot_p99_s: float
    meets_slo: bool


@dataclass(frozen=True)
class Engines:
    """The engines of both architectures for one plan, and the KV transfer between roles."""

    aggregated: ReplicaConfig
    aggregated_gpus: int
    prefill: ReplicaConfig
    prefill_gpus: int
    decode: ReplicaConfig
    decode_gpus: int
    transfer_s: Callable[[int], float]


def engines(spec: InferenceServiceSpec, plan: Plan, mismatch: float = 1.0) -> Engines:
    """What ``plan`` runs each way (it must carry a disaggregation, ``on`` or ``auto``)."""
    d = plan.disaggregation
    if d is None or d.kv_transfer_bytes_per_s is None:
        raise ValueError(
            f"plan {plan.name!r} has no disaggregated pools: set spec.serving.disaggregation"
        )
    block = spec.serving.block_size
    p_plan, d_plan = role_plan(plan, "prefill"), role_plan(plan, "decode")
    decode_cfg = replica_config(spec, d_plan, block, mismatch)
    geometry = decode_cfg.perf.geometry
    bandwidth = d.kv_transfer_bytes_per_s
    latency = d.kv_transfer_latency_s or 0.0

    def transfer_s(tokens: int) -> float:
        held = geometry.tokens_held(float(tokens))
        return latency + geometry.bytes_per_token * held / bandwidth if held > 0 else 0.0

    return Engines(
        aggregated=replica_config(spec, plan, block, mismatch),
        aggregated_gpus=plan.gpus_per_replica,
        prefill=replica_config(spec, p_plan, block, mismatch),
        prefill_gpus=p_plan.gpus_per_replica,
        decode=decode_cfg,
        decode_gpus=d_plan.gpus_per_replica,
        transfer_s=transfer_s,
    )


class _Pinned:
    """A fixed fleet's hooks: arrivals routed, nothing scraped, nothing decided."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    def admit(self, r: TraceRequest, t: float) -> None:
        if self.fleet.handoff is None:
            self.fleet.route(
                SimRequest(r.arrival_s, r.input_tokens, r.output_tokens, r.prefix_blocks), t
            )
        else:
            req = SimRequest(r.arrival_s, r.input_tokens, 1, r.prefix_blocks)
            self.fleet.admit_prefill(req, r.output_tokens, t)

    def scrape(self, t: float) -> None:
        return None

    def decide(self, t: float) -> bool:
        return False


def _serve_all(fleet: Fleet, trace: Trace) -> None:
    """The one loop on a fixed fleet, every request served to completion."""
    replay(fleet, trace.requests, trace.duration_s, _Pinned(fleet), Clock(drain_limit_s=math.inf))


def replay_aggregated(cfg: ReplicaConfig, replicas: int, trace: Trace) -> Recorder:
    """``replicas`` engines serving ``trace``; every request to the least-loaded engine."""
    rec = Recorder()
    _serve_all(Fleet.one_pool(cfg, rec, 1, 0.0, max(replicas, 1)), trace)
    return rec


def replay_disaggregated(
    prefill: ReplicaConfig,
    decode: ReplicaConfig,
    prefills: int,
    decodes: int,
    transfer_s: Callable[[int], float],
    trace: Trace,
) -> Recorder:
    """``prefills`` prefill and ``decodes`` decode engines serving ``trace`` (module docstring);
    the record is the decode pool's (what a user sees, from the arrival)."""
    rec = Recorder()
    fleet = Fleet(
        [PoolEngine("prefill", prefill, 1), PoolEngine("decode", decode, 1)],
        [Recorder(), rec],
        0.0,
        [max(prefills, 1), max(decodes, 1)],
        handoff=Handoff(0, 1, transfer_s),
    )
    _serve_all(fleet, trace)
    return rec


def _run(architecture: str, rec: Recorder, slo: Slo, p: int, d: int, gpus: int) -> ArchitectureRun:
    outs = rec.outcomes
    return ArchitectureRun(
        architecture=architecture,
        prefill_replicas=p,
        decode_replicas=d,
        gpus=gpus,
        requests=len(outs),
        ttft_p99_s=percentile([o.ttft_s for o in outs], 0.99) if outs else math.nan,
        tpot_p99_s=percentile([o.tpot_s for o in outs if o.output_tokens > 1], 0.99)
        if outs
        else math.nan,
        meets_slo=meets_slo(rec, slo),
    )


def fewest_aggregated(e: Engines, trace: Trace, slo: Slo, start: int) -> ArchitectureRun | None:
    """The smallest aggregated fleet meeting the SLO on ``trace`` (None: none up to the bound)."""
    runs: dict[int, ArchitectureRun] = {}

    def ok(n: int) -> bool:
        rec = replay_aggregated(e.aggregated, n, trace)
        runs[n] = _run("aggregated", rec, slo, 0, n, n * e.aggregated_gpus)
        return runs[n].meets_slo

    n = smallest(ok, start, 1, MAX_SEARCH_REPLICAS)
    return None if n is None else runs[n]


def fewest_disaggregated(
    e: Engines, trace: Trace, slo: Slo, start_prefill: int, start_decode: int
) -> ArchitectureRun | None:
    """The smallest disaggregated fleet meeting the SLO: the fewest decode engines with prefill
    to spare (twice the start, plus one), then the fewest prefill engines beside them, then decode
    engines added until the pair meets it (None: none up to the bound)."""
    runs: dict[tuple[int, int], ArchitectureRun] = {}

    def run(p: int, d: int) -> bool:
        if (p, d) not in runs:
            rec = replay_disaggregated(e.prefill, e.decode, p, d, e.transfer_s, trace)
            gpus = p * e.prefill_gpus + d * e.decode_gpus
            runs[(p, d)] = _run("disaggregated", rec, slo, p, d, gpus)
        return runs[(p, d)].meets_slo

    spare = 2 * max(start_prefill, 1) + 1
    d = smallest(lambda n: run(spare, n), start_decode, 1, MAX_SEARCH_REPLICAS)
    if d is None:
        return None
    p = smallest(lambda n: run(n, d), start_prefill, 1, MAX_SEARCH_REPLICAS)
    if p is None:
        return None
    while not run(p, d):
        d += 1
        if d > MAX_SEARCH_REPLICAS:
            return None
    return runs[(p, d)]


@dataclass(frozen=True)
class Comparison:
    """The smallest static fleet of each architecture meeting the SLO on one trace, and the
    planner's choice for the same spec."""

    aggregated: ArchitectureRun | None
    disaggregated: ArchitectureRun | None
    planner_disaggregates: bool
    planner_gpus_aggregated: int | None
    planner_gpus_disaggregated: int | None

    @property
    def simulator_disaggregates(self) -> bool | None:
        """Whether two pools met the SLO on fewer GPUs (aggregated on a tie); None when
        neither met it within the search's bound."""
        a, d = self.aggregated, self.disaggregated
        if a is None and d is None:
            return None
        if a is None:
            return True
        if d is None:
            return False
        return d.gpus < a.gpus

    @property
    def agree(self) -> bool | None:
        sim = self.simulator_disaggregates
        return None if sim is None else sim == self.planner_disaggregates


def compare(
    spec: InferenceServiceSpec, trace: Trace, mismatch: float = 1.0, name: str = ""
) -> Comparison:
    """Plan ``spec`` with ``disaggregation: auto`` (whatever it says), then search the smallest
    fleet of each architecture on ``trace``, starting from the plan's needs."""
    auto = spec.model_copy(
        update={"serving": spec.serving.model_copy(update={"disaggregation": "auto"})}
    )
    plan = plan_service(auto, name)
    d = plan.disaggregation
    if d is None or d.prefill is None or d.decode is None or plan.replicas is None:
        raise ValueError(f"{name or 'the service'}: the plan cannot serve either way")
    e = engines(auto, plan, mismatch)
    agg = fewest_aggregated(e, trace, spec.slo, math.ceil(plan.replicas.needed))
    dis = fewest_disaggregated(
        e,
        trace,
        spec.slo,
        math.ceil(d.prefill.replicas_needed),
        math.ceil(d.decode.replicas_needed),
    )
    return Comparison(
        aggregated=agg,
        disaggregated=dis,
        planner_disaggregates=plan.is_disaggregated,
        planner_gpus_aggregated=d.aggregated_gpus_needed,
        planner_gpus_disaggregated=d.gpus_needed,
    )
