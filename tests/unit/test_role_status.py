"""The operator's side of per-role scaling (``controller/roles.py``): each role's memory goes
to ``status.roles`` and comes back; an observation is decided once; memory that does not match
the workload is not trusted."""

from dataclasses import dataclass

from tests.unit.test_role_scaling import SPEC, _both, _snap
from tokenscale.api.inference_service import InferenceService
from tokenscale.api.status import InferenceServiceStatus
from tokenscale.controller.roles import RolesMade, decide_roles_for
from tokenscale.controller.status import read_status, status_document
from tokenscale.planning import plan_service
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.roles import pools
from tokenscale.scaling.stepper import Observation

SERVICE = InferenceService.model_validate({"metadata": {"name": "pd"}, "spec": SPEC.model_dump()})
PLAN = plan_service(SPEC, "pd")


@dataclass(frozen=True)
class View:
    """What ``decide_roles_for`` reads of the reconcile's metrics view."""

    observation: Observation | None
    now_s: float
    interval_s: float = 15.0
    stale_after_s: float = 120.0


def _written(made: RolesMade, replicas: int) -> InferenceServiceStatus:
    """The status as the operator writes it and reads it back."""
    status = InferenceServiceStatus(
        replicas=replicas,
        decided_replicas=replicas,
        roles=made.status({"prefill": None, "decode": None}, PLAN),
    )
    back, problems = read_status(status_document(status))
    assert problems == []
    return back


def test_no_metrics_source_runs_each_role_at_its_planned_count() -> None:
    made = decide_roles_for(SERVICE, PLAN, InferenceServiceStatus(), None, None, {})
    _, prefill, decode = pools(PLAN)
    assert made.counts == {"prefill": prefill.replicas, "decode": decode.replicas}
    assert made.decisions["prefill"].cause == Cause.PLAN
    assert made.combined.replicas == prefill.replicas + decode.replicas


def test_memory_round_trips_and_an_observation_is_decided_once() -> None:
    obs = _both(1000.0, _snap(1000.0, 4, 10.0, waiting=20.0), _snap(1000.0, 4, 10.0))
    live = {"prefill": 4, "decode": 4}
    first = decide_roles_for(SERVICE, PLAN, InferenceServiceStatus(), View(obs, 1000.0), None, live)
    assert first.decided
    assert first.counts["prefill"] > 4
    assert first.counts["decode"] == 4
    back = _written(first, sum(first.counts.values()))
    assert back.roles is not None
    assert back.roles.prefill.scaling is not None
    assert back.roles.prefill.scaling.observed_at_s == 1000.0
    # a reconcile on the same observation (a Deployment event): the stored counts, no decision
    moved = {"prefill": first.counts["prefill"], "decode": 4}
    again = decide_roles_for(SERVICE, PLAN, back, View(obs, 1003.0), None, moved)
    assert not again.decided
    assert again.counts == first.counts
    assert again.problems == []
    # a newer observation decides again, from the memory read back
    newer = _both(1015.0, _snap(1015.0, 4, 10.0, waiting=20.0), _snap(1015.0, 4, 10.0))
    third = decide_roles_for(SERVICE, PLAN, back, View(newer, 1015.0), None, moved)
    assert third.decided
    assert third.decisions["prefill"].state.observed_at_s == 1015.0


def test_memory_from_the_future_is_reset_and_the_role_redecided() -> None:
    obs = _both(1000.0, _snap(1000.0, 4, 10.0), _snap(1000.0, 4, 10.0))
    live = {"prefill": 4, "decode": 4}
    first = decide_roles_for(SERVICE, PLAN, InferenceServiceStatus(), View(obs, 1000.0), None, live)
    back = _written(first, 8)
    assert back.roles is not None
    assert back.roles.decode.scaling is not None
    forged = back.roles.decode.scaling.model_copy(update={"low_since_s": 9e9})
    roles = back.roles.model_copy(
        update={"decode": back.roles.decode.model_copy(update={"scaling": forged})}
    )
    tampered = back.model_copy(update={"roles": roles})
    again = decide_roles_for(SERVICE, PLAN, tampered, View(obs, 1003.0), None, live)
    assert any(p.startswith("decode: status.scaling.lowSinceSeconds") for p in again.problems)
    assert again.decided  # not the stored decision: memory that was reset is decided on again
