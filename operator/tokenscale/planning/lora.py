"""What LoRA adapters cost one replica: memory out of the KV pool, time per step, swaps.

**Memory** (vLLM, ``vllm/lora/layers/base_linear.py`` ``create_lora_weights``): with
``--enable-lora`` every LoRA-capable linear module of the model (for a Llama-style decoder
q, k, v, o, gate, up, down — whatever the adapters target) gets ``max_loras`` zeroed slots of
``max_lora_rank``, allocated at start-up before the KV cache is sized::

    slot_bytes_per_gpu = max_loras × max_lora_rank × b × L ×
        ( Σ_column (in + out/TP)  +  Σ_row (in/TP + out) )

column-parallel modules (q, k, v, gate, up) keep ``lora_a`` whole and split ``lora_b``'s
output; row-parallel ones (o, down) split ``lora_a``'s input and keep ``lora_b`` whole
(``fully_sharded_loras`` off, vLLM's default); ``b`` is the LoRA dtype (the model's activation
dtype, 2 bytes). The adapters' own weights are copied *into* these slots, so what the GPU holds
does not grow with the adapters' ranks. Each LoRA matmul also allocates an FP32 shrink buffer
``[slices, tokens, max_lora_rank]`` (``punica_wrapper/punica_gpu.py`` ``add_lora_linear``) that
the profiling step's activation peak includes: ``3 × T × max_lora_rank × 4 B``.

**An adapter's size** (host cache, loads): ``r × b × L × Σ_targets (in + out)``.

**Time**: a decode step runs a shrink and an expand kernel per LoRA module group (qkv, o,
gate_up, down) per layer whatever the batch holds, and each kernel reads the slots of the
distinct adapters in the batch at ``max_lora_rank``::

    t_lora(B) = 2 × groups × L × (t_kernel + D(B) × t_adapter)
              + D(B) × slot_bytes_per_gpu(1) / HBM_bw
    D(B) = min(max_loras, Σ_i 1 − (1 − p_i)^B)

with ``t_kernel + D(B) × t_adapter`` per kernel (:data:`LORA_KERNEL_SECONDS`,
:data:`LORA_ADAPTER_KERNEL_SECONDS`, fitted to published vLLM measurements:
``benchmarks/accuracy/lora.yaml``). The kernels run once per step for all the tokens it
schedules: a prefill chunk riding in a decode step adds none (its request's adapter is among
the ``D(B)`` of the ``B`` in flight); a prompt prefilled alone pays the one-adapter kernels per
chunk. ``t_lora(B)`` is work the step shares among its sequences, so the knee is measured from
the weight floor plus ``t_lora(B)`` (:meth:`LoraPerfModel.knee_floor_seconds`).

**Slots**: vLLM's scheduler admits a request only while the batch holds at most ``max_loras``
adapters, so the batch runs at most as wide as ``D_∞(B) = max_loras`` allows (``D_∞``: ``D``
without the cap); the others wait for a slot.

**Swaps** (LRU, Che's approximation): with ``m`` slots and per-request shares ``p_i`` a request
misses the GPU with probability ``f(m) = Σ p_i e^(−p_i T_m)`` where ``Σ 1 − e^(−p_i T_m) = m``
(``f = 0`` when every adapter fits); a miss in ``max_cpu_loras`` reads the source again. A load
stalls the step it happens in (vLLM activates adapters synchronously before the forward), so
each decode step pays ``B / mean_output × (f_host × t_host + f_source × t_source)``.
"""

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from tokenscale.api.errors import SpecError, SpecIssue
from tokenscale.api.lora import Lora, rank_choice
from tokenscale.api.model import Architecture
from tokenscale.planning.formulas import chunk_count
from tokenscale.planning.performance import PerfModel

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Bytes per LoRA weight: vLLM's ``--lora-dtype auto`` is the model's activation dtype (BF16).
LORA_BYTES_PER_ELEMENT = 2.0
#: Seconds one shrink or expand kernel costs a decode step whatever its adapters, and what each
#: distinct adapter in the batch adds to it: least squares (``benchmarks/accuracy_lora.py
#: --fit``) over the fit set of ``benchmarks/accuracy/lora.yaml`` (vLLM 0.8.5 V1, Qwen2.5-7B,
#: rank 8, batch 250, 1–300 adapters: 70.4 µs and 1.43 µs). An effective figure: it holds
#: whatever the engine spends per LoRA step (metadata, launches), measured at one batch size.
LORA_KERNEL_SECONDS = 70.4e-6
LORA_ADAPTER_KERNEL_SECONDS = 1.43e-6
#: Module groups vLLM runs LoRA kernels for per layer in a Llama-style decoder.
LORA_GROUPS = 4
#: Read rate of an adapter's source when it is not in host memory (local NVMe or a warm page
#: cache; an assumption), bytes per second, and the fixed cost of opening and parsing it.
SOURCE_BYTES_PER_S = 2e9
SOURCE_FIXED_S = 0.05
#: Fixed cost of activating an adapter already in host memory (slot reset and copy launch).
HOST_FIXED_S = 0.001
#: The modules an adapter targets when neither it nor its config says (all seven).
ALL_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
#: Row-parallel modules (input split over TP ranks); the others are column-parallel.
ROW_PARALLEL = ("o_proj", "down_proj")
#: Candidates the planner tries for ``maxLoras`` when the spec leaves it out.
MAX_LORAS_CANDIDATES = (1, 2, 4, 8, 16, 32, 64, 128)


def module_shapes(arch: Architecture) -> dict[str, tuple[int, int]]:
    """``(in, out)`` features of each LoRA-capable linear module of one layer."""
    h, d = arch.hidden_size, arch.effective_head_dim
    q, kv = arch.attention_heads * d, arch.effective_kv_heads * d
    width = arch.intermediate_size or arch.expert_intermediate_size or 4 * h
    return {
        "q_proj": (h, q),
        "k_proj": (h, kv),
        "v_proj": (h, kv),
        "o_proj": (q, h),
        "gate_proj": (h, width),
        "up_proj": (h, width),
        "down_proj": (width, h),
    }


def adapter_bytes(arch: Architecture, rank: int, targets: list[str]) -> float:
    """One adapter's weights, whole model: ``r × b × L × Σ_targets (in + out)``."""
    shapes = module_shapes(arch)
    per_rank = sum(sum(shapes[t]) for t in targets if t in shapes)
    return rank * LORA_BYTES_PER_ELEMENT * arch.layers * per_rank


def slot_bytes_per_gpu(arch: Architecture, max_lora_rank: int, tp: int) -> float:
    """One ``max_lora_rank`` slot on one GPU for every LoRA-capable module (module docstring)."""
    per_layer = 0.0
    for name, (n_in, n_out) in module_shapes(arch).items():
        per_layer += n_in / tp + n_out if name in ROW_PARALLEL else n_in + n_out / tp
    return max_lora_rank * LORA_BYTES_PER_ELEMENT * arch.layers * per_layer


@lru_cache(maxsize=256)
def _shares_array(shares: tuple[float, ...]) -> "npt.NDArray[np.float64]":
    # imported here: a service without adapters never loads NumPy (16 MB of the operator's
    # resident set)
    import numpy as np  # noqa: PLC0415

    return np.asarray(shares, dtype=np.float64)


def expected_distinct(shares: Sequence[float], batch: float, cap: int) -> float:
    """Distinct adapters among ``batch`` independent requests, at most ``cap``."""
    if batch <= 0:
        return 0.0
    p = _shares_array(tuple(shares))
    distinct = float((1.0 - (1.0 - p) ** batch).sum())
    return min(float(cap), distinct)


def slot_batch(shares: Sequence[float], max_loras: int) -> float | None:
    """The largest batch whose requests span, on average, no more than ``max_loras`` adapters
    (vLLM's scheduler admits a request only while its adapter has a slot in the batch); None
    when every adapter has a slot."""
    return _slot_batch(tuple(shares), max_loras)


@lru_cache(maxsize=4096)
def _slot_batch(shares: tuple[float, ...], max_loras: int) -> float | None:
    if max_loras >= len(shares):
        return None
    lo, hi = 1.0, 2.0
    while expected_distinct(shares, hi, len(shares)) <= max_loras and hi < 1e7:
        hi *= 2.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if expected_distinct(shares, mid, len(shares)) <= max_loras:
            lo = mid
        else:
            hi = mid
    return lo


def lru_miss_fraction(shares: Sequence[float], capacity: int) -> float:
    """Share of requests whose adapter is not among the ``capacity`` an LRU cache holds
    (Che's approximation; 0 when every adapter fits)."""
    return _lru_miss_fraction(tuple(shares), capacity)


@lru_cache(maxsize=4096)
def _lru_miss_fraction(shares: tuple[float, ...], capacity: int) -> float:
    if capacity >= len(shares):
        return 0.0
    if capacity <= 0:
        return 1.0
    p = _shares_array(shares)

    from numpy import exp  # noqa: PLC0415 (see _shares_array)

    def occupied(t: float) -> float:
        return float((1.0 - exp(-p * t)).sum())

    lo, hi = 0.0, 1.0
    while occupied(hi) < capacity:
        hi *= 2.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        if occupied(mid) < capacity:
            lo = mid
        else:
            hi = mid
    t = (lo + hi) / 2.0
    return float((p * exp(-p * t)).sum())


@dataclass(frozen=True)
class LoraSetup:
    """``spec.lora`` resolved against the model: shares, sizes and the engine's settings."""

    names: tuple[str, ...]
    shares: tuple[float, ...]
    ranks: tuple[int, ...]
    adapter_bytes: tuple[float, ...]
    """Each adapter's weights, whole model (what the host cache holds and a load moves)."""
    max_lora_rank: int
    max_loras: int
    max_loras_given: bool
    max_cpu_loras: int
    slot_bytes_tp1: float
    """One slot at TP 1 (scaled by :func:`slot_bytes_per_gpu` for other TPs)."""
    arch: Architecture
    pcie_bytes_per_s: float
    notes: tuple[str, ...] = ()

    def with_max_loras(self, m: int) -> "LoraSetup":
        cpu = self.max_cpu_loras if self.max_cpu_loras >= m else m
        return LoraSetup(
            self.names,
            self.shares,
            self.ranks,
            self.adapter_bytes,
            self.max_lora_rank,
            m,
            self.max_loras_given,
            cpu,
            self.slot_bytes_tp1,
            self.arch,
            self.pcie_bytes_per_s,
            self.notes,
        )

    @cached_property
    def batch_cap(self) -> float | None:
        """:func:`slot_batch` at this ``max_loras``."""
        return slot_batch(self.shares, self.max_loras)

    def slots_bytes(self, tp: int) -> float:
        """All ``max_loras`` slots on one GPU."""
        return self.max_loras * slot_bytes_per_gpu(self.arch, self.max_lora_rank, tp)

    def shrink_buffer_bytes(self, tokens: int) -> float:
        """The profiling step's FP32 shrink buffer (qkv: three slices)."""
        return 3.0 * tokens * self.max_lora_rank * 4.0

    @cached_property
    def gpu_miss(self) -> float:
        return lru_miss_fraction(self.shares, self.max_loras)

    @cached_property
    def host_miss(self) -> float:
        return lru_miss_fraction(self.shares, self.max_cpu_loras)

    @cached_property
    def mean_adapter_bytes(self) -> float:
        return sum(p * b for p, b in zip(self.shares, self.adapter_bytes, strict=True))

    def _bytes(self, adapter: int | None) -> float:
        return self.mean_adapter_bytes if adapter is None else self.adapter_bytes[adapter]

    def host_load_seconds(self, tp: int, adapter: int | None = None) -> float:
        """Activating an adapter (the mean one, or index ``adapter``) from host memory: its
        shard over PCIe plus a fixed cost."""
        return HOST_FIXED_S + self._bytes(adapter) / tp / self.pcie_bytes_per_s

    def source_load_seconds(self, tp: int, adapter: int | None = None) -> float:
        """Reading an adapter from its source (:data:`SOURCE_BYTES_PER_S`) then over PCIe."""
        return (
            SOURCE_FIXED_S
            + self._bytes(adapter) / SOURCE_BYTES_PER_S
            + self.host_load_seconds(tp, adapter)
        )

    def load_seconds_per_request(self, tp: int) -> float:
        """Expected stall a request causes by needing its adapter loaded."""
        host = max(0.0, self.gpu_miss - self.host_miss)
        return host * self.host_load_seconds(tp) + self.host_miss * self.source_load_seconds(tp)

    def kernel_seconds(self, batch: float, tp: int, hbm_bytes_per_s: float) -> float:
        """The LoRA kernels' time in one decode step of ``batch`` sequences (the expected
        distinct adapters among them)."""
        if batch <= 0:
            return 0.0
        distinct = expected_distinct(self.shares, batch, self.max_loras)
        return self.kernel_seconds_for(distinct, tp, hbm_bytes_per_s)

    def kernel_seconds_for(self, distinct: float, tp: int, hbm_bytes_per_s: float) -> float:
        """The LoRA kernels' time in one step whose batch holds ``distinct`` adapters."""
        per_kernel = LORA_KERNEL_SECONDS + distinct * LORA_ADAPTER_KERNEL_SECONDS
        kernels = 2.0 * LORA_GROUPS * self.arch.layers * per_kernel
        reads = distinct * slot_bytes_per_gpu(self.arch, self.max_lora_rank, tp)
        return kernels + reads / hbm_bytes_per_s

    def step_extra_seconds(
        self, batch: float, tp: int, hbm_bytes_per_s: float, mean_output_tokens: float
    ) -> float:
        """What LoRA adds to one decode step: kernels, and the loads its requests cause."""
        loads = batch / max(mean_output_tokens, 1.0) * self.load_seconds_per_request(tp)
        return self.kernel_seconds(batch, tp, hbm_bytes_per_s) + loads


def check_adapters(lora: Lora, model_name: str) -> None:
    """What the spec's validators could not see before an adapter_config.json was inlined (a
    file or a ConfigMap): its rank against ``maxLoraRank``, its base model against the spec's.
    Raises :class:`SpecError` naming each adapter's field."""
    issues: list[SpecIssue] = []
    for i, a in enumerate(lora.adapters):
        where = f"spec.lora.adapters[{i}]"
        if a.adapter_config_file is not None and a.adapter_config is None:
            issues.append(
                SpecIssue(
                    f"{where}.adapterConfigFile",
                    f"{a.adapter_config_file!r} is a file only the command line reads; in the "
                    "cluster put the adapter_config.json in a ConfigMap and set "
                    "adapterConfigRef, or give rank and targetModules",
                )
            )
        rank = a.effective_rank
        if lora.max_lora_rank is not None and rank is not None and rank > lora.max_lora_rank:
            issues.append(
                SpecIssue(
                    f"{where}.rank",
                    f"{a.name}: rank {rank} exceeds spec.lora.maxLoraRank={lora.max_lora_rank}; "
                    f"vLLM refuses to load it: raise maxLoraRank to {rank_choice(rank)}",
                )
            )
        base = a.base_model
        if base is not None and base.rstrip("/") != model_name.rstrip("/"):
            issues.append(
                SpecIssue(
                    f"{where}.adapterConfig.base_model_name_or_path",
                    f"{a.name} was trained on {base!r}, not spec.model.name {model_name!r}; "
                    "serve it with its own base model",
                )
            )
    if issues:
        raise SpecError(issues)


def resolve_lora(
    lora: Lora | None, arch: Architecture, pcie_gbps: float, model_name: str
) -> LoraSetup | None:
    """``spec.lora`` against the model (None: LoRA off). Adapters whose rank is still unknown
    (no rank, no adapter_config.json inlined) are sized at ``maxLoraRank`` (noted)."""
    if lora is None:
        return None
    check_adapters(lora, model_name)
    notes: list[str] = []
    known = [a.effective_rank for a in lora.adapters if a.effective_rank is not None]
    max_rank = lora.max_lora_rank or rank_choice(max(known, default=16))
    ranks: list[int] = []
    sizes: list[float] = []
    unknown: list[str] = []
    for a in lora.adapters:
        rank = a.effective_rank
        if rank is None:
            unknown.append(a.name)
            rank = max_rank
        targets = a.effective_target_modules or list(ALL_MODULES)
        ranks.append(rank)
        sizes.append(adapter_bytes(arch, rank, targets))
    if unknown:
        notes.append(
            f"LoRA: no rank for {', '.join(unknown[:3])}{' …' if len(unknown) > 3 else ''}: "
            f"sized at maxLoraRank={max_rank} (give rank or adapterConfig)"
        )
    if arch.is_moe:
        notes.append(
            "LoRA: the experts' LoRA slots of an MoE model are not modelled (attention and "
            "dense modules only)"
        )
    count = len(lora.adapters)
    max_loras = lora.max_loras if lora.max_loras is not None else 1
    cpu = lora.max_cpu_loras if lora.max_cpu_loras is not None else count
    return LoraSetup(
        names=tuple(a.name for a in lora.adapters),
        shares=tuple(lora.shares),
        ranks=tuple(ranks),
        adapter_bytes=tuple(sizes),
        max_lora_rank=max_rank,
        max_loras=max_loras,
        max_loras_given=lora.max_loras is not None,
        max_cpu_loras=max(cpu, max_loras),
        slot_bytes_tp1=slot_bytes_per_gpu(arch, max_rank, 1),
        arch=arch,
        pcie_bytes_per_s=pcie_gbps * 1e9,
        notes=tuple(notes),
    )


def max_loras_candidates(setup: LoraSetup) -> list[int]:
    """The ``maxLoras`` values the planner compares: the given one, else powers of two up to
    the adapter count (and the count itself when it is below 128)."""
    if setup.max_loras_given:
        return [setup.max_loras]
    count = len(setup.names)
    out = [m for m in MAX_LORAS_CANDIDATES if m < count]
    out.append(min(count, MAX_LORAS_CANDIDATES[-1]))
    return out


@dataclass(frozen=True)
class LoraPerfModel(PerfModel):
    """:class:`PerfModel` whose decode steps and prefill chunks also run the LoRA kernels and
    pay the adapter loads their requests cause (module docstring)."""

    lora: LoraSetup | None = None

    def lora_kernel_seconds(self, distinct: int) -> float:
        """The LoRA kernels' time in a step whose batch holds ``distinct`` adapters (the
        simulator's, which plays the loads out itself); 0 without LoRA."""
        if self.lora is None:
            return 0.0
        return self.lora.kernel_seconds_for(float(distinct), self.tp, self._bw)

    @property
    def weight_floor_seconds(self) -> float:
        """The base floor plus the LoRA kernels of a one-adapter step: a fixed cost every step
        pays, as the step overhead is (the knee's reference at batch 1,
        :meth:`knee_floor_seconds`)."""
        base = super().weight_floor_seconds
        if self.lora is None:
            return base
        return base + self.lora.kernel_seconds_for(1.0, self.tp, self._bw)

    def knee_floor_seconds(self, batch: float) -> float:
        """The base floor plus the LoRA kernels of the ``D(B)`` adapters the batch holds: work
        a step pays once however many of its sequences share each adapter, as it reads the
        weights once. Measured against the one-adapter floor (:attr:`weight_floor_seconds`)
        the per-adapter kernels would count as per-sequence work while ``D(B)`` still grows,
        and the knee would stop where the throughput still rises faster than TPOT."""
        base = super().weight_floor_seconds
        if self.lora is None:
            return base
        return base + self.lora.kernel_seconds(max(batch, 1.0), self.tp, self._bw)

    def mixed_step_extra_seconds(self, decode_seqs: float) -> float:
        """The LoRA kernels of a step carrying ``decode_seqs`` decodes and a prompt's chunk:
        the adapters of those ``decode_seqs + 1`` requests (a prompt's TTFT under load)."""
        if self.lora is None:
            return 0.0
        return self.lora.kernel_seconds(decode_seqs + 1.0, self.tp, self._bw)

    def _step_seconds(self, batch: float) -> float:
        base = super()._step_seconds(batch)
        if self.lora is None:
            return base
        return base + self.lora.step_extra_seconds(
            batch, self.tp, self._bw, self.mean_output_tokens
        )

    def _chunks(self, tokens: float) -> int:
        return chunk_count(tokens, self.max_num_batched_tokens) if self.chunked_prefill else 1

    def _prefill_seconds(self, tokens: float, cached: float) -> float:
        """A prompt prefilled on an otherwise idle replica: every chunk is a step of its own
        and runs the one-adapter kernels (what a TTFT at no load pays)."""
        base = super()._prefill_seconds(tokens, cached)
        if self.lora is None or tokens <= 0:
            return base
        return base + self._chunks(tokens) * self.lora.kernel_seconds(1.0, self.tp, self._bw)

    @cached_property
    def mean_prefill_seconds(self) -> float:
        """What a mean prompt adds to the decode steps it rides in (prefill interference and a
        replica's request rate, :meth:`PerfModel.tpot_seconds`): the base prefill alone. A
        step launches its LoRA kernels once for every token it schedules (the simulator's mixed
        step does the same), and the prompt's adapter is among the ``D(B)`` adapters of the
        ``B`` requests in flight the step's kernels already count, so its chunks add no LoRA
        time; alone they would pay the one-adapter kernels each (:meth:`_prefill_seconds`)."""
        if self.lora is None:
            return super().mean_prefill_seconds
        hit = self.prefix_cache_hit_rate
        n, cached = self.mean_input_tokens * (1.0 - hit), self.mean_input_tokens * hit
        return PerfModel._prefill_seconds(self, n, cached) + self.prefill_spread_seconds


def lora_perf(base: PerfModel, setup: LoraSetup) -> LoraPerfModel:
    """``base`` with the LoRA kernels and loads added."""
    same = {f.name: getattr(base, f.name) for f in dataclasses.fields(PerfModel)}
    return LoraPerfModel(**same, lora=setup)
