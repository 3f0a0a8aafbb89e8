"""Two GPU variants on the real API server: one Deployment per variant, and a ResourceQuota
that binds (the operator never asks beyond it and says by how much)."""

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.helpers import ROOT
from tests.integration.conftest import Objects
from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import plan_service
from tokenscale.playground.processes import Process, wait_for
from tokenscale.render.variants import variant_workload_name

pytestmark = pytest.mark.integration
MIXED = ROOT / "deploy" / "examples" / "variants" / "llama-3.1-8b-h100-l40s.yaml"
NAME = "llama-8b-mixed"


def _manifest() -> dict[str, Any]:
    doc = yaml.safe_load(MIXED.read_text())
    doc["spec"]["gateway"] = {"inferencePool": {"name": "llama-8b-pool"}}
    return doc


def _replicas(objects: Objects, variant: str) -> int | None:
    dep = objects.deployment(variant_workload_name(NAME, variant))
    return None if dep is None else int(dep.spec.replicas)


def test_two_variants_reconcile_to_one_deployment_each(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    doc = _manifest()
    plan = plan_service(parse_manifests(yaml.safe_dump(doc))[0].spec, NAME)
    mix = {v.name: v.replicas for v in plan.variants}
    assert all(mix.values())  # both variants in the mix
    op = start_operator(namespace)
    objects.create(doc)
    for variant, n in mix.items():
        wait_for(
            lambda v=variant, n=n: op.alive() and _replicas(objects, v) == n,
            60,
            f"Deployment of {variant} with {n} replicas",
        )
        dep = objects.deployment(variant_workload_name(NAME, variant))
        pod = dep.spec.template
        assert pod.metadata.labels["tokenscale.io/variant"] == variant
        assert dep.spec.selector.match_labels["tokenscale.io/variant"] == variant
        product = {"h100-sxm-80gb": "NVIDIA-H100-80GB-HBM3", "l40s-48gb": "NVIDIA-L40S"}
        assert pod.spec.node_selector["nvidia.com/gpu.product"] == product[variant]
    wait_for(
        lambda: any(
            s.metadata.name == NAME for s in objects.core.list_namespaced_service(namespace).items
        ),
        30,
        "Service",
    )
    svc = objects.core.read_namespaced_service(NAME, namespace)
    assert "tokenscale.io/variant" not in svc.spec.selector
    assert objects.deployment(NAME) is None  # no one-GPU Deployment beside the variants
    wait_for(
        lambda: (objects.condition(NAME, "PlanFeasible") or {}).get("status") == "True",
        30,
        "PlanFeasible=True",
    )
    assert objects.get(NAME)["status"]["replicas"] == sum(mix.values())


def test_a_resource_quota_is_never_exceeded(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    objects.core.create_namespaced_resource_quota(
        namespace,
        {
            "metadata": {"name": "team-gpus"},
            "spec": {"hard": {"requests.nvidia.com/gpu": "7"}},
        },
    )
    op = start_operator(namespace)
    objects.create(_manifest())
    # the mix is 4 H100 + 6 L40S = 10 GPUs; 7 allowed: the dearest capacity (L40S) gives way
    wait_for(
        lambda: (
            op.alive()
            and _replicas(objects, "h100-sxm-80gb") == 4
            and _replicas(objects, "l40s-48gb") == 3
        ),
        60,
        "4 H100 + 3 L40S within the quota",
    )
    wait_for(
        lambda: (objects.condition(NAME, "PlanFeasible") or {}).get("reason") == "QuotaLimited",
        30,
        "PlanFeasible=False QuotaLimited",
    )
    cond = objects.condition(NAME, "PlanFeasible")
    assert cond is not None
    assert cond["status"] == "False"
    assert "10 replicas wanted, 7 fit the GPU quota (3 short)" in cond["message"]
    assert "ResourceQuota team-gpus" in cond["message"]
