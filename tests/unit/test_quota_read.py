"""Reading GPU quotas and what this service's pods hold; the variants' status summed."""

from typing import Any

from tokenscale.controller.quota import gpu_quotas, held_gpus
from tokenscale.controller.variants import observe_variants, remove_single_workload


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
