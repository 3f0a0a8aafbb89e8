"""The ``ProductionReady`` condition: the production-readiness checklist
(``render/readiness.py``) judged on what this reconcile planned and rendered, and on what
Prometheus answered (when the operator has a Prometheus). Alerts are not judged here: the
operator cannot see which PrometheusRules the cluster's Prometheus loaded (`tokenscale check`
judges them from a manifest)."""

from collections.abc import Mapping, Sequence
from typing import Any

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.status import Condition
from tokenscale.controller.status import condition
from tokenscale.planning.result import Plan
from tokenscale.render.readiness import readiness, summary
from tokenscale.scaling.snapshot import Snapshot


def production_ready_condition(
    previous: list[Condition],
    spec: InferenceServiceSpec,
    plan: Plan,
    objects: Sequence[Mapping[str, Any]],
    live: Snapshot | None,
    now: str,
    generation: int | None,
) -> Condition:
    """``True`` when every item passes; otherwise ``False`` naming each failed item, why, and
    what to change."""
    ok, message = summary(readiness(spec, plan, objects, None, live))
    return condition(
        previous,
        "ProductionReady",
        "True" if ok else "False",
        "ChecklistPassed" if ok else "ChecklistFailed",
        message,
        now,
        generation,
    )
