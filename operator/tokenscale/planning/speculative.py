"""Speculative decoding: what a proposer of ``k`` tokens with acceptance rate ``α`` does to a
replica's decode step, its memory and its throughput.

A step drafts ``k`` tokens (``k`` proposer forwards), then the target verifies them in one
forward over ``k + 1`` tokens per sequence. With each drafted token accepted independently with
probability ``α``, a step emits on average

    τ = (1 − α^(k+1)) / (1 − α)   tokens per sequence

(Leviathan, Kalman, Matias, "Fast Inference from Transformers via Speculative Decoding",
ICML 2023, eq. 1). vLLM's counters measure ``α`` as accepted ÷ drafted tokens.

Per output token a sequence then costs ``(t_verify(B) + t_draft(B)) / τ``:

- ``t_verify(B)``: the decode roofline with ``B·(k+1)`` tokens: the weights and the batch's KV
  are read once, the FLOPs (and MoE experts touched, and all-reduce payloads) grow ``k + 1``
  fold. While the step is bandwidth-bound the extra tokens are nearly free; once it is
  compute-bound they cost in full, so the gain shrinks as the batch grows and turns into a loss.
- ``t_draft(B)``: ``k`` proposer forwards, each a roofline of its own weight read (a draft
  model; or, for EAGLE/MTP heads, one decoder layer plus the target's LM head, which they reuse)
  and its KV. A draft model pays the per-step overhead on every forward; heads run inside the
  target's step, so they pay it once plus a smaller per-forward overhead. n-gram prompt lookup
  runs on the CPU: no GPU time.

Memory: a draft model's weights sit beside the target's (same TP) and its KV blocks in the same
pool (vLLM allocates both from one budget), so the KV capacity in tokens shrinks; EAGLE/MTP
heads add one layer's weights and one layer's KV. Pure: no I/O.
"""

import dataclasses
from dataclasses import dataclass
from functools import cached_property

from tokenscale.api.errors import SpecError, SpecIssue
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.model import ModelSpec
from tokenscale.planning.formulas import weight_bytes
from tokenscale.planning.inputs import (
    ResolvedModel,
    bytes_per_param,
    resident_bytes_per_param,
    resolve_model,
)
from tokenscale.planning.memory import kv_geometry
from tokenscale.planning.performance import EMBEDDING_BYTES_PER_PARAM, PerfModel
from tokenscale.planning.result import Plan, SpeculativeEstimate

DRAFT_PATH = "spec.serving.speculative.draftModel"
#: ``auto`` wants at least this share off the TPOT: a smaller gain is within the model's error.
MIN_TPOT_GAIN = 0.05
#: Proposers that are heads on the target's hidden states: vLLM runs their ``k`` forwards inside
#: the target's engine step, so the step's overhead (scheduling, input preparation) is paid
#: once per target step, not once per forward.
HEAD_METHODS = frozenset({"eagle", "eagle3", "mtp"})
#: What each head forward costs beyond its roofline (launches, the argmax, position updates):
#: least squares over the fit rows of benchmarks/accuracy/speculative.yaml (Llama-3.1-8B with
#: EAGLE-1/EAGLE-3 heads, batch 1, k 2–6; `python -m benchmarks.accuracy_speculative --fit`).
HEAD_FORWARD_OVERHEAD_SECONDS = 3.4e-4


def tokens_per_step(acceptance_rate: float, k: int) -> float:
    """Expected tokens a target step emits per sequence: ``(1 − α^(k+1)) / (1 − α)``."""
    a = acceptance_rate
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


@dataclass(frozen=True)
class SpeculativeSetup:
    """The proposer as the planner sees it (whole-model bytes; the planner splits by TP)."""

    method: str
    """vLLM's ``method`` (``auto`` resolved: draft_model with a draftModel, else ngram)."""
    auto: bool
    k: int
    acceptance_rate: float
    draft_name: str | None
    draft_weight_bytes: float
    draft_kv_bytes_per_token: float
    draft_read_bytes_per_step: float
    """Bytes one proposer forward reads besides the KV (weights; EAGLE/MTP: + the LM head)."""
    draft_flops_per_token: float
    source: str
    enabled: bool = True

    @property
    def tokens_per_step(self) -> float:
        return tokens_per_step(self.acceptance_rate, self.k)


def _draft_model(spec: InferenceServiceSpec, draft: ModelSpec) -> ResolvedModel:
    """The draft checkpoint resolved like ``spec.model`` (errors re-pathed to draftModel)."""
    try:
        return resolve_model(spec.model_copy(update={"model": draft}))
    except SpecError as err:
        raise SpecError(
            [SpecIssue(i.path.replace("spec.model", DRAFT_PATH, 1), i.message) for i in err.issues]
        ) from err


def resolve_speculative(
    spec: InferenceServiceSpec, model: ResolvedModel
) -> SpeculativeSetup | None:
    """``spec.serving.speculative`` sized against the target ``model`` (None when absent)."""
    s = spec.serving.speculative
    if s is None:
        return None
    method = s.method
    if method == "auto":
        method = "draft_model" if s.draft_model is not None else "ngram"
    name = s.draft_model.name if s.draft_model is not None else None
    base = SpeculativeSetup(
        method=method,
        auto=s.method == "auto",
        k=s.num_speculative_tokens,
        acceptance_rate=s.acceptance_rate,
        draft_name=name,
        draft_weight_bytes=0.0,
        draft_kv_bytes_per_token=0.0,
        draft_read_bytes_per_step=0.0,
        draft_flops_per_token=0.0,
        source="n-gram prompt lookup on the CPU: no GPU memory or time",
        enabled=s.method != "auto",
    )
    if method == "ngram":
        return base
    if method == "draft_model":
        assert s.draft_model is not None  # the API's validator
        d = _draft_model(spec, s.draft_model)
        if d.params.total >= model.params.total:
            raise SpecError.single(
                DRAFT_PATH,
                f"the draft ({d.params.total / 1e9:.2f} B params) is not smaller than the "
                f"target ({model.params.total / 1e9:.2f} B): a draft model speeds decoding "
                "only by being cheaper to run than the model it drafts for; name a smaller "
                "draft, or remove spec.serving.speculative",
            )
        kv = kv_geometry(d.architecture, d.kv_bytes_per_element, 1).bytes_per_token
        return dataclasses.replace(
            base,
            # resident with an int4 draft's scales; read per step as its elements, as the
            # target's decode reads its own (planning/inputs.py::resident_bytes_per_param)
            draft_weight_bytes=weight_bytes(d.params.total, resident_bytes_per_param(d)),
            draft_kv_bytes_per_token=kv,
            draft_read_bytes_per_step=weight_bytes(d.params.total, bytes_per_param(d.weight_dtype)),
            draft_flops_per_token=2.0 * d.params.active,
            source=f"draft {name}: {d.params.total / 1e9:.2f} B params ({d.source})",
        )
    # EAGLE / EAGLE-3 / MTP: one decoder layer of the target's width, reusing its LM head
    p, arch = model.params, model.architecture
    layer_params = (p.total - p.embedding - p.lm_head) / arch.layers
    head = p.lm_head or p.embedding
    w = weight_bytes(layer_params, EMBEDDING_BYTES_PER_PARAM)
    kv = kv_geometry(arch, model.kv_bytes_per_element, 1).bytes_per_token / arch.layers
    return dataclasses.replace(
        base,
        draft_weight_bytes=w,
        draft_kv_bytes_per_token=kv,
        draft_read_bytes_per_step=w + head * EMBEDDING_BYTES_PER_PARAM,
        draft_flops_per_token=2.0 * (layer_params + head),
        source=f"{method} head: one decoder layer ({layer_params / 1e9:.2f} B params, 16-bit) "
        "and the target's LM head",
    )


@dataclass(frozen=True)
class SpeculativePerfModel(PerfModel):
    """:class:`PerfModel` whose decode step is the per-token cost of a speculative step
    (module docstring): ``step_seconds(B) = (t_verify(B) + t_draft(B)) / τ``."""

    setup: SpeculativeSetup | None = None

    @cached_property
    def _spec(self) -> SpeculativeSetup:
        assert self.setup is not None
        return self.setup

    def verify_seconds(self, batch: float) -> float:
        """The target's forward over ``batch × (k + 1)`` tokens (weights and KV read once)."""
        tokens = batch * (self._spec.k + 1)
        kv_bytes = batch * self.geometry.bytes_per_token_per_rank * self._decode_held_tokens
        mem = self._weight_read_seconds(tokens) + kv_bytes / self._bw
        comp = tokens * self._decode_flops_per_seq / self._decode_flops_rate
        return (
            max(mem, comp) + self.allreduce_seconds(tokens) + self.assumptions.step_overhead_seconds
        )

    def draft_seconds(self, batch: float) -> float:
        """``k`` proposer forwards for ``batch`` sequences (0 for n-gram lookup). A draft model
        pays the per-step overhead on each of its forwards; EAGLE/MTP heads pay it once per
        target step and :data:`HEAD_FORWARD_OVERHEAD_SECONDS` per forward."""
        s = self._spec
        if s.draft_read_bytes_per_step <= 0.0:
            return 0.0
        kv = batch * s.draft_kv_bytes_per_token / self.tp * self._decode_held_tokens
        mem = (s.draft_read_bytes_per_step / self.tp + kv) / self._bw
        comp = batch * s.draft_flops_per_token / self._decode_flops_rate
        overhead = self.assumptions.step_overhead_seconds
        if s.method in HEAD_METHODS:
            return overhead + s.k * (max(mem, comp) + HEAD_FORWARD_OVERHEAD_SECONDS)
        return s.k * (max(mem, comp) + overhead)

    def _step_seconds(self, batch: float) -> float:
        b = max(batch, 1.0) if batch > 0 else 0.0
        return (self.verify_seconds(b) + self.draft_seconds(b)) / self._spec.tokens_per_step


def speculative_perf(base: PerfModel, setup: SpeculativeSetup) -> SpeculativePerfModel:
    """``base`` with its decode steps made speculative."""
    same = {f.name: getattr(base, f.name) for f in dataclasses.fields(PerfModel)}
    return SpeculativePerfModel(**same, setup=setup)


def break_even_batch(on: PerfModel, off: PerfModel, max_batch: int) -> int:
    """The largest batch (1 … ``max_batch``) at which speculation still emits at least as many
    tokens per second as plain decoding (0: not even at batch 1). The ratio falls as the step
    becomes compute-bound, so the first batch below 1 ends the search."""
    best = 0
    for batch in range(1, max_batch + 1):
        if on.output_tps(float(batch)) < off.output_tps(float(batch)):
            break
        best = batch
    return best


def _needed_gpus(p: Plan) -> int | None:
    return None if p.replicas is None else p.replicas.with_redundancy * p.gpus_per_replica


def choose_speculative(
    setup: SpeculativeSetup,
    on: Plan,
    off: Plan,
    perf_on: PerfModel,
    perf_off: PerfModel,
) -> Plan:
    """The plan to keep and its :class:`SpeculativeEstimate`. A named method stays on (the
    estimate says what it costs); ``auto`` keeps it only where it pays: the speculative plan is
    feasible, needs no more GPUs and lowers the TPOT at the load by at least
    :data:`MIN_TPOT_GAIN`."""
    tau = setup.tokens_per_step
    need_on, need_off = _needed_gpus(on), _needed_gpus(off)
    pays = (
        on.feasible
        and need_on is not None
        and (need_off is None or need_on <= need_off)
        and on.tpot_estimate_s < (1.0 - MIN_TPOT_GAIN) * off.tpot_estimate_s
    )
    enabled = pays if setup.auto else True
    chosen = on if enabled else off
    batch = max(chosen.operating_batch, 1.0)
    load = max(chosen.at_load.batch if chosen.at_load is not None else batch, 1.0)
    tpot_on, tpot_off = perf_on.tpot_seconds(load), perf_off.tpot_seconds(load)
    ratio = perf_on.output_tps(batch) / perf_off.output_tps(batch)
    even = break_even_batch(perf_on, perf_off, max(chosen.max_num_seqs, 1))
    even_rps = perf_off.request_rate(float(even)) if even > 0 else 0.0
    numbers = (
        f"TPOT {tpot_off * 1e3:,.1f} → {tpot_on * 1e3:,.1f} ms at the load's batch {load:,.1f} "
        f"({tau:.2f} tokens per step at k={setup.k}, α={setup.acceptance_rate:.2f}), "
        f"{ratio:.2f}× throughput at the operating batch {batch:,.0f}; "
        + (
            f"worth it up to batch {even:,} (below ≈{even_rps:,.2f} RPS per replica)"
            if even > 0
            else "it loses throughput at every batch"
        )
    )
    gpus = (
        f"; GPUs needed {need_off} → {need_on}"
        if need_on is not None and need_off is not None
        else ""
    )
    if not setup.auto:
        reason = f"on ({setup.method}, named in the spec): {numbers}{gpus}"
    elif enabled:
        reason = f"on (auto: it pays): {numbers}{gpus}"
    else:
        why = (
            "the speculative plan is not feasible"
            if not on.feasible or need_on is None
            else "it needs more GPUs"
            if need_off is not None and need_on > need_off
            else f"it lowers the TPOT by less than {MIN_TPOT_GAIN:.0%}"
        )
        reason = f"off (auto: {why}): {numbers}{gpus}"
    tp = chosen.tensor_parallel_size
    estimate = SpeculativeEstimate(
        enabled=enabled,
        reason=reason,
        method=setup.method,
        num_speculative_tokens=setup.k,
        acceptance_rate=setup.acceptance_rate,
        tokens_per_step=tau,
        tpot_s=tpot_on,
        tpot_without_s=tpot_off,
        throughput_ratio=ratio,
        operating_batch=batch,
        load_batch=load,
        break_even_batch=even,
        break_even_rps_per_replica=even_rps,
        draft_weight_bytes_per_gpu=setup.draft_weight_bytes / tp,
        draft_kv_bytes_per_token_per_gpu=setup.draft_kv_bytes_per_token / tp,
        source=setup.source,
    )
    return chosen.model_copy(update={"speculative": estimate})


def not_modelled(setup: SpeculativeSetup, plan: Plan, why: str) -> Plan:
    """``plan`` (without speculation) with an estimate that says why it was not modelled."""
    estimate = SpeculativeEstimate(
        enabled=False,
        reason=f"off: {why}",
        method=setup.method,
        num_speculative_tokens=setup.k,
        acceptance_rate=setup.acceptance_rate,
        tokens_per_step=setup.tokens_per_step,
        tpot_s=plan.tpot_estimate_s,
        tpot_without_s=plan.tpot_estimate_s,
        throughput_ratio=1.0,
        operating_batch=plan.operating_batch,
        load_batch=plan.at_load.batch if plan.at_load is not None else plan.operating_batch,
        break_even_batch=0,
        break_even_rps_per_replica=0.0,
        draft_weight_bytes_per_gpu=0.0,
        draft_kv_bytes_per_token_per_gpu=0.0,
        source=setup.source,
    )
    return plan.model_copy(update={"speculative": estimate})


def with_measured_acceptance(
    spec: InferenceServiceSpec, measured: float | None
) -> InferenceServiceSpec:
    """``spec`` planning with the acceptance rate vLLM measured (accepted ÷ drafted tokens)
    instead of the one assumed, for a named method (``auto`` keeps the assumed rate: with
    speculation off nothing is measured, so a measured rate would switch it back and forth).
    Unchanged when nothing was measured."""
    s = spec.serving.speculative
    if s is None or s.method == "auto" or measured is None or not 0.0 <= measured <= 1.0:
        return spec
    rate = min(measured, 0.99)
    serving = spec.serving.model_copy(
        update={"speculative": s.model_copy(update={"acceptance_rate": rate})}
    )
    return spec.model_copy(update={"serving": serving})
