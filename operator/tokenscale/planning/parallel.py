"""Parallel layouts beyond one node's tensor parallelism: pipeline stages across nodes, and
expert parallelism with data-parallel attention for MoE models.

A **layout** is ``TP × PP × DP`` GPUs per replica (one vLLM server):

- **TP** splits every layer over GPUs inside a node (NVLink all-reduces), ``TP ≤ gpusPerNode``.
- **PP** splits the layers into stages, one per node (vLLM's guidance: TP = GPUs per node,
  PP = nodes; docs ``serving/parallelism_scaling.md``). A stage holds its layers' weights and
  its layers' KV. Activations cross the node boundary once per stage per micro-batch:
  ``tokens × hidden × 2 B`` over ``interNodeGBps``. vLLM keeps up to PP micro-batches in
  flight; with fewer running sequences than stages the pipeline has bubbles.
- **DP + EP** (MoE, ``--data-parallel-size`` with ``--enable-expert-parallel``): attention and
  the dense layers are replicated per DP rank (TP-split inside it), each rank decodes its own
  ``B / DP`` sequences and holds their KV (MLA's compressed latent, whole, per rank), while the
  routed experts are sharded over all ``EP = TP × DP`` GPUs. Every MoE layer dispatches each
  token's hidden state to its ``k`` experts and combines the results (two all-to-alls); the
  share bound for other nodes crosses the inter-node fabric.

Memory per GPU (the stage or rank that holds the most):

- PP: ``(⌈L/PP⌉ layers + the larger of embedding and LM head) / TP`` weights.
- DP+EP: ``non-expert / TP + routed experts / (TP × DP)``.

Timing (:class:`LayoutPerfModel`, the single-node roofline of ``performance.py`` per stage or
rank):

- PP: a micro-batch of ``b = B/m`` sequences (``m = min(PP, B)`` in flight) passes every stage,
  so one decode token per sequence takes the whole model's step at ``b`` plus ``PP − 1``
  activation transfers; all ``m`` micro-batches advance in that time. Prefill latency is the
  whole model's plus the transfers; the replica is busy for ``1/PP`` of it (stages overlap).
- DP+EP: a step reads, per GPU, the non-expert weights ÷ TP, the experts this rank holds that
  the step's ``B`` tokens touch, and its own sequences' KV, then adds the expert all-to-alls.
  A prefill runs on one rank while the others keep decoding: the replica is busy ``1/DP`` of it.
"""

import math
from dataclasses import dataclass
from functools import cached_property

from tokenscale.api.model import Architecture
from tokenscale.catalog.params import ParamCount
from tokenscale.planning.formulas import GB
from tokenscale.planning.performance import PerfModel

#: Most nodes one replica may span (the search's bound; LWS groups beyond this are rare).
MAX_NODES_PER_REPLICA = 8
#: Activation bytes per element crossing a pipeline boundary or an expert all-to-all (BF16).
ACTIVATION_BYTES = 2.0


@dataclass(frozen=True)
class Layout:
    """``TP × PP × DP`` GPUs per replica, ``nodes`` of them; EP shards experts over TP × DP."""

    tp: int
    pp: int = 1
    dp: int = 1
    ep: bool = False
    nodes: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def describe(self) -> str:
        parts = [f"TP {self.tp}"]
        if self.pp > 1:
            parts.append(f"PP {self.pp}")
        if self.dp > 1:
            parts.append(f"DP {self.dp}")
        text = " × ".join(parts) + (" + EP" if self.ep else "")
        return f"{text} on {self.nodes} node{'s' if self.nodes > 1 else ''}"


def candidate_layouts(
    arch: Architecture, tp_sizes: list[int], gpus_per_node: int, max_nodes: int = 0
) -> list[Layout]:
    """Layouts to plan: every valid single-node TP; TP = the largest valid size with PP over
    2…N nodes (dense and MoE); for MoE also DP+EP filling 1…N whole nodes at each TP.

    ``max_nodes`` 0 = :data:`MAX_NODES_PER_REPLICA`. PP must leave every stage a layer.
    """
    limit = max_nodes or MAX_NODES_PER_REPLICA
    out = [Layout(tp=tp) for tp in tp_sizes]
    if not tp_sizes:
        return out
    node_tp = max(tp_sizes)
    if node_tp == gpus_per_node:
        out += [
            Layout(tp=node_tp, pp=pp, nodes=pp) for pp in range(2, limit + 1) if pp <= arch.layers
        ]
    if arch.is_moe:
        for tp in tp_sizes:
            per_node = gpus_per_node // tp
            for nodes in range(1, limit + 1):
                dp = per_node * nodes
                if dp > 1 and tp * dp == gpus_per_node * nodes:
                    out.append(Layout(tp=tp, dp=dp, ep=True, nodes=nodes))
    return out


def layouts_to_plan(
    arch: Architecture,
    params: ParamCount,
    bytes_per_param: float,
    tp_sizes: list[int],
    gpus_per_node: int,
    max_nodes: int,
    weight_budget_bytes: float,
) -> list[Layout]:
    """The layouts worth planning: every single-node TP, and of the multi-node ones only the
    smallest that leave room for KV (weights ≤ 90 % of ``weight_budget_bytes`` per GPU) and the
    next size up — one more node buys KV and batch, more rarely pays (and planning every
    layout would cost milliseconds). Expert parallelism is tried at the smallest and largest
    TP (vLLM's DP-attention and TP-attention deployments)."""
    single = [Layout(tp=tp) for tp in tp_sizes]
    if max_nodes <= 1 or not tp_sizes:
        return single

    def fits(layout: Layout) -> bool:
        used = weight_bytes_per_gpu(params, arch, layout, bytes_per_param)
        return used <= 0.9 * weight_budget_bytes

    every = candidate_layouts(arch, tp_sizes, gpus_per_node, max_nodes)
    out = list(single)
    families: dict[tuple[str, int], list[Layout]] = {}
    ep_tps = {min(tp_sizes), max(tp_sizes)}
    for lay in every:
        if lay.nodes == 1 and lay.dp == 1:
            continue  # the single-node TP layouts, above
        if lay.ep and lay.tp not in ep_tps:
            continue
        families.setdefault(("ep" if lay.ep else "pp", lay.tp), []).append(lay)
    for members in families.values():
        members.sort(key=lambda lay: lay.nodes)
        first = next((i for i, lay in enumerate(members) if fits(lay)), None)
        if first is not None:
            out.extend(members[first : first + 2])
    return out


def non_expert_params(p: ParamCount) -> float:
    return p.total - p.routed_experts


def weight_bytes_per_gpu(
    params: ParamCount, arch: Architecture, layout: Layout, bytes_per_param: float
) -> float:
    """Weights on the fullest GPU of the layout (module docstring)."""
    if layout.dp > 1 and layout.ep:
        dense = non_expert_params(params) / layout.tp
        experts = params.routed_experts / (layout.tp * layout.dp)
        return (dense + experts) * bytes_per_param
    outer = params.embedding + params.lm_head
    layer_params = (params.total - outer) / arch.layers
    stage_layers = math.ceil(arch.layers / layout.pp)
    end = max(params.embedding, params.lm_head) if layout.pp > 1 else outer
    return (stage_layers * layer_params + end) * bytes_per_param / layout.tp


def kv_layer_share(arch: Architecture, layout: Layout) -> float:
    """Fraction of the model's layers whose KV one GPU's stage holds (1 without PP)."""
    return math.ceil(arch.layers / layout.pp) / arch.layers


def kv_lanes(layout: Layout) -> int:
    """Independent KV pools per replica: each DP rank holds its own sequences' KV."""
    return layout.dp


def pp_transfer_seconds(
    tokens: float, hidden: int, inter_node_bytes_per_s: float, latency_s: float
) -> float:
    """One activation hand-off between pipeline stages: ``tokens × hidden × 2 B / bandwidth``."""
    return latency_s + tokens * hidden * ACTIVATION_BYTES / inter_node_bytes_per_s


def remote_node_copies(layout: Layout, experts_per_token: int) -> float:
    """Expected other nodes one token is sent to: ``(n − 1)·(1 − (1 − 1/n)^k)`` for ``k``
    experts spread evenly over ``n`` nodes (a token goes to a node once and is forwarded to its
    experts there over NVLink, as DeepEP's inter-node kernels do)."""
    n = layout.nodes
    if n <= 1:
        return 0.0
    return (n - 1) * (1.0 - (1.0 - 1.0 / n) ** experts_per_token)


def all_to_all_seconds(
    tokens_per_rank: float,
    arch: Architecture,
    layout: Layout,
    inter_node_bytes_per_s: float,
    intra_node_bytes_per_s: float,
    latency_s: float,
) -> float:
    """Dispatch + combine over every MoE layer for one step.

    A rank's tokens cross to :func:`remote_node_copies` other nodes over the inter-node fabric
    and reach their ``k`` experts' GPUs over NVLink; the results come back the same way. Both
    directions, each with a fixed latency, BF16 activations."""
    if not (layout.ep and arch.is_moe and arch.experts_per_token):
        return 0.0
    k = arch.experts_per_token
    moe_layers = arch.layers - arch.dense_layers
    token_bytes = tokens_per_rank * arch.hidden_size * ACTIVATION_BYTES
    remote = token_bytes * remote_node_copies(layout, k) / inter_node_bytes_per_s
    local = token_bytes * k / intra_node_bytes_per_s
    return 2.0 * moe_layers * (remote + local + latency_s)


def inter_node_bytes_per_s(inter_node_gbps: float | None) -> tuple[float, str]:
    """The fabric per GPU, and where the figure came from (absent: 100 GbE)."""
    if inter_node_gbps is None:
        return 12.5 * GB, "no interNodeGBps: assumed 100 GbE (12.5 GB/s per GPU)"
    return inter_node_gbps * GB, f"interNodeGBps {inter_node_gbps:g} GB/s per GPU"


@dataclass(frozen=True)
class LayoutPerfModel(PerfModel):
    """:class:`PerfModel` for one replica laid out as ``layout`` (module docstring).

    ``tp`` is the layout's TP; the base model's roofline is the whole model at that TP, which
    is what a micro-batch sees crossing every pipeline stage."""

    layout: Layout = Layout(tp=1)
    inter_node_bytes_per_s: float = 12.5 * GB

    @cached_property
    def _fabric(self) -> float:
        return self.inter_node_bytes_per_s * self.assumptions.inter_node_efficiency

    @property
    def inter_node_latency_seconds(self) -> float:
        return self.assumptions.inter_node_latency_seconds

    def _micro_batches(self, batch: float) -> float:
        return max(1.0, min(float(self.layout.pp), batch))

    def _pp_transfers(self, tokens: float) -> float:
        hops = self.layout.pp - 1
        if hops <= 0:
            return 0.0
        one = pp_transfer_seconds(
            tokens, self.arch.hidden_size, self._fabric, self.inter_node_latency_seconds
        )
        return hops * one

    # -- decode ------------------------------------------------------------------------------
    def _dp_step(self, batch: float) -> float:
        lay, p = self.layout, self.params
        per_rank = max(batch, 1.0) / lay.dp
        touched = 1.0
        if self.arch.experts and self.arch.experts_per_token:
            touched = 1.0 - (1.0 - self.arch.experts_per_token / self.arch.experts) ** max(
                batch * 1.0, 1.0
            )
        dense_bytes = (non_expert_params(p) - p.embedding) * self.weight_bytes_per_param / lay.tp
        expert_bytes = p.routed_experts * touched * self.weight_bytes_per_param / (lay.tp * lay.dp)
        g = self.geometry
        kv = per_rank * g.bytes_per_token_per_rank * self.decode_context_tokens
        weights = (dense_bytes + expert_bytes) / (self._bw * self.weight_read_efficiency)
        mem = weights + kv / self._bw
        comp = per_rank * self._decode_flops_per_seq / self._decode_flops_rate
        a2a = all_to_all_seconds(
            per_rank,
            self.arch,
            lay,
            self._fabric,
            self.link_bytes_per_s * self.assumptions.interconnect_efficiency,
            self.inter_node_latency_seconds,
        )
        return (
            max(mem, comp)
            + self.allreduce_seconds(per_rank)
            + a2a
            + self.assumptions.step_overhead_seconds
        )

    def step_seconds(self, batch: float) -> float:
        if self.layout.dp > 1:
            return self._dp_step(batch)
        if self.layout.pp > 1:
            m = self._micro_batches(batch)
            micro = batch / m if batch > 0 else 0.0
            return super().step_seconds(micro) + self._pp_transfers(micro)
        return super().step_seconds(batch)

    @cached_property
    def weight_floor_seconds(self) -> float:
        if self.layout.dp > 1:
            lay, p = self.layout, self.params
            read = (non_expert_params(p) / lay.tp + p.routed_experts / (lay.tp * lay.dp)) * (
                self.weight_bytes_per_param
            )
            return (
                read / (self._bw * self.weight_read_efficiency)
                + self.assumptions.step_overhead_seconds
            )
        return super().weight_floor_seconds + self._pp_transfers(1.0)

    # -- prefill -----------------------------------------------------------------------------
    def _prefill_seconds(self, tokens: float, cached: float = 0.0) -> float:
        if tokens <= 0:
            return 0.0
        if self.layout.dp > 1:
            lay, p = self.layout, self.params
            dense_share = (p.active - p.routed_experts * self._active_expert_fraction) / p.active
            flops = self.prefill_flops(tokens, cached)
            rate = self.flops_per_s * self.assumptions.prefill_compute_efficiency
            compute = flops * dense_share / (lay.tp * rate) + flops * (1 - dense_share) / (
                lay.tp * lay.dp * rate
            )
            a2a = all_to_all_seconds(
                tokens,
                self.arch,
                lay,
                self._fabric,
                self.link_bytes_per_s * self.assumptions.interconnect_efficiency,
                self.inter_node_latency_seconds,
            )
            return (
                compute
                + self.allreduce_seconds(tokens)
                + a2a
                + self.assumptions.step_overhead_seconds
            )
        return super()._prefill_seconds(tokens, cached) + self._pp_transfers(tokens)

    @cached_property
    def _active_expert_fraction(self) -> float:
        a = self.arch
        if not (a.experts and a.experts_per_token):
            return 0.0
        return a.experts_per_token / a.experts

    @cached_property
    def mean_prefill_seconds(self) -> float:
        """The replica's busy time per mean prefill: the latency ÷ the lanes that overlap
        (pipeline stages, or DP ranks prefilling while the others decode)."""
        hit = self.prefix_cache_hit_rate
        latency = self.prefill_seconds(
            self.mean_input_tokens * (1.0 - hit), self.mean_input_tokens * hit
        )
        return (latency + self.prefill_spread_seconds) / max(self.layout.pp, self.layout.dp)

    def prefill_service_seconds(self, batch: float) -> float:
        """Pipeline- and data-parallel layouts keep the prefill's own busy time per lane
        (:attr:`mean_prefill_seconds`) as the queue's service time: their schedulers (one per
        stage set or DP rank) are not modelled step by step, nor simulated."""
        if self.layout.pp > 1 or self.layout.dp > 1:
            return self.mean_prefill_seconds
        return super().prefill_service_seconds(batch)

    def prefill_service_scv(self, batch: float) -> float | None:
        """Those layouts' service is a prefill's compute alone: its spread over the prompts."""
        if self.prompt_length_scv is None or not (self.layout.pp > 1 or self.layout.dp > 1):
            return super().prefill_service_scv(batch)
        m = self._prefill_moments
        return m.compute_var / (m.compute_s * m.compute_s) if m.compute_s > 0 else 0.0

    def pipeline_bubble(self, batch: float) -> float:
        """Idle share of the stages at ``batch`` running sequences: ``1 − m/PP``."""
        if self.layout.pp <= 1:
            return 0.0
        return 1.0 - self._micro_batches(batch) / self.layout.pp
