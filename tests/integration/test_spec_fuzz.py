"""1,000 invalid and edge-case specs against the real API server and the operator.

Each spec is a valid one with one to three fields of the generated CRD schema replaced by an
odd value (negative, zero, huge, wrong type, empty, null), removed, or joined by an unknown
key. Every one is sent as a server-side dry-run create: the CRD schema refuses it (422) or
the API server would store it, and then the operator's parse and plan either accept it or
raise a SpecError naming a ``spec.`` field path; nothing else (no crash). A sample of the
accepted ones is created for real with the operator running: each ends with a PlanFeasible
condition, a Deployment only when it is True, and the field path in the message when not.
"""

import copy
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from tests.helpers import manifest
from tests.integration.conftest import GROUP, PLURAL, VERSION, Objects
from tokenscale.api.crd import build_crd
from tokenscale.api.errors import SpecError
from tokenscale.api.manifest import parse_inference_service
from tokenscale.planning import plan_service
from tokenscale.playground.processes import Process, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # minutes: `pytest -m slow`
EXAMPLES = 1000
RECONCILED = 16


def _paths(schema: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for name, sub in (schema.get("properties") or {}).items():
        path = (*prefix, name)
        out.append(path)
        if sub.get("type") == "object" and len(path) < 4:
            out.extend(_paths(sub, path))
    return out


SPEC_SCHEMA = build_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
PATHS = _paths(SPEC_SCHEMA)
ODD = st.one_of(
    st.integers(-(10**15), 10**15),
    st.sampled_from([0, -1, 1, 2**31, 2**63 - 1, 0.0, -0.0, 1e-300, 1e300, 0.5]),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=12),
    st.sampled_from(["auto", "", "H100-SXM-80GB", "fp8", "bf16", "L4-24GB", "1", "-5"]),
    st.booleans(),
    st.none(),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.sampled_from(["mean", "p99", "x"]), st.integers(-5, 5), max_size=2),
)


@st.composite
def odd_specs(draw: st.DrawFn) -> dict[str, Any]:
    body = copy.deepcopy(manifest())
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS))
        node = body["spec"]
        for part in path[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        action = draw(st.sampled_from(["set", "set", "set", "drop", "unknown"]))
        if action == "drop":
            node.pop(path[-1], None)
        elif action == "unknown":
            node[f"bogus{draw(st.integers(0, 9))}"] = draw(ODD)
        else:
            node[path[-1]] = draw(ODD)
    return body


def _verdict(stored: dict[str, Any]) -> str:
    """What the operator makes of a stored object (its reconcile's parse → plan)."""
    error: SpecError | None = None
    try:
        service = parse_inference_service(stored)
        plan = plan_service(service.spec, stored["metadata"]["name"])
    except SpecError as err:
        error = err
    if error is not None:
        assert all(p.startswith("spec") for p in error.paths), error
        return "InvalidSpec"
    if plan.feasible:
        return "Feasible"
    # a layout that serves but needs more than maxReplicas still deploys, flagged
    return "BelowNeed" if plan.replicas is not None else "Infeasible"


def test_a_thousand_odd_specs_are_refused_or_reported_never_crash(
    api: client.ApiClient,
    objects: Objects,
    namespace: str,
    start_operator: Callable[..., Process],
) -> None:
    custom = client.CustomObjectsApi(api)
    outcomes: Counter[str] = Counter()
    accepted: dict[str, list[dict[str, Any]]] = {}
    started = time.monotonic()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,  # the same 1,000 specs every run: reproducible figures
        suppress_health_check=list(HealthCheck),
    )
    @given(odd_specs())
    def check(body: dict[str, Any]) -> None:
        body = {**body, "metadata": {"name": "fuzz", "namespace": namespace}}
        refused: client.exceptions.ApiException | None = None
        try:
            stored = custom.create_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, body, dry_run="All"
            )
        except client.exceptions.ApiException as exc:
            refused = exc
        if refused is not None:
            assert refused.status == 422, (refused.status, refused.body)
            assert "spec" in refused.body
            outcomes["refused (422)"] += 1
            return
        verdict = _verdict(dict(stored))
        outcomes[verdict] += 1
        accepted.setdefault(verdict, []).append(body)

    check()
    took = time.monotonic() - started
    assert sum(outcomes.values()) >= EXAMPLES
    assert outcomes["refused (422)"] > 0
    assert outcomes["InvalidSpec"] + outcomes["Infeasible"] > 0
    print(f"{sum(outcomes.values())} specs in {took:.0f} s: {dict(outcomes)}")

    # a sample, reconciled by the real operator
    sample = [
        body
        for verdict in ("InvalidSpec", "Infeasible", "Feasible")
        for body in accepted.get(verdict, [])[: RECONCILED // 3 + 1]
    ]
    op = start_operator(namespace)
    for i, body in enumerate(sample):
        objects.create({**body, "metadata": {"name": f"fuzz-{i}"}})

    def settled(name: str) -> bool:
        if not op.alive():
            raise RuntimeError(op.tail())
        return objects.condition(name, "PlanFeasible") is not None

    for i in range(len(sample)):
        name = f"fuzz-{i}"
        wait_for(lambda n=name: settled(n), 60, f"{name} reconciled")
        cond = objects.condition(name, "PlanFeasible")
        assert cond is not None
        expected = _verdict(objects.get(name))  # as stored: unknown fields pruned
        has_deployment = objects.deployment(name) is not None
        if expected in ("Feasible", "BelowNeed"):
            assert cond["status"] == ("True" if expected == "Feasible" else "False"), cond
            if expected == "BelowNeed":
                assert cond["reason"] == "BelowNeed"
                assert "maxReplicas" in cond["message"]
            wait_for(lambda n=name: objects.deployment(n) is not None, 30, "Deployment")
        else:
            assert cond["status"] == "False", cond
            assert cond["reason"] == expected
            assert not has_deployment
            if expected == "InvalidSpec":
                assert "spec." in cond["message"]
            wait_for(
                lambda n=name, r=expected: any(e.reason == r for e in objects.events(n)),
                30,
                f"{expected} event",
            )
    assert op.alive(), op.tail()
    print(f"reconciled by the operator: {len(sample)} specs, operator alive")
