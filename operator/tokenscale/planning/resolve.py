"""The first planner question: what does this spec resolve to?

:func:`resolve` turns a spec into concrete inputs — the GPU, the model's shapes and dtypes,
vLLM's serving defaults for the GPU — or raises :class:`SpecError` naming the field. Every later
question (:func:`tokenscale.planning.planner.plan_at`) starts from a :class:`Resolved`, so the
decision engine and the simulator never edit a spec to ask the planner something.
"""

from dataclasses import dataclass

from tokenscale.api.errors import SpecError, SpecIssue
from tokenscale.api.hardware import GpuSpec
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning.inputs import (
    ResolvedModel,
    ServingDefaults,
    check_tp,
    resolve_gpu,
    resolve_model,
    valid_tp_sizes,
    vllm_serving_defaults,
)
from tokenscale.planning.lora import LoraSetup, resolve_lora
from tokenscale.planning.speculative import SpeculativeSetup, resolve_speculative


@dataclass(frozen=True)
class Resolved:
    """A spec with its catalog lookups done: everything the planner needs besides conditions."""

    spec: InferenceServiceSpec
    name: str
    gpu: GpuSpec
    gpu_key: str
    model: ResolvedModel
    defaults: ServingDefaults
    speculative: SpeculativeSetup | None = None
    """``spec.serving.speculative`` sized (``enabled`` says whether this question uses it)."""
    lora: LoraSetup | None = None
    """``spec.lora`` sized, at the ``maxLoras`` this question asks about."""
    knobs_as_run: tuple[int, int] | None = None
    """(``--max-num-batched-tokens``, ``--max-num-seqs`` per rank) of a fleet already running
    (:func:`~tokenscale.planning.planner.as_planned`): the live plan times the flags rendered,
    not ones it would choose again; None: the planner chooses them."""

    def tp_sizes(self) -> list[int]:
        """The tensor-parallel sizes to plan: the pinned one (checked), or every valid one."""
        hw, arch = self.spec.hardware, self.model.architecture
        if hw.tensor_parallel_size != "auto":
            check_tp(arch, hw.tensor_parallel_size, hw.gpus_per_node)
            return [hw.tensor_parallel_size]
        sizes = valid_tp_sizes(arch, hw.gpus_per_node)
        if not sizes:
            check_tp(arch, 1, hw.gpus_per_node)  # raises with the reason
        return sizes


def resolve(spec: InferenceServiceSpec, name: str = "") -> Resolved:
    """Resolve ``spec`` (raises :class:`SpecError` for invalid input)."""
    issues: list[SpecIssue] = []
    try:
        gpu = resolve_gpu(spec)
    except SpecError as err:
        issues += err.issues
    try:
        model = resolve_model(spec)
    except SpecError as err:
        issues += err.issues
    if issues:
        raise SpecError(issues)  # the GPU's and the model's problems in one run
    return Resolved(
        spec=spec,
        name=name,
        gpu=gpu,
        gpu_key=spec.hardware.gpu or gpu.name,
        model=model,
        defaults=vllm_serving_defaults(gpu),
        speculative=resolve_speculative(spec, model),
        lora=resolve_lora(spec.lora, model.architecture, gpu.pcie_gbps, spec.model.name),
    )
