"""Pure parts of the operator: drift detection and conditions."""

import pytest

from tokenscale.controller.settings import Settings
from tokenscale.controller.status import condition, observe_deployment
from tokenscale.kube.drift import differences


def test_fields_the_server_adds_are_not_drift() -> None:
    desired = {
        "spec": {
            "replicas": 3,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "vllm",
                            "args": ["--a", "1"],
                            "resources": {"requests": {"memory": "16Gi"}},
                        }
                    ]
                }
            },
        }
    }
    live = {
        "metadata": {"resourceVersion": "9"},
        "spec": {
            "replicas": 3,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "vllm",
                            "args": ["--a", "1"],
                            "terminationMessagePath": "/x",
                            "resources": {"requests": {"memory": "17179869184"}},
                        }
                    ],
                    "dnsPolicy": "ClusterFirst",
                }
            },
        },
        "status": {"readyReplicas": 1},
    }
    assert differences(desired, live) == []


@pytest.mark.parametrize(
    ("live_patch", "path"),
    [
        ({"replicas": 5}, ".spec.replicas"),
        ({"args": ["--a", "2"]}, ".spec.template.spec.containers[name=vllm].args[1]"),
        ({"args": ["--a", "1", "--b"]}, ".spec.template.spec.containers[name=vllm].args"),
        (
            {"gpu": "1"},
            ".spec.template.spec.containers[name=vllm].resources.limits.nvidia.com/gpu",
        ),
    ],
)
def test_manual_edits_are_drift(live_patch: dict[str, object], path: str) -> None:
    def dep(replicas: int = 3, args: list[str] | None = None, gpu: str = "4") -> dict[str, object]:
        return {
            "spec": {
                "replicas": replicas,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "vllm",
                                "args": args or ["--a", "1"],
                                "resources": {"limits": {"nvidia.com/gpu": gpu}},
                            }
                        ]
                    }
                },
            }
        }

    assert differences(dep(), dep(**live_patch)) == [path]  # type: ignore[arg-type]


def test_condition_time_moves_only_on_status_change() -> None:
    first = condition([], "Ready", "False", "X", "m", "2026-01-01T00:00:00Z", 1)
    same = condition([first], "Ready", "False", "Y", "other", "2026-01-02T00:00Z", 2)
    flipped = condition([same], "Ready", "True", "Z", "ok", "2026-01-03T00:00:00Z", 2)
    assert same.last_transition_time == "2026-01-01T00:00:00Z"
    assert flipped.last_transition_time == "2026-01-03T00:00:00Z"


def test_observe_deployment() -> None:
    assert observe_deployment(None) is None
    seen = observe_deployment(
        {
            "spec": {"replicas": 3},
            "status": {
                "readyReplicas": 2,
                "availableReplicas": 2,
                "conditions": [{"type": "Available", "status": "False", "message": "min"}],
            },
        }
    )
    assert seen is not None
    assert (seen.replicas, seen.ready_replicas, seen.available) == (3, 2, False)


def test_settings_scope() -> None:
    assert Settings().clusterwide
    assert not Settings(namespaces=("a",)).clusterwide
    with pytest.raises(ValueError, match="not both"):
        Settings(namespaces=("a",), all_namespaces=True)
