"""Two GPU variants on the real API server: one Deployment per variant, and a ResourceQuota
that binds (the operator never asks beyond it and says by how much)."""

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from tests.helpers import ROOT
from tests.integration.conftest import Objects
from tests.support.vllm_emulator import Load, VllmMetricsEmulator
from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import Plan, plan_service
from tokenscale.playground.processes import Process, wait_for
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.render.variants import variant_workload_name
from tokenscale.scaling.variant_order import mix_counts

pytestmark = pytest.mark.integration
MIXED = ROOT / "deploy" / "examples" / "variants" / "llama-3.1-8b-h100-l40s.yaml"
NAME = "llama-8b-mixed"


def _manifest() -> dict[str, Any]:
    doc = yaml.safe_load(MIXED.read_text())
    doc["spec"]["gateway"] = {"inferencePool": {"name": "llama-8b-pool"}}
    return doc


def _plan() -> Plan:
    """The example's plan, as the operator makes it: the mix the tests expect comes from it."""
    return plan_service(parse_manifests(yaml.safe_dump(_manifest()))[0].spec, NAME)


def _mix(plan: Plan) -> dict[str, int]:
    return {v.name: v.replicas for v in plan.variants}


def _replicas(objects: Objects, variant: str) -> int | None:
    dep = objects.deployment(variant_workload_name(NAME, variant))
    return None if dep is None else int(dep.spec.replicas)


def _gpu_pods(objects: Objects) -> list[Any]:
    selector = "tokenscale.io/variant"
    pods = objects.core.list_namespaced_pod(objects.ns, label_selector=selector).items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def test_two_variants_reconcile_to_one_deployment_each(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    doc = _manifest()
    mix = _mix(_plan())
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
    stored = objects.get(NAME)["status"]["plan"]  # the pools, through the CRD's schema
    assert {x["name"]: x["replicas"] for x in stored["pools"]} == mix
    assert stored["coordination"] == "mix"


def test_a_resource_quota_is_never_exceeded(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    objects.core.create_namespaced_resource_quota(
        namespace,
        {
            "metadata": {"name": "team-gpus"},
            "spec": {"hard": {"requests.nvidia.com/gpu": "9"}},
        },
    )

    def used() -> str | None:
        quota = objects.core.read_namespaced_resource_quota("team-gpus", objects.ns)
        return ((quota.status and quota.status.used) or {}).get("requests.nvidia.com/gpu")

    # the quota controller's first count, then another workload of the namespace holds 2 of the
    # 9 (counted by admission; a pod made before that first count may be missed by it until
    # the controller's full resync, minutes later): 7 are left for the service
    wait_for(lambda: used() == "0", 60, "the quota's status")
    objects.core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "other-team"},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "busybox",
                        "resources": {"limits": {"nvidia.com/gpu": "2"}},
                    }
                ]
            },
        },
    )
    wait_for(lambda: used() == "2", 30, "the other workload's 2 GPUs counted")
    # the plan's mix (one GPU a replica) does not fit the 7 GPUs left: the dearest
    # capacity (L40S) gives way, in the operator's scale order, and the H100s keep their 4
    plan = _plan()
    wanted = sum(_mix(plan).values())
    fit = mix_counts(plan, wanted, {"nvidia.com/gpu": 7}).counts
    assert sum(fit.values()) == 7 < wanted
    assert fit["h100-sxm-80gb"] == _mix(plan)["h100-sxm-80gb"]
    assert fit["l40s-48gb"] < _mix(plan)["l40s-48gb"]
    h100, l40s = fit["h100-sxm-80gb"], fit["l40s-48gb"]
    op = start_operator(namespace)
    objects.create(_manifest())
    wait_for(
        lambda: (
            op.alive()
            and _replicas(objects, "h100-sxm-80gb") == h100
            and _replicas(objects, "l40s-48gb") == l40s
        ),
        60,
        f"{h100} H100 + {l40s} L40S within the quota",
    )
    wait_for(
        lambda: (objects.condition(NAME, "PlanFeasible") or {}).get("reason") == "QuotaLimited",
        30,
        "PlanFeasible=False QuotaLimited",
    )
    cond = objects.condition(NAME, "PlanFeasible")
    assert cond is not None
    assert cond["status"] == "False"
    assert f"{wanted} replicas wanted, 7 fit the GPU quota ({wanted - 7} short)" in cond["message"]
    assert "ResourceQuota team-gpus" in cond["message"]

    # the quota controller counts them: used is the service's 7 GPUs and the other pod's 2
    wait_for(lambda: used() == "9", 60, "the quota's used at 9")
    # settled, not passing through: once the 7 pods exist and count in the quota's used, the
    # reconciles their Deployments' status changes bring keep them (while the quota had no
    # status, counting the service's own pods back as room grew the L40S to the plan's here)
    wait_for(lambda: len(_gpu_pods(objects)) == 7, 60, "the 7 pods")
    deadline = time.monotonic() + 10  # five operator intervals
    while time.monotonic() < deadline:
        assert op.alive()
        assert (_replicas(objects, "h100-sxm-80gb"), _replicas(objects, "l40s-48gb")) == (
            h100,
            l40s,
        )
        assert len(_gpu_pods(objects)) <= 7
        time.sleep(0.5)


def test_a_stockout_moves_the_need_to_the_next_variant(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    plan = _plan()
    mix = _mix(plan)
    total = sum(mix.values())
    assert mix["h100-sxm-80gb"] == 4  # 3 stuck, 1 placed
    # the need moves in the scale order: the H100s keep what is placed (1, or 0 once the
    # ReplicaSet removed the placed pod), the L40S take the rest of the same total
    room = {kept: mix_counts(plan, total, None, {"h100-sxm-80gb": kept}).counts for kept in (1, 0)}
    moved = {kept: (c["h100-sxm-80gb"], c["l40s-48gb"]) for kept, c in room.items()}
    assert moved == {1: (1, total - 1), 0: (0, total)}
    op = start_operator(namespace)
    objects.create(_manifest())
    h100 = variant_workload_name(NAME, "h100-sxm-80gb")
    wait_for(lambda: op.alive() and _replicas(objects, "h100-sxm-80gb") == 4, 60, "4 H100")

    def h100_pods() -> list[Any]:
        pods = objects.core.list_namespaced_pod(
            namespace, label_selector="tokenscale.io/variant=h100-sxm-80gb"
        ).items
        return [p for p in pods if p.metadata.deletion_timestamp is None]

    wait_for(lambda: len(h100_pods()) == 4, 60, "the H100 Deployment's 4 pods")
    # the verdicts land one by one: a reconcile between two of them would see (and remember)
    # fewer; the operator is stopped while they are written, and a new one reads all three
    op.stop()
    # the scheduler's verdict on 3 of them, 400 s ago (past the 300 s grace): no H100 left
    since = datetime.fromtimestamp(time.time() - 400, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for pod in h100_pods()[:3]:
        objects.core.patch_namespaced_pod_status(
            pod.metadata.name,
            namespace,
            {
                "status": {
                    "conditions": [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
                            "lastTransitionTime": since,
                        }
                    ]
                }
            },
        )
    op = start_operator(namespace)
    # the need moves: the H100s keep the one placed, the L40S take the other 3
    wait_for(
        lambda: (
            op.alive()
            # 1 + the rest, or 0 + all once the ReplicaSet removed the placed pod (its choice)
            and (_replicas(objects, "h100-sxm-80gb"), _replicas(objects, "l40s-48gb"))
            in moved.values()
        ),
        120,
        f"1 H100 + {total - 1} L40S",
    )
    wait_for(
        lambda: (objects.condition(NAME, "VariantExhausted") or {}).get("status") == "True",
        30,
        "VariantExhausted=True",
    )
    cond = objects.condition(NAME, "VariantExhausted")
    assert cond is not None
    # keeps 1, or 0 once the ReplicaSet, scaling down, removed the placed pod (its choice)
    assert re.search(
        r"h100-sxm-80gb: 3 replica\(s\) could not be placed, keeps [01]", cond["message"]
    )
    variants = {v["name"]: v for v in objects.get(NAME)["status"]["variants"]}
    assert variants["h100-sxm-80gb"]["exhausted"] is True
    assert variants["h100-sxm-80gb"]["unplaced"] == 3
    assert variants["h100-sxm-80gb"]["exhaustedSince"]
    kept = variants["h100-sxm-80gb"]["replicas"]
    assert kept in (0, 1)  # 0 once the ReplicaSet removed the placed pod: all 4 move
    assert variants["l40s-48gb"] == {
        "name": "l40s-48gb",
        "replicas": total - kept,
        "exhausted": False,
        "unplaced": 0,
    }
    assert objects.deployment(h100) is not None


def test_back_to_one_gpu_type_deletes_the_variants_deployments(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    mix = _mix(_plan())
    assert all(mix.values())  # both variants in the mix
    op = start_operator(namespace)
    objects.create(_manifest())
    wait_for(
        lambda: op.alive() and all(_replicas(objects, v) == n for v, n in mix.items()),
        60,
        "the variants' Deployments",
    )
    objects.patch_spec(
        NAME, {"hardware": {"variants": None, "gpu": "H100-SXM-80GB", "tensorParallelSize": 1}}
    )
    wait_for(
        lambda: (
            op.alive()
            and objects.deployment(NAME) is not None
            and objects.deployment(variant_workload_name(NAME, "h100-sxm-80gb")) is None
            and objects.deployment(variant_workload_name(NAME, "l40s-48gb")) is None
        ),
        60,
        "the one-GPU Deployment alone",
    )

    def removed() -> list[str]:
        events = objects.core.list_namespaced_event(namespace).items
        return sorted(str(e.message) for e in events if e.reason == "WorkloadRemoved")

    said = [
        f"Deleted Deployment {variant_workload_name(NAME, v)}: its GPU variant is no longer in "
        "spec.hardware"
        for v in ("h100-sxm-80gb", "l40s-48gb")
    ]
    # events are posted in the background: the deletions can be seen before their events are
    wait_for(lambda: len(removed()) >= len(said), 30, "the WorkloadRemoved events")
    assert removed() == said
    assert objects.get(NAME)["status"].get("variants", []) == []


@pytest.mark.slow  # ≈55 s of metric-driven steps: `pytest -m slow`
def test_a_mix_scales_on_metrics_cheapest_capacity_up_dearest_down(
    objects: Objects,
    namespace: str,
    start_operator: Callable[..., Process],
    prometheus: PrometheusServer,
    emulators: Callable[..., VllmMetricsEmulator],
) -> None:
    pod = emulators(namespace, NAME)
    pod.set_state(running=60, waiting=0, kv_usage=0.5)
    pod.set_load(Load(rps=200, prompt_tokens=800, generation_tokens=200, ttft_s=0.4))
    op = start_operator(
        namespace,
        "--prometheus-url",
        prometheus.url,
        "--metrics-gauge-window",
        "5s",
        "--metrics-rate-window",
        "10s",
    )
    doc = _manifest()
    doc["spec"]["scaling"]["policy"] = {"scaleDownStabilizationSeconds": 6}
    planned = _mix(_plan())
    objects.create(doc)
    # 200 RPS against a plan for 120: the H100s are at their bound (4), the L40S take the rest,
    # more than the plan's (4 + 7 since the H100 decode factor: "> 6" alone was met by the first
    # apply, before any status was written)
    wait_for(
        lambda: (
            op.alive()
            and _replicas(objects, "h100-sxm-80gb") == 4
            and (_replicas(objects, "l40s-48gb") or 0) > planned["l40s-48gb"]
            and ((objects.get(NAME).get("status") or {}).get("decision") or {}).get("source")
            == "metrics"
        ),
        90,
        "more L40S than planned, the H100s at their bound",
    )
    decision = objects.get(NAME)["status"]["decision"]
    assert decision["source"] == "metrics"
    assert "the mix:" in decision["reason"]
    peak = _replicas(objects, "l40s-48gb") or 0
    # the load falls to 40 RPS: the dearest capacity per RPS (L40S) goes first
    pod.set_load(Load(rps=40, prompt_tokens=800, generation_tokens=200, ttft_s=0.4))
    pod.set_state(running=10, waiting=0, kv_usage=0.1)
    wait_for(
        lambda: op.alive() and (_replicas(objects, "l40s-48gb") or 0) < peak,
        120,
        "fewer L40S",
    )
    assert _replicas(objects, "h100-sxm-80gb") == 4
