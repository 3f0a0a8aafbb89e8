"""Plan a ``spec.workloadRef`` service at the layout its pod template runs, not the spec's.

:func:`at_running_layout` is pure: the engine settings read from the referenced pod template
(:func:`~tokenscale.controller.workload_ref.engine_settings`) become the spec keys the planner
already takes — ``--tensor-parallel-size`` → ``spec.hardware.tensorParallelSize``,
``--max-num-seqs`` → ``spec.serving.maxNumSeqs``, ``--max-num-batched-tokens`` →
``spec.serving.maxNumBatchedTokens``, ``--max-model-len`` → ``spec.workload.maxContextTokens``.
An absent flag is vLLM's default (TP 1; the others: the key left unset, which the planner reads
as vLLM's default). A value the planner cannot take (TP not 1, 2, 4 or 8 or wider than a node,
a number out of the field's range) is not adopted: the spec's value stays and the note says so.
The model, ``--pipeline-parallel-size`` and the GPU count are not adopted (the spec has no such
key, or the layout follows from TP); ``WorkloadMatchesSpec`` names them when they differ.

:func:`read_running` is the shell's part: one GET of the referenced object for a body with a
``spec.workloadRef`` (None otherwise, or when it is not found or runs no ``vllm serve``).
"""

import json
from dataclasses import dataclass, field
from typing import Any

from tokenscale.api.base import MAX_TOKENS
from tokenscale.api.hardware import TP_CHOICES
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.controller.api import ScaleApi
from tokenscale.controller.workload_ref import Found, engine_settings, find, pod_template
from tokenscale.planning import Plan

SOURCE_KEY = "layout"
"""The ``plan.sources`` key that says the plan was made at the running layout."""
MAX_SEQS = 1_000_000
MIN_BATCHED_TOKENS = 16


@dataclass(frozen=True)
class Running:
    """What the referenced pod template runs (``settings``: flag → value, and ``gpus``)."""

    where: str
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """For the plan memo's key: the settings, canonical."""
        return "running=" + json.dumps(self.settings, sort_keys=True, separators=(",", ":"))


def _int(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def at_running_layout(
    spec: InferenceServiceSpec, running: Running | None
) -> tuple[InferenceServiceSpec, list[str]]:
    """``spec`` with the running engine settings as its own, and one note per key (adopted,
    or not and why); without ``running``, ``spec`` as is. ``running`` is read from a
    ``workloadRef``'s workload, which the spec's validator refuses beside ``hardware.variants``
    (``api/shape_conflicts.py``): a mix never comes here with one."""
    if running is None:
        return spec, []
    s = running.settings
    notes: list[str] = []
    hardware: dict[str, Any] = {}
    serving: dict[str, Any] = {}
    workload: dict[str, Any] = {}

    tp_text = s.get("--tensor-parallel-size", "1")
    tp = _int(tp_text)
    if tp in TP_CHOICES and tp is not None and tp <= spec.hardware.gpus_per_node:
        hardware["tensor_parallel_size"] = tp
        notes.append(f"--tensor-parallel-size {tp}")
    else:
        notes.append(
            f"not adopted: --tensor-parallel-size {tp_text} (tokenscale plans 1, 2, 4 or 8 "
            f"within gpusPerNode={spec.hardware.gpus_per_node}); planned at the spec's"
        )

    for flag, key, low, high, into in (
        ("--max-num-seqs", "max_num_seqs", 1, MAX_SEQS, serving),
        ("--max-num-batched-tokens", "max_num_batched_tokens", MIN_BATCHED_TOKENS, MAX_TOKENS,
         serving),
        ("--max-model-len", "max_context_tokens", 1, MAX_TOKENS, workload),
    ):  # fmt: skip
        text = s.get(flag)
        if text is None:
            into[key] = None
            notes.append(f"{flag} vLLM's default")
            continue
        value = _int(text)
        if value is None or not low <= value <= high:
            notes.append(f"not adopted: {flag} {text} (not an integer in {low}..{high})")
            continue
        into[key] = value
        notes.append(f"{flag} {value}")

    pp = s.get("--pipeline-parallel-size", "1")
    if pp != "1":
        notes.append(f"not adopted: --pipeline-parallel-size {pp} (no spec key; planned by TP)")
    adjusted = spec.model_copy(
        update={
            "hardware": spec.hardware.model_copy(update=hardware),
            "serving": spec.serving.model_copy(update=serving),
            "workload": spec.workload.model_copy(update=workload),
        }
    )
    return adjusted, notes


def noted(plan: Plan, running: Running | None, spec: InferenceServiceSpec) -> Plan:
    """``plan`` with ``sources.layout`` saying it was made at ``running``'s layout, each key
    adopted or not (as is without one)."""
    if running is None:
        return plan
    notes = at_running_layout(spec, running)[1]
    said = f"the running pod template of {running.where} (spec.workloadRef): " + ", ".join(notes)
    return plan.model_copy(update={"sources": {**plan.sources, SOURCE_KEY: said}})


def read_running(
    kube: ScaleApi, namespace: str, body: dict[str, Any]
) -> tuple[Running | None, Found | None]:
    """The referenced pod template's engine settings, for a body with ``spec.workloadRef``
    (None without one, or when the object is not found or runs no ``vllm serve``), and what
    was found there (the reconcile scales through it: one lookup per reconcile, not two)."""
    spec = body.get("spec") or {}
    ref = spec.get("workloadRef") if isinstance(spec, dict) else None
    if not isinstance(ref, dict):
        return None, None
    api_version, kind, name = ref.get("apiVersion"), ref.get("kind"), ref.get("name")
    if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
        return None, None  # the parser names the field
    found = find(kube, namespace, api_version, kind, name)
    template = None if found.object is None else pod_template(found.object)
    if template is None:
        return None, found
    gpu = _gpu_resource(spec)
    settings = engine_settings(template, gpu)
    if settings is None:
        return None, found
    return Running(f"{kind} {namespace}/{name}", settings), found


def _gpu_resource(spec: dict[str, Any]) -> str:
    """The spec's GPU resource name where given inline, else the catalog default."""
    hardware = spec.get("hardware") or {}
    inline = hardware.get("gpuSpec") if isinstance(hardware, dict) else None
    if isinstance(inline, dict) and isinstance(inline.get("resourceName"), str):
        return str(inline["resourceName"])
    return "nvidia.com/gpu"
