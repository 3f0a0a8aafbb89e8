"""What a spec asks that no one fleet shape runs, found once where the spec is read (the CLI's
``plan``/``simulate``/``check`` exit 2, the operator's ``PlanFeasible=False InvalidSpec`` with
nothing written) instead of when a reconcile renders or writes.

- A GPU mix (``spec.hardware.variants``) with prefill/decode pools
  (``spec.serving.disaggregation`` on or auto): a mix plans one serving pool per variant and
  the pools one GPU type; no rule places the roles on the variants.
- Length classes (``spec.serving.lengthClasses``) with prefill/decode pools: each class is
  one serving pool; no rule splits a class into roles.
- ``spec.scaling.actuation: keda`` with several workloads (a mix's one per variant, P/D's
  prefill and decode, one per length class): one ScaledObject scales one workload.
- ``spec.workloadRef`` with several workloads: one reference scales one existing workload.

``auto`` is refused with them as ``on`` is, whatever the load: it may choose the two pools, and
a spec that turned invalid when its traffic changed would be refused by a reconcile, not by
``plan``.
"""

from dataclasses import dataclass

from tokenscale.api.hardware import HardwareSpec
from tokenscale.api.scaling import Scaling
from tokenscale.api.serving import Serving
from tokenscale.api.workload_ref import WorkloadRef


@dataclass(frozen=True)
class _Several:
    """A part of the spec that renders more than one workload."""

    field: str
    renders: str
    one_workload: str


def _several(hardware: HardwareSpec, serving: Serving) -> list[_Several]:
    out = []
    if hardware.is_mix:
        out.append(
            _Several(
                "spec.hardware.variants",
                f"one workload per GPU variant ({len(hardware.variants or [])})",
                "plan one GPU type (spec.hardware.gpu)",
            )
        )
    if serving.splits_by_length:
        out.append(
            _Several(
                "spec.serving.lengthClasses",
                f"one workload per length class ({len(serving.length_classes or [])})",
                "remove spec.serving.lengthClasses",
            )
        )
    if serving.asks_for_roles:
        mode = serving.disaggregation
        out.append(
            _Several(
                f"spec.serving.disaggregation: {mode}",
                "a prefill and a decode workload"
                + (" when it chooses the two pools" if mode == "auto" else ""),
                "set spec.serving.disaggregation: off",
            )
        )
    return out


def shape_conflicts(
    hardware: HardwareSpec,
    serving: Serving,
    scaling: Scaling,
    workload_ref: WorkloadRef | None,
) -> list[str]:
    """Each conflict in words: the fields, why no shape runs them, and the fix (empty: none)."""
    out = []
    if hardware.is_mix and serving.asks_for_roles:
        out.append(
            "spec.hardware.variants with spec.serving.disaggregation: "
            f"{serving.disaggregation}: a GPU mix plans one serving pool per variant and "
            "prefill/decode pools run on one GPU type; no rule places the roles on the variants"
            + (" (auto may choose the two pools)" if serving.disaggregation == "auto" else "")
            + ". Set spec.serving.disaggregation: off (or remove it) to plan the mix, or give "
            "one GPU type (spec.hardware.gpu) to plan prefill/decode pools"
        )
    if serving.splits_by_length and serving.asks_for_roles:
        out.append(
            "spec.serving.lengthClasses with spec.serving.disaggregation: "
            f"{serving.disaggregation}: each length class is planned as one serving pool, and "
            "no rule splits a class into prefill and decode pools. Set "
            "spec.serving.disaggregation: off (or remove it), or remove spec.serving.lengthClasses"
        )
    several = _several(hardware, serving)
    if scaling.actuation == "keda":
        out += [
            f"spec.scaling.actuation: keda scales one workload; {s.field} renders {s.renders}: "
            f"use spec.scaling.actuation direct or advisory, or {s.one_workload}"
            for s in several
        ]
    if workload_ref is not None:
        out += [
            f"spec.workloadRef scales one existing workload; {s.field} plans {s.renders}: "
            f"remove spec.workloadRef (tokenscale then renders the workloads), or "
            f"{s.one_workload}"
            for s in several
        ]
    return out
