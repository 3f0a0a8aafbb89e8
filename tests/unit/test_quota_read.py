"""Reading GPU quotas and what this service's pods hold; the variants' status summed."""

from typing import Any

from tests.helpers import ROOT
from tokenscale.api.manifest import parse_manifests
from tokenscale.controller.quota import gpu_quotas, held_gpus, quota_bound
from tokenscale.controller.variants import (
    observe_variants,
    remove_old_variants,
    remove_single_workload,
)
from tokenscale.planning import plan_service


def test_quotas_keep_the_extended_resource_request_figures() -> None:
    items = [
        {
            "metadata": {"name": "a"},
            "status": {
                "hard": {"requests.nvidia.com/gpu": "8", "limits.cpu": "10", "pods": "20"},
                "used": {"requests.nvidia.com/gpu": "3"},
            },
        },
        {"metadata": {"name": "b"}, "spec": {"hard": {"requests.amd.com/gpu": "2k"}}},
        {"metadata": {"name": "cpu"}, "status": {"hard": {"requests.cpu": "4"}}},
    ]
    q = gpu_quotas(items)
    assert [(x.name, dict(x.hard), dict(x.used)) for x in q] == [
        ("a", {"requests.nvidia.com/gpu": 8}, {"requests.nvidia.com/gpu": 3}),
        ("b", {"requests.amd.com/gpu": 2000}, {}),
    ]


def _pod(phase: str, gpus: str) -> dict[str, Any]:
    return {
        "status": {"phase": phase},
        "spec": {"containers": [{"resources": {"requests": {"nvidia.com/gpu": gpus, "cpu": "4"}}}]},
    }


def test_held_gpus_count_non_terminal_pods_only() -> None:
    pods = [_pod("Running", "2"), _pod("Pending", "1"), _pod("Succeeded", "4")]
    assert held_gpus(pods) == {"nvidia.com/gpu": 3}


def _deployment(replicas: int, ready: int, available: bool) -> dict[str, Any]:
    return {
        "spec": {"replicas": replicas},
        "status": {
            "readyReplicas": ready,
            "availableReplicas": ready,
            "conditions": [
                {"type": "Available", "status": str(available), "message": f"{ready} ready"}
            ],
        },
    }


def test_the_variants_status_is_summed_and_available_only_when_all_are() -> None:
    both = observe_variants([_deployment(4, 4, True), _deployment(6, 5, True)])
    assert both is not None
    assert (both.replicas, both.ready_replicas, both.available) == (10, 9, True)
    one_down = observe_variants([_deployment(4, 4, True), _deployment(6, 0, False)])
    assert one_down is not None
    assert not one_down.available
    assert one_down.available_message == "0 ready"
    missing = observe_variants([_deployment(4, 4, True), None])
    assert missing is not None
    assert not missing.available
    assert observe_variants([None, None]) is None


class _Deployments:
    def __init__(self, live: dict[str, Any] | None) -> None:
        self.live = live
        self.deleted: list[str] = []

    def read_deployment(self, ns: str, name: str) -> dict[str, Any] | None:
        return self.live

    def delete_deployment(self, ns: str, name: str) -> None:
        self.deleted.append(name)


def test_the_one_gpu_deployment_is_removed_only_when_the_service_owns_it() -> None:
    ours = {
        "metadata": {
            "ownerReferences": [
                {"apiVersion": "tokenscale.io/v1alpha1", "kind": "InferenceService", "name": "s"}
            ]
        }
    }
    kube = _Deployments(ours)
    assert remove_single_workload(kube, "ns", "s")
    assert kube.deleted == ["s"]
    foreign = _Deployments({"metadata": {"ownerReferences": []}})
    assert not remove_single_workload(foreign, "ns", "s")
    assert not remove_single_workload(_Deployments(None), "ns", "s")


class _Namespace:
    """The API's answers in the order they are asked, with pods created between reads."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.pods: list[dict[str, Any]] = []
        self.used = 0

    def _created_after_the_first_read(self) -> None:
        if len(self.calls) == 1:  # the ReplicaSet creates 3 more (admission counts them)
            self.pods += [_pod("Pending", "1")] * 3
            self.used += 3

    def list_resource_quotas(self, namespace: str) -> list[dict[str, Any]]:
        self.calls.append("quotas")
        self._created_after_the_first_read()
        hard = {"requests.nvidia.com/gpu": "7"}
        return [
            {
                "metadata": {"name": "q"},
                "status": {"hard": hard, "used": {"requests.nvidia.com/gpu": str(self.used)}},
            }
        ]

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        self.calls.append("pods")
        self._created_after_the_first_read()
        return list(self.pods)


def test_the_quota_figures_are_read_after_the_pods() -> None:
    text = (ROOT / "deploy/examples/variants/llama-3.1-8b-h100-l40s.yaml").read_text()
    spec = parse_manifests(text)[0].spec
    plan = plan_service(spec, "mixed")
    kube = _Namespace()
    kube.pods = [_pod("Pending", "1")] * 4
    kube.used = 4 + 2  # the service's 4 GPUs and 2 of another workload: 5 are its room
    bound = quota_bound(kube, "ns", "mixed", spec, plan, plan.sized.total)
    # read quota-then-pods, the 3 pods created between counted as room again: 7 - 6 + 7 = 8;
    # pods-then-quota sees them in both: 7 - (9 - 7) = 5
    assert kube.calls == ["quotas", "pods", "quotas"]
    assert bound.counts is not None
    assert sum(bound.counts.values()) == 5


def _variant_deployment(variant: str, uid: str, controller: bool = True) -> dict[str, Any]:
    ref = {"apiVersion": "tokenscale.io/v1alpha1", "kind": "InferenceService", "name": "s"}
    return {
        "metadata": {
            "labels": {"tokenscale.io/variant": variant},
            "ownerReferences": [{**ref, "uid": uid, "controller": controller}],
        }
    }


class _Named:
    def __init__(self, live: dict[str, dict[str, Any]]) -> None:
        self.live = live
        self.deleted: list[str] = []

    def read_deployment(self, ns: str, name: str) -> dict[str, Any] | None:
        return self.live.get(name)

    def delete_deployment(self, ns: str, name: str) -> None:
        self.deleted.append(name)


def test_the_variants_the_spec_dropped_are_deleted_when_ours() -> None:
    kube = _Named(
        {
            "s-h100": _variant_deployment("h100", "u1"),
            "s-l40s": _variant_deployment("l40s", "u1"),
            "s-a100": _variant_deployment("a100", "someone-else"),  # same name, other owner
            "s-t4": _variant_deployment("t4", "u1", controller=False),  # not its controller
            "s-a10": _variant_deployment("l40s", "u1"),  # not that variant's label
        }
    )
    gone = remove_old_variants(
        kube, "ns", "s", "u1", ["h100", "l40s", "a100", "t4", "a10", "gone"], {"l40s"}
    )
    assert gone == kube.deleted == ["s-h100"]
    back_to_one = _Named({"s-h100": _variant_deployment("h100", "u1")})
    assert remove_old_variants(back_to_one, "ns", "s", "u1", ["h100"], set()) == ["s-h100"]
