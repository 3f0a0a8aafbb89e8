"""Actuators: what one reconcile writes for what it decided (``spec.scaling.actuation``).

The reconcile decides and renders the same way in every mode (:class:`Desired`); the actuator
picks the objects that are written and says who writes the workload's replicas:

- ``direct``: every rendered object, replicas included (tokenscale scales).
- ``advisory``: nothing. No workload is created or scaled, and no Service or PDB is written
  either (a Service would route traffic and a PDB would gate evictions of pods tokenscale does
  not run); status, ``tokenscale_replicas_desired`` and a ``Recommended a→b`` event per
  changed decision say what it would do.
- ``keda``: the rendered objects with the workload's ``spec.replicas`` left out, plus a KEDA
  ``ScaledObject`` whose trigger reads the decision back from Prometheus: KEDA's HPA writes
  the replicas, so a changed count is never drift.

With ``spec.workloadRef`` nothing is rendered for the workload: ``direct`` writes only the
replicas, through the referenced object's ``/scale``; ``keda`` writes only the ScaledObject,
aimed at it; ``advisory`` still writes nothing.
"""

from dataclasses import dataclass
from typing import Any, Protocol

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.render.bundle import RenderedBundle
from tokenscale.render.keda import scaled_object
from tokenscale.scaling import Decision

REPLICAS_WRITER_ANNOTATION = "tokenscale.io/replicas-writer"
"""On a workload whose replicas KEDA writes: ``keda``. Absent: tokenscale applied
``spec.replicas`` last, so it must hand the field over before leaving it out."""


@dataclass(frozen=True)
class Desired:
    """What should be for one InferenceService this reconcile, before anything is written."""

    name: str
    namespace: str
    spec: InferenceServiceSpec
    bundle: RenderedBundle
    decision: Decision
    decided: bool
    """The decision was made now (False: the stored one re-applied)."""
    previous: int | None
    """``status.decidedReplicas`` as read."""
    live_replicas: int | None
    """The workload's replicas as found (None: none)."""
    target: dict[str, str] | None = None
    """``spec.workloadRef`` (apiVersion, kind, name): nothing is rendered for the workload;
    only its replicas are written, through ``/scale``."""


class Actuator(Protocol):
    mode: str
    writes_replicas: bool

    def objects(self, desired: Desired) -> list[dict[str, Any]]:
        """The objects to apply, in order."""
        ...

    def events(self, desired: Desired) -> list[tuple[str, str, str]]:
        """Events (type, reason, message) the actuator owes beyond the apply's own."""
        ...

    def through_scale(self, desired: Desired) -> int | None:
        """Replicas to write through a referenced workload's ``/scale`` (None: none)."""
        ...


class Direct:
    mode = "direct"
    writes_replicas = True

    def objects(self, desired: Desired) -> list[dict[str, Any]]:
        return [] if desired.target is not None else list(desired.bundle.objects)

    def events(self, desired: Desired) -> list[tuple[str, str, str]]:
        return []

    def through_scale(self, desired: Desired) -> int | None:
        return desired.decision.replicas if desired.target is not None else None


class Advisory:
    mode = "advisory"
    writes_replicas = False

    def objects(self, desired: Desired) -> list[dict[str, Any]]:
        return []

    def events(self, desired: Desired) -> list[tuple[str, str, str]]:
        d = desired.decision
        if not desired.decided or desired.previous == d.replicas:
            return []
        was = desired.previous if desired.previous is not None else desired.live_replicas
        moved = f"{d.replicas}" if was is None else f"{was}→{d.replicas}"
        return [("Normal", "Recommended", f"Recommended {moved}: {d.why}")]

    def through_scale(self, desired: Desired) -> int | None:
        return None


class Keda:
    mode = "keda"
    writes_replicas = False

    def objects(self, desired: Desired) -> list[dict[str, Any]]:
        bundle, spec = desired.bundle, desired.spec
        assert spec.scaling.keda is not None  # the spec's validator requires it with keda
        owners = bundle.workload["metadata"].get("ownerReferences")
        if desired.target is not None:  # the referenced workload: only the ScaledObject
            trigger = scaled_object(
                desired.name, desired.namespace, desired.target, spec.scaling, spec.scaling.keda
            )
            if owners:
                trigger["metadata"]["ownerReferences"] = owners
            return [trigger]
        # one workload: the spec's validator refuses keda with variants or P/D
        # (api/shape_conflicts.py), so a spec that reaches here renders one
        assert len(bundle.workloads) <= 1, "keda with several workloads passed the validator"
        workload = _without_replicas(bundle.workload)
        meta = workload["metadata"]
        target = {
            "apiVersion": workload["apiVersion"],
            "kind": workload["kind"],
            "name": meta["name"],
        }
        trigger = scaled_object(
            desired.name, desired.namespace, target, spec.scaling, spec.scaling.keda
        )
        if owners:
            trigger["metadata"]["ownerReferences"] = owners
        rest = [o for o in bundle.objects if o is not bundle.workload]
        # the ScaledObject first: without KEDA installed nothing else is written
        return [trigger, workload, *rest]

    def events(self, desired: Desired) -> list[tuple[str, str, str]]:
        return []

    def through_scale(self, desired: Desired) -> int | None:
        return None  # KEDA writes them


def _without_replicas(workload: dict[str, Any]) -> dict[str, Any]:
    spec = {k: v for k, v in workload["spec"].items() if k != "replicas"}
    meta = workload["metadata"]
    annotations = {**(meta.get("annotations") or {}), REPLICAS_WRITER_ANNOTATION: "keda"}
    return {**workload, "metadata": {**meta, "annotations": annotations}, "spec": spec}


def handed_over(live: dict[str, Any] | None) -> bool:
    """Whether ``live``'s replicas are already left to KEDA (tokenscale's last apply left
    them out)."""
    annotations = ((live or {}).get("metadata") or {}).get("annotations") or {}
    return annotations.get(REPLICAS_WRITER_ANNOTATION) == "keda"


ACTUATORS: dict[str, Actuator] = {"direct": Direct(), "advisory": Advisory(), "keda": Keda()}


def actuator_for(spec: InferenceServiceSpec) -> Actuator:
    return ACTUATORS[spec.scaling.actuation]
