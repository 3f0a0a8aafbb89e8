"""Plan one InferenceService, whatever its hardware form: one GPU type
(:func:`tokenscale.planning.planner.plan_service`) or several (``spec.hardware.variants``,
:func:`tokenscale.planning.mix.plan_mix`); with classes, as the classes' rule over either
(:func:`tokenscale.planning.classes.plan_classes`)."""

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import planner
from tokenscale.planning.classes import plan_classes
from tokenscale.planning.length_classes import plan_length_classes
from tokenscale.planning.mix import plan_mix
from tokenscale.planning.result import Plan


def plan_service(spec: InferenceServiceSpec, name: str = "") -> Plan:
    """Plan ``spec``. Raises :class:`SpecError` for invalid input; infeasibility is a Plan.
    With ``spec.workload.classes``, the classes' rule (planning/classes.py) over this."""
    if spec.workload.classes:
        return plan_classes(spec, name, _plan_one)
    if spec.serving.splits_by_length:
        return plan_length_classes(spec, name, _plan_one)
    return _plan_one(spec, name)


def _plan_one(spec: InferenceServiceSpec, name: str) -> Plan:
    if spec.hardware.is_mix:
        return plan_mix(spec, name)
    return planner.plan_service(spec, name)
